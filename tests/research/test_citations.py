import html
import re
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from research.citations import CitablePassage, RenderedReport, citations_render, markdown_inline
from research.constants import (
    WARNING_CITE_MALFORMED,
    WARNING_FOOTNOTE_REMOVED,
    WARNING_HEADING_FLAGGED,
    WARNING_HEADING_REPLACED,
    WARNING_LINK_REMOVED,
    WARNING_QUOTE_NOT_VERBATIM,
    WARNING_SOURCES_REMOVED,
    WARNING_UNCITED_CLAIM,
    WARNING_UNKNOWN_ID,
    WARNING_UNRETRIEVED_ID,
)
from research.pages import markdown_html

LIABILITY = "The supplier shall not be liable for any indirect damages. This limit survives termination."
TERMINATION = "Either party may terminate this agreement on thirty days\u2019 written notice."
NOTICE = "Notice must be given in writing to the registered address."
MARKUP = 'Use <cite ids="12"> and [^1] only as "markup" [sic].'
GUIDE_URL = "https://example.org/notice"


def _document(
    *, document_id: int, title: str, source_name: str, page: int | None, first_id: int, parts
) -> tuple[str, list[CitablePassage]]:
    """A document's text and its passages, each with its real offset into that text."""
    text = ""
    passages = []
    for ordinal, (part, is_heading) in enumerate(parts):
        if text:
            text += "\n\n"
        passages.append(
            CitablePassage(
                passage_id=first_id + ordinal,
                document_id=document_id,
                document_title=title,
                source_name=source_name,
                ordinal=ordinal,
                page=page,
                start=len(text),
                text=part,
                is_heading=is_heading,
            )
        )
        text += part
    return text, passages


_MSA_TEXT, _MSA = _document(
    document_id=100,
    title="Master Services Agreement",
    source_name="msa.pdf",
    page=3,
    first_id=11,
    parts=[("7. Limitation of Liability", True), (LIABILITY, False), (TERMINATION, False)],
)
_GUIDE_TEXT, _GUIDE = _document(
    document_id=200,
    title="Notice guide",
    source_name=GUIDE_URL,
    page=None,
    first_id=21,
    parts=[("Giving notice", True), (NOTICE, False)],
)
_ANNEX_TEXT, _ANNEX = _document(
    document_id=300,
    title="Annex <b>[draft]</b>",
    source_name="annex [v2].pdf",
    page=1,
    first_id=31,
    parts=[("Schedule A", True), (MARKUP, False)],
)
PASSAGES = {p.passage_id: p for p in [*_MSA, *_GUIDE, *_ANNEX]}
DOCUMENTS = {100: _MSA_TEXT, 200: _GUIDE_TEXT, 300: _ANNEX_TEXT}
ALL_IDS = frozenset(PASSAGES)


def _render(draft: str, *, retrieved=ALL_IDS, findings=()) -> RenderedReport:
    return citations_render(draft=draft, passages=PASSAGES, retrieved_ids=retrieved, findings=findings)


def _body(report: RenderedReport) -> str:
    return report.content.rpartition("## Sources\n\n")[0].strip()


