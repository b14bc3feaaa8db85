import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpora.exceptions import (
    DenseSearchUnavailable,
    InvalidSearchMode,
    InvalidTopK,
    PassageNotFound,
    QueryTooLong,
)
from corpora.selectors import passage_exact_search, passage_neighbours, passage_search
from corpora.services import corpus_create
from tests.factories import SEARCH_HIT_FIELDS, ingest_samples, ingest_text


@pytest.fixture
def samples(corpus):
    return ingest_samples(corpus)


def titles(hits):
    return [h.passage.document.title for h in hits]


def test_lexical_search_finds_the_passage_with_the_keywords(corpus, samples):
    hits = passage_search(corpus=corpus, query="governing law Delaware", top_k=3, mode="lexical")

    assert "laws of the State of\nDelaware" in hits[0].passage.text
    assert hits[0].passage.document.title == "acme-supply"
    assert hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_lexical_search_stems_words(corpus, samples):
    hits = passage_search(corpus=corpus, query="terminating", top_k=5, mode="lexical")

    assert any("terminate this Agreement for convenience" in h.passage.text for h in hits)


def test_question_words_do_not_drown_the_keywords(corpus, samples):
    hits = passage_search(
        corpus=corpus, query="Which contracts have a non-compete clause?", top_k=1, mode="lexical"
    )

    assert "shall not develop a competing" in hits[0].passage.text


def test_hybrid_without_an_embedder_is_lexical(corpus, samples):
    hybrid = passage_search(corpus=corpus, query="insurance limits", top_k=5)
    lexical = passage_search(corpus=corpus, query="insurance limits", top_k=5, mode="lexical")

    assert [h.passage.pk for h in hybrid] == [h.passage.pk for h in lexical]


def test_document_filter_restricts_results(corpus, samples):
    _acme, initech = samples

    hits = passage_search(
        corpus=corpus,
        query="agreement party software liability",
        top_k=10,
        mode="lexical",
        document_ids=[initech.document.pk],
    )

    assert hits
    assert {h.passage.document_id for h in hits} == {initech.document.pk}
    assert passage_search(corpus=corpus, query="software", top_k=5, mode="lexical", document_ids=[]) == []


def test_search_never_crosses_corpora(user, corpus, samples):
    other = corpus_create(creator=user, name="Other")
    ingest_text(other, "x.txt", "Delaware governing law appears here too, in another corpus.")

    hits = passage_search(corpus=other, query="Delaware", top_k=10, mode="lexical")

    assert {h.passage.corpus_id for h in hits} == {other.pk}


def test_hit_as_dict_has_the_documented_fields(corpus, samples):
    [hit] = passage_search(corpus=corpus, query="Delaware", top_k=1, mode="lexical")

    data = hit.as_dict()

    assert set(data) == SEARCH_HIT_FIELDS
    assert data["source_name"] == "acme-supply.md"
    assert hit.passage.document.text[data["start"] : data["end"]] == data["text"]


def test_hits_are_whole_passages_with_their_documents_in_one_query(
    corpus, samples, django_assert_num_queries
):
    from corpora.models import Passage
    from corpora.selectors import _hydrate

    ids = list(Passage.objects.filter(corpus=corpus).order_by("-pk").values_list("pk", flat=True)[:6])
    ranked = [(pid, 1.0 / (rank + 1)) for rank, pid in enumerate(ids)] + [(10**9, 0.01)]

    with django_assert_num_queries(1):
        hits = _hydrate(ranked)
        [hit.as_dict() for hit in hits]

    assert [h.passage.pk for h in hits] == ids  # the ranking's order; unknown ids dropped
    for hit in hits:
        stored = Passage.objects.select_related("document").get(pk=hit.passage.pk)
        for field in Passage._meta.concrete_fields:
            assert getattr(hit.passage, field.attname) == getattr(stored, field.attname), field.name
        assert isinstance(hit.passage.heading_path, list)
        assert isinstance(hit.passage.is_heading, bool)
        # Left out of the hit's query, loaded on access.
        assert hit.passage.document.text == stored.document.text
        assert hit.passage.document.created == stored.document.created


