import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from corpora.chunking import HEADING_SLACK_CHARS, HEADING_SLACK_WORDS, chunk_text
from corpora.constants import PASSAGE_MAX_CHARS, PASSAGE_MAX_WORDS, PASSAGE_MIN_WORDS
from corpora.extraction import HeadingSpan, PageSpan, normalize_text

WORDS = st.text(alphabet=string.ascii_letters + "éßπ漢字😀", min_size=1, max_size=12)
SEPARATORS = st.sampled_from(
    [" ", " ", " ", "\n", "\r\n", "\n\n", "\r\n\r\n", "\t", ". ", "! ", "\u00a0", "  \n  \n", "\r"]
)


@st.composite
def documents(draw):
    """Prose-like text, plus the adversarial cases: raw unicode, CRLF, no paragraph breaks,
    huge lines and words longer than a passage."""
    kind = draw(st.sampled_from(["prose", "raw", "one-line", "huge-word"]))
    if kind == "raw":
        return draw(st.text(max_size=3000))
    if kind == "huge-word":
        return draw(st.text(alphabet="ab漢", min_size=1, max_size=5000))
    parts = draw(st.lists(st.tuples(WORDS, SEPARATORS), max_size=600))
    text = "".join(w + s for w, s in parts)
    if kind == "one-line":
        text = text.replace("\n", " ").replace("\r", " ")
    return text


def assert_passage_invariants(text, spans, *, pages=None):
    previous_end = 0
    for span in spans:
        passage = text[span.start : span.end]
        assert passage, span
        assert passage == passage.strip(), "passages are trimmed"
        assert span.start >= previous_end, "passages are ordered and disjoint"
        previous_end = span.end
        assert span.word_count == len(passage.split())
        limit_words = PASSAGE_MAX_WORDS + HEADING_SLACK_WORDS
        limit_chars = PASSAGE_MAX_CHARS + HEADING_SLACK_CHARS
        assert span.word_count <= limit_words, span
        assert span.end - span.start <= limit_chars, span
        if pages:
            page = next(p for p in pages if p.start <= span.start < p.end)
            assert span.page == page.number
            assert span.end <= page.end, "a passage never crosses a page"
    # Nothing readable is lost: every non-space character lies in some passage.
    covered = bytearray(len(text))
    for span in spans:
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters outside every passage at {missing[:5]}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
@example("")
@example("\r\n\r\n\r\n")
@example("word " * 5000)
@example("x" * 20_000)
@example("Title\r\n\r\nBody line one.\rBody line two.\r\n" * 50)
def test_every_passage_is_an_exact_slice_within_limits(text):
    spans = chunk_text(text)

    assert_passage_invariants(text, spans)


@settings(max_examples=100, deadline=None)
@given(st.lists(documents(), min_size=1, max_size=4))
def test_pages_are_hard_boundaries(page_texts):
    texts = [normalize_text(t).strip() or "blank" for t in page_texts]
    pages, offset = [], 0
    for number, page_text in enumerate(texts, start=1):
        if pages:
            offset += 2
        pages.append(PageSpan(start=offset, end=offset + len(page_text), number=number))
        offset += len(page_text)
    text = "\n\n".join(texts)

    spans = chunk_text(text, pages=pages)

    assert_passage_invariants(text, spans, pages=pages)


def test_paragraphs_pack_into_passages_of_about_forty_to_a_hundred_fifty_words():
    paragraph = " ".join(f"Clause word{i} applies here." for i in range(12))  # 48 words
    text = "\n\n".join([paragraph] * 20)

    spans = chunk_text(text)

    counts = [s.word_count for s in spans]
    assert all(PASSAGE_MIN_WORDS <= c <= PASSAGE_MAX_WORDS for c in counts), counts
    assert sum(counts) == 48 * 20


def test_long_paragraph_splits_at_sentence_ends_not_mid_sentence():
    sentences = [f"Sentence number {i} has exactly eight words here." for i in range(60)]
    text = " ".join(sentences)

    spans = chunk_text(text)

    assert len(spans) > 1
    for span in spans:
        assert text[span.start : span.end].endswith("here.")


def test_markdown_headings_give_the_heading_path_and_travel_with_their_body():
    text = (
        "# Master Agreement\n\n## Payment\n\nInvoices are payable within thirty days.\n\n## Term\n\nOne year."
    )
    headings = [
        HeadingSpan(start=0, end=18, level=1),
        HeadingSpan(start=20, end=30, level=2),
        HeadingSpan(start=text.index("## Term"), end=text.index("## Term") + 7, level=2),
    ]

    spans = chunk_text(text, headings=headings, min_words=3)

    first = spans[0]
    assert text[first.start : first.end].startswith("# Master Agreement\n\n## Payment")
    assert first.heading_path == ("Master Agreement", "Payment")
    assert not first.is_heading
    assert spans[-1].heading_path == ("Master Agreement", "Term")


def test_heading_with_no_body_is_flagged_heading_only():
    text = "Body of page one that is long enough to be a passage by itself.\n\nARTICLE 7 INDEMNIFICATION"
    pages = [
        PageSpan(start=0, end=text.index("\n\n"), number=1),
        PageSpan(start=text.index("ARTICLE"), end=len(text), number=2),
    ]

    spans = chunk_text(text, pages=pages)

    assert [s.is_heading for s in spans] == [False, True]
    assert text[spans[1].start : spans[1].end] == "ARTICLE 7 INDEMNIFICATION"
    assert spans[1].page == 2


def test_numbered_and_capitalised_lines_are_detected_as_nested_headings():
    body = "The supplier shall deliver the goods on time and in full to the buyer. " * 8
    text = f"ARTICLE 5 DELIVERY\n\n5.1 Timing\n\n{body}\n\nARTICLE 6 PAYMENT\n\n{body}"

    spans = chunk_text(text)

    assert spans[0].heading_path == ("ARTICLE 5 DELIVERY", "5.1 Timing")
    assert spans[-1].heading_path == ("ARTICLE 6 PAYMENT",)