def _footnotes(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[\^(\d+)\]", text)]


# --- Footnotes and the Sources block --------------------------------------------------------
def test_cite_becomes_a_footnote_with_a_sources_entry_and_a_citation_row():
    # given a claim citing a retrieved passage with a verbatim quote
    draft = (
        "Liability is capped. "
        '<cite ids="12" quote="not be liable for any indirect damages">'
        "The supplier is not liable for indirect loss.</cite>"
    )

    # when
    report = _render(draft)

    # then
    assert report.content == (
        "Liability is capped. The supplier is not liable for indirect loss.[^1]\n\n"
        "## Sources\n\n"
        "[^1]: *Master Services Agreement* (msa.pdf), p. 3, passage 2 (id 12): "
        '"not be liable for any indirect damages"\n'
    )
    start = PASSAGES[12].start + 19
    assert report.citations == [
        {
            "footnote": 1,
            "passage_id": 12,
            "document_id": 100,
            "document_title": "Master Services Agreement",
            "source_name": "msa.pdf",
            "page": 3,
            "passage_number": 2,
            "quote": "not be liable for any indirect damages",
            "start": start,
            "end": start + 38,
        }
    ]
    assert report.warnings == []
    assert report.passage_ids == [12]
    assert report.document_ids == [100]


def test_entry_without_a_page_or_quote_names_document_and_passage_only():
    # when
    report = _render('<cite ids="22">Notice is written.</cite>')

    # then the whole passage is the cited span
    assert report.content == (
        "Notice is written.[^1]\n\n## Sources\n\n"
        "[^1]: *Notice guide* (https://example.org/notice), passage 2 (id 22)\n"
    )
    assert report.citations[0]["quote"] == ""
    assert (report.citations[0]["start"], report.citations[0]["end"]) == (
        PASSAGES[22].start,
        PASSAGES[22].start + len(NOTICE),
    )


def test_footnotes_are_numbered_by_first_appearance():
    # given passages cited in the order 13, 22, 12, 13
    draft = (
        '<cite ids="13">A.</cite> <cite ids="22">B.</cite> <cite ids="12">C.</cite> <cite ids="13">D.</cite>'
    )

    # when
    report = _render(draft)

    # then
    assert _body(report) == "A.[^1] B.[^2] C.[^3] D.[^1]"
    assert [(c["footnote"], c["passage_id"]) for c in report.citations] == [(1, 13), (2, 22), (3, 12)]
    assert report.passage_ids == [13, 22, 12]
    assert report.document_ids == [100, 200]
    assert re.findall(r"^\[\^(\d+)\]: .*passage \d+ \(id (\d+)\)", report.content, re.MULTILINE) == [
        ("1", "13"),
        ("2", "22"),
        ("3", "12"),
    ]


def test_same_passage_and_quote_is_one_footnote():
    # given two claims quoting the same words of one passage, once with typographic whitespace
    draft = (
        '<cite ids="12" quote="survives termination">A.</cite> '
        '<cite ids="12" quote="survives\n  termination">B.</cite>'
    )

    # when
    report = _render(draft)

    # then
    assert _body(report) == "A.[^1] B.[^1]"
    assert [c["quote"] for c in report.citations] == ["survives termination"]
    assert report.content.count("[^1]:") == 1


def test_two_quotes_from_one_passage_are_two_footnotes():
    # when
    report = _render(
        '<cite ids="12" quote="not be liable">A.</cite> <cite ids="12" quote="survives termination">B.</cite>'
    )

    # then
    assert _body(report) == "A.[^1] B.[^2]"
    assert [(c["footnote"], c["passage_id"], c["quote"]) for c in report.citations] == [
        (1, 12, "not be liable"),
        (2, 12, "survives termination"),
    ]
    assert report.passage_ids == [12]


def test_one_claim_citing_several_passages_gets_one_marker_each():
    # given ids separated by commas, semicolons and spaces, one repeated
    report = _render('<cite ids="12, 22;13 12">Claim.</cite>')

    # then
    assert _body(report) == "Claim.[^1][^2][^3]"
    assert [c["passage_id"] for c in report.citations] == [12, 22, 13]


def test_uppercase_cite_tag_and_single_quoted_attributes_are_rendered():
    # when
    report = _render("<CITE IDS='12' QUOTE='survives termination'>Claim.</CITE >")

    # then
    assert _body(report) == "Claim.[^1]"
    assert report.citations[0]["quote"] == "survives termination"
    assert report.warnings == []


def test_quote_from_the_findings_is_used_when_the_cite_has_none():
    # given a finding recorded for passage 13 and another for a passage not cited
    findings = [
        {"passage_id": 22, "quote": "registered address"},
        {"passage_id": 13, "quote": "thirty days' written notice"},
    ]

    # when
    report = _render('<cite ids="13">Thirty days.</cite>', findings=findings)

    # then the stored quote is the passage's own text, typographic apostrophe and all
    assert report.citations[0]["quote"] == "thirty days\u2019 written notice"
    assert report.warnings == []


def test_empty_draft_has_an_empty_sources_block():
    report = _render("")
    assert report.content == "## Sources\n\nNo passages were cited.\n"
    assert (report.citations, report.warnings, report.passage_ids, report.document_ids) == ([], [], [], [])


def test_citation_offsets_are_offsets_into_the_document():
    # given quotes from passages deep in their documents, and one cite without a quote
    draft = (
        '<cite ids="13" quote="terminate this agreement">A.</cite> '
        '<cite ids="22" quote="registered address">B.</cite> '
        '<cite ids="32" quote="only as &quot;markup&quot;">C.</cite> '
        '<cite ids="12">D.</cite>'
    )

    # when
    report = _render(draft)

    # then every row's span in its document is its quote (or its whole passage)
    assert [c["quote"] for c in report.citations] == [
        "terminate this agreement",
        "registered address",
        'only as "markup"',
        "",
    ]
    for citation in report.citations:
        document = DOCUMENTS[citation["document_id"]]
        expected = citation["quote"] or PASSAGES[citation["passage_id"]].text
        assert document[citation["start"] : citation["end"]] == expected
    assert report.citations[0]["start"] == _MSA_TEXT.index("terminate this agreement")


def test_sources_block_escapes_markup_in_corpus_text():
    # given a passage whose title, source and quote contain tags, brackets and footnote syntax
    # (the quote attribute is HTML-unescaped; a literal "[^1]" in a draft is an agent footnote)
    quote = "Use &lt;cite ids=&quot;12&quot;&gt; and &#91;^1&#93;"
    report = _render(f'<cite ids="32" quote="{quote}">Claim.</cite>')

    # then
    assert report.citations[0]["quote"] == 'Use <cite ids="12"> and [^1]'
    assert report.content == (
        "Claim.[^1]\n\n## Sources\n\n"
        "[^1]: *Annex &lt;b>\\[draft\\]&lt;/b>* (annex \\[v2\\].pdf), p. 1, passage 2 (id 32): "
        '"Use &lt;cite ids="12"> and \\[^1\\]"\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        "Fees of $[***] for each occurrence",
        "Organic Preparations INC. & Agape",
        r"C:\\contracts [v2] < 3",
        # a code span would show the other escapes as typed ("&lt;id>")
        "Upload with `POST /api/corpora/<id>/documents` and `[x]`",
    ],
)
def test_inline_corpus_text_reads_and_renders_as_written(text):
    # given a contract's redaction brackets, an ampersand, a backslash, a "<" that opens no tag
    line = markdown_inline(text)

    # then the Markdown line holds no entity to read around, and renders as the text again
    assert "&#" not in line and "&amp;" not in line
    assert html.unescape(re.sub(r"</?p>", "", markdown_html(line))) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a code span shows its "<" as "<", not as the "&lt;" it was escaped to
        (
            "Upload with `POST /api/corpora/<id>/documents`.",
            "<code>POST /api/corpora/&lt;id&gt;/documents</code>",
        ),
        # markup outside one is still text, never a tag
        ("A <b>bold</b> <script>alert(1)</script> claim", "A &lt;b&gt;bold&lt;/b&gt; &lt;script&gt;alert(1)"),
        # a private-use character in the text does not become "<"
        ("odd \ue000b> text", "odd b&gt; text"),
    ],
)
def test_report_markdown_shows_markup_as_text_in_and_out_of_code_spans(text, shown):
    assert shown in markdown_html(text)