ADVERSARIAL = [
    '"',
    '""',
    "'",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(",
    "a AND",
    "AND OR NOT",
    "*",
    "**",
    ":",
    "text:",
    "corpus_key:c1",
    "^",
    "-",
    "--",
    "(",
    ")",
    "((",
    "{}",
    "[",
    "\\",
    "%",
    "_",
    ";",
    "; DROP TABLE corpora_passage; --",
    "' OR 1=1 --",
    "!!!",
    "...",
    "?",
    "🙂",
    "\u0000x",
    "Delaware*",
    '"Delaware',
    "Delaware AND",
    "NEAR(Delaware law, 2)",
    "law:Delaware",
    "e-mail",
    "&",
    "|",
    "!",
    "<->",
    ":*",
    "a & b | !c",
    "or or or",
    "-Delaware",
]


@pytest.mark.parametrize("query", ADVERSARIAL)
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_syntax_characters_never_raise(corpus, samples, query, mode):
    hits = passage_search(corpus=corpus, query=query, top_k=5, mode=mode)

    assert isinstance(hits, list)
    if "Delaware" in query:
        assert hits and "Delaware" in hits[0].passage.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=200))
def test_any_text_is_a_valid_query(corpus, samples, query):
    for hit in passage_search(corpus=corpus, query=query, top_k=3, mode="lexical"):
        assert hit.passage.corpus_id == corpus.pk
    passage_exact_search(corpus=corpus, phrase=query or "x", top_k=3)


def test_invalid_arguments_get_coded_errors(corpus):
    with pytest.raises(InvalidSearchMode):
        passage_search(corpus=corpus, query="x", mode="semantic")
    with pytest.raises(InvalidTopK):
        passage_search(corpus=corpus, query="x", top_k=0)
    with pytest.raises(InvalidTopK):
        passage_search(corpus=corpus, query="x", top_k=501)
    with pytest.raises(QueryTooLong):
        passage_search(corpus=corpus, query="x" * 2001)


def test_dense_mode_without_an_embedder_says_so(corpus, samples):
    with pytest.raises(DenseSearchUnavailable) as error:
        passage_search(corpus=corpus, query="liability", mode="dense")

    assert error.value.code == "dense_search_unavailable"


def test_exact_search_matches_phrases_across_line_breaks_case_and_quote_style(corpus, samples):
    hits = passage_exact_search(corpus=corpus, phrase="LAWS OF THE STATE OF DELAWARE")
    quoted = passage_exact_search(corpus=corpus, phrase="Acme Corporation (\u201cSupplier\u201d)")

    assert len(hits) == 1
    assert "laws of the State of\nDelaware" in hits[0].passage.text
    assert len(quoted) == 1


def test_exact_search_requires_the_literal_phrase(corpus, samples):
    # Stemming would match "terminating convenience"; the literal check does not.
    assert passage_exact_search(corpus=corpus, phrase="terminating for convenience") == []
    assert passage_exact_search(corpus=corpus, phrase="!!!") == []


def test_neighbours_are_the_surrounding_passages_in_order(corpus, samples):
    sections = [f"Section {i} " + "of the long handbook explains one rule in detail. " * 12 for i in range(6)]
    handbook = ingest_text(corpus, "handbook.txt", "\n\n".join(sections)).document
    third = handbook.passages.get(ordinal=2)

    around = passage_neighbours(corpus=corpus, passage_id=third.pk, before=1, after=2)
    first = passage_neighbours(corpus=corpus, passage_id=handbook.passages.get(ordinal=0).pk, before=3)

    assert handbook.passages.count() == 6
    assert [p.ordinal for p in around] == [1, 2, 3, 4]
    assert {p.document_id for p in around} == {handbook.pk}
    assert [p.ordinal for p in first] == [0, 1]


def test_neighbours_of_a_passage_in_another_corpus_are_not_found(user, corpus, samples):
    other = corpus_create(creator=user, name="Other")
    passage = samples[0].document.passages.first()

    with pytest.raises(PassageNotFound):
        passage_neighbours(corpus=other, passage_id=passage.pk)


def test_very_common_terms_are_skipped_only_when_rarer_ones_match(user):
    # Passages all saying "agreement", one of them "escrow": "agreement" is skipped when
    # "escrow" is in the query, and kept when nothing rarer is.
    from corpora.retrieval.lexical import PRUNE_MIN_PASSAGES

    big = corpus_create(creator=user, name="Big")
    filler = [f"Clause {i} of this agreement concerns topic number {i}." for i in range(PRUNE_MIN_PASSAGES)]
    filler[500] = "The source code escrow agreement is kept with a neutral agent."
    ingest_text(big, "big.txt", "\n\n".join(" ".join([line] * 12) for line in filler))

    escrow = passage_search(corpus=big, query="escrow agreement", top_k=3, mode="lexical")
    common_only = passage_search(corpus=big, query="agreement clause", top_k=3, mode="lexical")

    assert big.passages.count() == PRUNE_MIN_PASSAGES
    assert "source code escrow" in escrow[0].passage.text
    assert len(escrow) == 1
    assert len(common_only) == 3