# --- Guards: ids ----------------------------------------------------------------------------
def test_unretrieved_id_is_dropped_with_a_warning():
    # when passage 13 exists but this run never retrieved it
    report = _render('<cite ids="13">Thirty days.</cite>', retrieved={12})

    # then
    assert report.content == "Thirty days.\n\n## Sources\n\nNo passages were cited.\n"
    assert report.citations == []
    assert report.warnings == [f"{WARNING_UNRETRIEVED_ID}:13", f"{WARNING_UNCITED_CLAIM}:Thirty days."]


def test_unknown_or_deleted_id_is_dropped_with_a_warning():
    # when passage 999 is not among the passages (deleted, or another corpus) but was retrieved
    report = _render('<cite ids="999 12">Capped.</cite>', retrieved={12, 999})

    # then only the known passage is cited
    assert _body(report) == "Capped.[^1]"
    assert [c["passage_id"] for c in report.citations] == [12]
    assert report.warnings == [f"{WARNING_UNKNOWN_ID}:999"]


@pytest.mark.parametrize("token", ["abc", "12.5", "-12", "\u00b2", "9" * 5000])
def test_id_that_is_not_a_number_is_dropped_as_malformed(token):
    # when (a superscript digit and a 5,000-digit number used to raise ValueError)
    report = _render(f'<cite ids="{token}">Claim.</cite>')

    # then
    assert report.content == "Claim.\n\n## Sources\n\nNo passages were cited.\n"
    assert report.warnings[0].startswith(f"{WARNING_CITE_MALFORMED}:")
    assert report.warnings[1:] == [f"{WARNING_UNCITED_CLAIM}:Claim."]


def test_cite_without_ids_leaves_the_claim_with_a_warning():
    report = _render("<cite>An unsupported claim.</cite>")
    assert report.content == "An unsupported claim.\n\n## Sources\n\nNo passages were cited.\n"
    assert report.warnings == [f"{WARNING_UNCITED_CLAIM}:An unsupported claim."]


# --- Guards: quotes -------------------------------------------------------------------------
def test_quote_that_is_not_verbatim_is_dropped_with_a_warning():
    # when the quote paraphrases the passage
    report = _render('<cite ids="12" quote="the supplier is never liable">Capped.</cite>')

    # then the passage is still cited, without a quote
    assert _body(report) == "Capped.[^1]"
    assert report.citations[0]["quote"] == ""
    assert "passage 2 (id 12)\n" in report.content
    assert report.warnings == [f"{WARNING_QUOTE_NOT_VERBATIM}:12"]


def test_quote_that_is_not_verbatim_falls_back_to_the_finding_quote():
    # when
    report = _render(
        '<cite ids="12" quote="never liable">Capped.</cite>',
        findings=[{"passage_id": 12, "quote": "survives termination"}],
    )

    # then
    assert report.citations[0]["quote"] == "survives termination"
    assert report.warnings == [f"{WARNING_QUOTE_NOT_VERBATIM}:12"]


def test_finding_quote_that_is_not_in_the_passage_is_ignored():
    report = _render(
        '<cite ids="12">Capped.</cite>', findings=[{"passage_id": 12, "quote": "not in the text"}]
    )
    assert report.citations[0]["quote"] == ""
    assert report.warnings == []


# --- Guards: headings -----------------------------------------------------------------------
def test_heading_anchor_is_replaced_by_the_next_retrieved_body_passage():
    # given heading 11 is followed by body passages 12 and 13, of which only 13 was retrieved
    report = _render('<cite ids="11">Capped.</cite>', retrieved={11, 13, 22})

    # then
    assert _body(report) == "Capped.[^1]"
    assert [c["passage_id"] for c in report.citations] == [13]
    assert report.warnings == [f"{WARNING_HEADING_REPLACED}:11->13"]


def test_heading_anchor_prefers_the_nearest_retrieved_body_passage():
    report = _render('<cite ids="11">Capped.</cite>', retrieved={11, 12, 13})
    assert [c["passage_id"] for c in report.citations] == [12]
    assert report.warnings == [f"{WARNING_HEADING_REPLACED}:11->12"]


def test_heading_anchor_without_a_retrieved_body_passage_is_flagged():
    # given heading 31's body passage 32 was not retrieved; 12 is retrieved but in another document
    report = _render('<cite ids="31">Schedule.</cite>', retrieved={31, 12})

    # then the heading is cited and flagged
    assert _body(report) == "Schedule.[^1]"
    assert [c["passage_id"] for c in report.citations] == [31]
    assert report.warnings == [f"{WARNING_HEADING_FLAGGED}:31"]


# --- Guards: agent Sources sections and footnotes -------------------------------------------
@pytest.mark.parametrize(
    "section",
    [
        "## Sources\n\n- msa.pdf\n- [1] guide",
        "## References\n1. Smith (2020)",
        "**Sources:**\n- msa.pdf",
        "### 4. Bibliography\nSmith",
        "Sources:\n- msa.pdf",
    ],
)
def test_agent_sources_section_is_removed_up_to_the_next_heading(section):
    # given
    draft = f'# Report\n\nCapped.\n\n{section}\n\n## Next\n\nKept <cite ids="12">claim</cite>.'

    # when
    report = _render(draft)

    # then
    assert _body(report) == "# Report\n\nCapped.\n\n## Next\n\nKept claim[^1]."
    assert report.warnings == [f"{WARNING_SOURCES_REMOVED}:1"]


def test_agent_sources_section_runs_to_the_end_and_its_cites_are_not_numbered():
    # when
    report = _render(
        'Intro <cite ids="13">A</cite>.\n\n## Sources\n\n<cite ids="12">B</cite>\n### Sub\nstill sources'
    )

    # then
    assert _body(report) == "Intro A[^1]."
    assert [c["passage_id"] for c in report.citations] == [13]
    assert report.warnings == [f"{WARNING_SOURCES_REMOVED}:1"]


def test_section_whose_title_only_starts_like_sources_is_kept():
    report = _render("## Sourcing strategy\n\nBuy locally.")
    assert _body(report) == "## Sourcing strategy\n\nBuy locally."
    assert report.warnings == []


def test_agent_footnote_markers_and_definitions_are_removed():
    # given
    draft = 'Capped[^a] and <cite ids="12">noted</cite>[^1].\n\n[^a]: The MSA.\n[^1]: https://x.example'

    # when
    report = _render(draft)

    # then only the renderer's own footnote remains
    assert _body(report) == "Capped and noted[^1]."
    assert [c["passage_id"] for c in report.citations] == [12]
    assert report.warnings == [f"{WARNING_FOOTNOTE_REMOVED}:4"]


@pytest.mark.parametrize(
    "draft",
    [
        "x [<cite>^9] y",  # removing a stray tag joins "[" and "^9]"
        "x [![](https://e.example/p)^9] y",  # removing an image does
        "x [[^1]^9] y",  # removing one marker does
        "x [<cite>^1] y",  # and a forged marker may not point at a real footnote either
    ],
)
def test_removing_markup_never_forges_a_footnote_marker(draft):
    # when
    report = _render(f'<cite ids="12">Real</cite> {draft}')

    # then
    assert _body(report) == "Real[^1] x  y"
    assert _footnotes(report.content) == [1, 1]


def test_footnote_marker_is_never_a_link_text_or_a_definition():
    # given markers followed by "(" and, at a line start, by ":"
    draft = '<cite ids="12">Capped</cite>(javascript:alert(1))\n<cite ids="13"></cite>: text'

    # when
    report = _render(draft)

    # then a space keeps "[^1](" from being a link and "[^2]:" from defining a footnote
    assert _body(report) == "Capped[^1] (javascript:alert(1))\n[^2] : text"


def test_footnote_marker_before_a_colon_inside_a_line_is_left_alone():
    report = _render('<cite ids="12">Liability is capped</cite>: the supplier pays nothing.')
    assert _body(report) == "Liability is capped[^1]: the supplier pays nothing."


def test_raw_html_in_a_draft_is_text_in_the_report_and_code_is_left_as_typed():
    # given a model's draft holding tags, a comment and HTML in code
    draft = (
        '<img src=x onerror=alert(1)> <cite ids="12">Liability is capped</cite>.\n\n'
        "<details><summary>More</summary><script>alert(2)</script></details> <!-- note -->\n\n"
        "Send `POST <id>` as:\n\n```\n<form action=/x>\n```\n\n3 < 4 and a<b."
    )

    # when
    report = _render(draft)

    # then no tag of the model's is markup in the report's Markdown (an export or an API client
    # may render it unsanitized), and code and plain comparisons read as written
    assert _body(report) == (
        "&lt;img src=x onerror=alert(1)> Liability is capped[^1].\n\n"
        "&lt;details>&lt;summary>More&lt;/summary>&lt;script>alert(2)&lt;/script>&lt;/details> "
        "&lt;!-- note -->\n\n"
        "Send `POST <id>` as:\n\n```\n<form action=/x>\n```\n\n3 < 4 and a&lt;b."
    )


# --- Guards: links --------------------------------------------------------------------------
def test_link_to_a_retrieved_web_source_is_kept():
    # given passage 22's source is a web page this run retrieved
    draft = f"See [the guide]({GUIDE_URL}), <{GUIDE_URL}> and {GUIDE_URL} for details."

    # when
    report = _render(draft)

    # then
    assert _body(report) == draft
    assert report.warnings == []


def test_link_to_a_source_that_was_not_retrieved_is_removed():
    # when only passage 12 (a PDF) was retrieved
    report = _render(f"See [the guide]({GUIDE_URL}).", retrieved={12})

    # then the link text stays
    assert _body(report) == "See the guide."
    assert report.warnings == [f"{WARNING_LINK_REMOVED}:{GUIDE_URL}"]


@pytest.mark.parametrize(
    ("draft", "body", "url"),
    [
        ("See [this](https://evil.example/x).", "See this.", "https://evil.example/x"),
        ('See [this](https://evil.example/x "Title").', "See this.", "https://evil.example/x"),
        ("See [the MSA](msa.pdf).", "See the MSA.", "msa.pdf"),
        ("See [it](javascript:alert(1)).", "See it.", "javascript:alert(1)"),
        ("See <https://evil.example/x>.", "See .", "https://evil.example/x"),
        ("See <javascript:alert(1)>.", "See .", "javascript:alert(1)"),
        ("See https://evil.example/x now.", "See  now.", "https://evil.example/x"),
        ("See HTTP://EVIL.EXAMPLE now.", "See  now.", "HTTP://EVIL.EXAMPLE"),
        (f"See {GUIDE_URL}/private now.", "See  now.", f"{GUIDE_URL}/private"),
        ("See [1].\n\n[1]: https://evil.example/x", "See [1].", "[1]: https://evil.example/x"),
    ],
)
def test_link_that_is_not_a_retrieved_source_is_removed(draft, body, url):
    # when
    report = _render(draft)

    # then
    assert _body(report) == body
    assert report.warnings == [f"{WARNING_LINK_REMOVED}:{url}"]


@pytest.mark.parametrize("url", [GUIDE_URL, "https://tracker.example/pixel.png"])
def test_images_are_always_removed(url):
    # when (an image is fetched by every reader's browser, even from a retrieved source)
    report = _render(f"Logo: ![the logo]({url}) end.")

    # then
    assert _body(report) == "Logo: the logo end."
    assert report.warnings == [f"{WARNING_LINK_REMOVED}:{url}"]


def test_html_anchor_is_removed_keeping_its_text():
    # when
    report = _render(f'See <a href="{GUIDE_URL}">the guide</A> and <a name=x>.')

    # then
    assert _body(report) == "See the guide and ."
    assert report.warnings == [f"{WARNING_LINK_REMOVED}:html_anchor"]


def test_link_rebuilt_by_removing_a_stray_tag_is_removed():
    # when removing "<cite>" would join "java" and "script:" inside a link
    report = _render("See [it](java<cite>script:alert(1)).")

    # then
    assert "javascript" not in report.content
    assert report.warnings == [f"{WARNING_CITE_MALFORMED}:1", f"{WARNING_LINK_REMOVED}:javascript:alert(1)"]


def test_footnote_inside_a_removed_link_is_not_numbered():
    # when a cite sits inside a link's URL that is removed
    report = _render('[a](https://evil.example/<cite ids="13">x</cite>) and <cite ids="12">kept</cite>')

    # then the lost footnote leaves no Sources entry and the kept one is [^1]
    assert _body(report) == "a and kept[^1]"
    assert [c["passage_id"] for c in report.citations] == [12]
    assert "\ue000" not in "".join(report.warnings)


# --- Guards: raw cite tags ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("draft", "body", "scrubbed"),
    [
        # nested: the outer tag closes at the first </cite>; the stray tags go
        ('<cite ids="12">outer <cite ids="13">inner</cite> tail</cite>', "outer inner[^1] tail", 2),
        ('Capped <cite ids="12">unclosed claim', "Capped unclosed claim", 1),
        ("Capped </cite> stray close", "Capped  stray close", 1),
        ("Mixed <CiTe ids=12 claim", "Mixed", 1),
        ("Ends with <cite", "Ends with", 1),
        ("Joined <ci<cite>te>", "Joined", 2),
        ("Suffix <citex>", "Suffix x>", 1),
        ("\u0130\u0130\u0130<cites", "\u0130\u0130\u0130s", 1),  # used to loop forever
    ],
)
def test_raw_cite_tags_never_reach_the_content(draft, body, scrubbed):
    # when
    report = _render(draft)

    # then
    assert "<cite" not in report.content.lower()
    assert _body(report) == body
    assert f"{WARNING_CITE_MALFORMED}:{scrubbed}" in report.warnings


# --- Property: a closed citation graph over arbitrary agent output ---------------------------
PROPERTY_RETRIEVED = frozenset({11, 12, 21, 32})  # 13, 22 and 31 exist but were not retrieved
_ID_TOKENS = ["11", "12", "13", "21", "22", "31", "32", "999", "0", "abc", "\u00b2", "1e3", ""]
_FRAGMENTS = [
    "\n",
    "\n\n",
    " ",
    "## Sources\n",
    "## References\n",
    "**Sources:**\n",
    "### Notes\n",
    "## Next\n",
    "# Title\n",
    "[^1]",
    "[^2]",
    "[^x]",
    "\n[^2]: a definition\n",
    "[",
    "]",
    "^",
    "^1",
    "(",
    ")",
    "<",
    ">",
    "!",
    "<cite>",
    "</cite>",
    "<CITE ids=12>",
    "</Cite >",
    "<ci",
    "te",
    "<Cite",
    "[guide](https://example.org/notice)",
    "[evil](https://evil.example/a)",
    "![img](https://example.org/notice)",
    "<https://evil.example>",
    "https://example.org/notice",
    "http://evil.example/p",
    '<a href="https://evil.example">',
    "</a>",
    "java",
    "script:",
    "\u0130",
    "\u201c",
    "...",
    "\ue000",
    "\ue0011\ue001",
]


@st.composite
def _quote_attribute(draw) -> str:
    passage = draw(st.sampled_from(list(PASSAGES.values())))
    start = draw(st.integers(min_value=0, max_value=len(passage.text)))
    end = draw(st.integers(min_value=start, max_value=len(passage.text)))
    verbatim = passage.text[start:end]
    quote = draw(
        st.sampled_from(
            [
                verbatim,
                f"\u201c{verbatim}\u201d",
                f"{verbatim}...",
                verbatim.upper(),
                verbatim[::-1],
                verbatim.replace(" ", "  \n"),
            ]
        )
        | st.text(max_size=12)
    )
    quote = quote.replace("&", "&amp;").replace('"', "&quot;") if draw(st.booleans()) else quote
    return f' quote="{quote}"'


def _cite(claims: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    ids = st.lists(st.sampled_from(_ID_TOKENS), max_size=4).flatmap(
        lambda tokens: st.sampled_from([",", ", ", " ", ";"]).map(lambda sep: sep.join(tokens))
    )
    return st.builds(
        lambda tag, ids, quote, claim, close: f'<{tag} ids="{ids}"{quote}>{claim}{close}',
        st.sampled_from(["cite", "CITE", "Cite"]),
        ids,
        _quote_attribute() | st.just(""),
        claims,
        st.sampled_from(["</cite>", "</CITE>", "</cite >", ""]),
    )


_DRAFTS = st.recursive(
    st.sampled_from(_FRAGMENTS) | st.text(max_size=10),
    lambda inner: _cite(inner) | st.lists(inner, max_size=6).map("".join),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(draft=st.lists(_DRAFTS, max_size=8).map("".join))
# found by CI: an uncited claim's "(" unwrapped after "[]" left a link's opening in the body
@example(draft='[]<cite ids="">(</cite>')
# found by a session's runs: the "]" that joined "(" was itself an uncited claim, unwrapped before
# it, or a stray tag between them was scrubbed
@example(draft='[<cite ids="">]</cite><cite ids="">(</cite>')
@example(draft='[<cite ids="">]<cite ids="">(</cite>')
@example(draft='<cite ids="">[a]</cite>(https://example.com/x')
def test_property_rendered_reports_keep_the_citation_graph_closed(draft):
    # when
    report = citations_render(draft=draft, passages=PASSAGES, retrieved_ids=PROPERTY_RETRIEVED)

    # then no raw cite tag, and no renderer-internal marker, reaches the content or warnings
    content = report.content
    assert "<cite" not in content.lower()
    assert not re.search("[\ue000\ue001]", content + "".join(report.warnings))
    body, heading, sources = content.rpartition("## Sources\n\n")
    assert heading

    # every footnote in the body has exactly one Sources entry and vice versa, numbered 1..N
    referenced = _footnotes(body)
    defined = [int(n) for n in re.findall(r"^\[\^(\d+)\]:", sources, re.MULTILINE)]
    numbers = list(range(1, len(report.citations) + 1))
    assert list(dict.fromkeys(referenced)) == numbers
    assert defined == numbers
    assert all(count == 1 for count in Counter(defined).values())
    assert [c["footnote"] for c in report.citations] == numbers
    assert len(sources.splitlines()) == max(len(numbers), 1)

    # every entry is a retrieved passage, and every quote a literal span of it and its document
    for citation in report.citations:
        passage = PASSAGES[citation["passage_id"]]
        assert citation["passage_id"] in PROPERTY_RETRIEVED
        assert citation["document_id"] == passage.document_id
        assert f"(id {passage.passage_id})" in sources.splitlines()[citation["footnote"] - 1]
        quote = citation["quote"]
        assert quote in passage.text
        expected = quote or passage.text
        offset = citation["start"] - passage.start
        assert passage.text[offset : offset + len(expected)] == expected
        assert citation["end"] - citation["start"] == len(expected)
        assert DOCUMENTS[passage.document_id][citation["start"] : citation["end"]] == expected
    assert report.passage_ids == list(dict.fromkeys(c["passage_id"] for c in report.citations))

    # no link survives unless it points at a retrieved web source; no image, no anchor; no
    # footnote marker is the text of a link or a definition in the body
    for url in re.findall(r"\[[^\]\n]*\]\([ \t]*<?([^)\s>]*)", content):
        assert url == GUIDE_URL
    assert not re.search(r"\[\^\d+\]\(", content)
    assert not re.search(r"^\s{0,3}\[\^[^\]\n]*\]:", body, re.MULTILINE)
    assert not re.search(r"!\[[^\]\n]*\]\([^)\n]*\)", content)
    assert not re.search(r"</?a\b[^>]*>", body, re.IGNORECASE)


# --- Citing findings ------------------------------------------------------------------------
FINDINGS = [
    {"id": 1, "passage_id": 12, "quote": "The supplier shall not be liable for any indirect damages."},
    {"id": 2, "passage_id": 12, "quote": "This limit survives termination."},
    {"id": 3, "passage_id": 13, "quote": TERMINATION},
]


def test_a_cited_finding_gets_the_footnote_of_its_own_quote():
    # given two findings quoting different sentences of one passage, cited by two claims
    draft = (
        '<cite findings="2">The cap survives.</cite> <cite findings="1">Indirect damages are excluded.</cite>'
    )
    # when
    report = _render(draft, findings=FINDINGS)
    # then each footnote shows the quote of the finding behind its claim, not the passage's first
    assert _body(report) == "The cap survives.[^1] Indirect damages are excluded.[^2]"
    assert [(c["footnote"], c["quote"]) for c in report.citations] == [
        (1, "This limit survives termination."),
        (2, "The supplier shall not be liable for any indirect damages."),
    ]
    assert report.warnings == []


def test_several_findings_on_one_claim_each_get_a_footnote_once():
    report = _render(
        '<cite findings="3, 1,3">Both.</cite> <cite findings="1">Again.</cite>', findings=FINDINGS
    )
    assert _body(report) == "Both.[^1][^2] Again.[^2]"
    assert [c["passage_id"] for c in report.citations] == [13, 12]


@pytest.mark.parametrize(
    ("draft", "retrieved", "warning"),
    [
        ('<cite findings="9">Unknown.</cite>', ALL_IDS, "citation_unknown_finding:9"),
        ('<cite findings="1">Not retrieved.</cite>', ALL_IDS - {12}, f"{WARNING_UNRETRIEVED_ID}:12"),
        ('<cite findings="x1">Malformed.</cite>', ALL_IDS, f"{WARNING_CITE_MALFORMED}:x1"),
    ],
    ids=["unknown", "unretrieved", "malformed"],
)
def test_a_finding_that_cannot_be_cited_leaves_the_claim_without_a_footnote(draft, retrieved, warning):
    report = _render(draft, retrieved=retrieved, findings=FINDINGS)
    assert report.citations == []
    assert "[^" not in _body(report)
    assert warning in report.warnings
    assert any(w.startswith(WARNING_UNCITED_CLAIM) for w in report.warnings)


def test_with_findings_required_a_passage_no_finding_quotes_gets_no_footnote():
    draft = '<cite ids="22">Notice is in writing.</cite> <cite ids="13">Thirty days.</cite>'
    report = citations_render(
        draft=draft, passages=PASSAGES, retrieved_ids=ALL_IDS, findings=FINDINGS, require_findings=True
    )
    assert _body(report) == "Notice is in writing. Thirty days.[^1]"
    assert [c["passage_id"] for c in report.citations] == [13]
    assert "citation_without_finding:22" in report.warnings


@pytest.mark.parametrize(
    ("draft", "body"),
    [
        (
            '<cite findings="1">It says \u201cnot be liable for any indirect damages\u201d.</cite>',
            "It says \u201cnot be liable for any indirect damages\u201d.[^1]",
        ),
        (
            '<cite findings="1">It says "liable for all damages whatsoever".</cite>',
            "It says [\u2026].[^1]",
        ),
        (
            'Outside: "either party may terminate this agreement" holds.\n\n'
            '<cite findings="3">Termination.</cite>',
            "Outside: [\u2026] holds.\n\nTermination.[^1]",
        ),
        (
            'Same paragraph: "Either party may terminate" <cite findings="3">on notice</cite>.',
            'Same paragraph: "Either party may terminate" on notice[^1].',
        ),
        ('Two words "Confidential Information" stay.', 'Two words "Confidential Information" stay.'),
        (
            '| Doc | the defined term" of its label | <cite findings="1">It says "not be liable for any '
            'indirect damages".</cite> |',
            '| Doc | the defined term" of its label | It says "not be liable for any indirect '
            'damages".[^1] |',
        ),
        (
            '<cite findings="1">On the 12" tapes it says "liable for all damages whatsoever".</cite>',
            'On the 12" tapes it says [\u2026].[^1]',
        ),
        (
            '<cite findings="1">It says \u2018liable for all damages whatsoever\u2019 and the party\u2019s '
            "\u2018not be liable for any indirect damages\u2019.</cite>",
            "It says [\u2026] and the party\u2019s \u2018not be liable for any indirect damages\u2019.[^1]",
        ),
        (
            '> liable for all damages whatsoever <cite findings="1">per clause 9</cite>\n'
            '> <cite findings="1">not be liable for any indirect damages</cite>',
            "> [\u2026][^1]\n> not be liable for any indirect damages[^1]",
        ),
    ],
    ids=[
        "verbatim-in-claim",
        "invented-in-claim",
        "other-paragraph",
        "same-paragraph",
        "short-term",
        "table-cells",
        "inch-mark",
        "single-curly",
        "blockquote",
    ],
)
def test_quotations_in_the_prose_must_be_verbatim_in_a_cited_passage(draft, body):
    report = _render(draft, findings=FINDINGS)
    assert _body(report) == body
    removed = [w for w in report.warnings if w.startswith("quote_removed:")]
    assert bool(removed) == ("[\u2026]" in body)


# Whatever a claim holds (links with parentheses in their address, javascript: links, images,
# HTML, stray parentheses), each finding it cites keeps its own footnote and quote.
_HOSTILE = st.sampled_from(
    [
        "[the portal](https://en.wikipedia.org/wiki/Portal_(web))",
        "[x](javascript:alert(1))",
        "![pixel](https://evil.example/p_(1).png)",
        '<b onclick="x()">bold</b>',
        "<script>alert(1)</script>",
        "(see clause (a)(ii))",
        ")(",
        "[^7]",
        '"quoted words that are nowhere"',
        '<cite findings="2">',
        "</cite>",
        "plain words",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    claims=st.lists(
        st.tuples(
            st.sampled_from([1, 2, 3]), st.lists(_HOSTILE | st.text(max_size=12), max_size=5).map(" ".join)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_property_hostile_claims_never_lose_or_swap_a_findings_footnote(claims):
    # given claims with hostile content, each citing one finding
    draft = "\n\n".join(f'<cite findings="{finding}">{text}</cite>' for finding, text in claims)
    # when
    report = citations_render(draft=draft, passages=PASSAGES, retrieved_ids=ALL_IDS, findings=FINDINGS)
    # then each finding a well-formed cite named has a footnote with its own quote
    quotes = {f["id"]: (f["passage_id"], f["quote"]) for f in FINDINGS}
    rendered = {(c["passage_id"], c["quote"]) for c in report.citations}
    wellformed = {
        finding for finding, text in claims if "<cite" not in text.lower() and "</cite" not in text.lower()
    }
    assert {quotes[f] for f in wellformed} <= rendered
    assert rendered <= set(quotes.values())
    assert "<cite" not in report.content.lower()
    assert "javascript:" not in _body(report) and "evil.example" not in _body(report)
