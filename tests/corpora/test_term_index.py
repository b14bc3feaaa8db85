"""The in-memory BM25 index that gives hybrid search its lexical candidates."""

import math

import pytest

from corpora.constants import FUSION_CANDIDATES_MIN
from corpora.embedding import get_embedder
from corpora.models import Corpus, Passage
from corpora.retrieval.dense import dense_indexes
from corpora.retrieval.fusion import weighted_rrf
from corpora.retrieval.term_index import HEADING_WEIGHT, K1, B, term_indexes
from corpora.selectors import passage_search
from corpora.services import corpus_bump_index_version, passage_embed_pending
from tests.factories import ingest_samples, ingest_text

LIABILITY = "The supplier's liability is capped at the fees paid."
TERMINATION = "Either party may terminate this agreement for convenience."
BOTH = "Termination does not limit liability for breach."


def _index(corpus):
    version = Corpus.objects.get(pk=corpus.pk).index_version
    return term_indexes.get(corpus_id=corpus.pk, version=version)


def _passage(text: str) -> Passage:
    return Passage.objects.get(text=text)


def _bm25(tf: float, length: float, average: float, passages: int, holding: int) -> float:
    idf = math.log(1 + (passages - holding + 0.5) / (holding + 0.5))
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def test_scores_are_bm25_over_stemmed_words_without_stopwords(corpus):
    # given three one-passage documents
    for name, text in (("a.txt", LIABILITY), ("b.txt", TERMINATION), ("c.txt", BOTH)):
        ingest_text(corpus, name, text, schedule_embedding=False)
    # words kept: supplier liability capped fees paid (5) / either party terminate agreement
    # convenience (5) / termination limit liability breach (4)
    average = (5 + 5 + 4) / 3

    ranked = _index(corpus).rank(["terminating", "liabilities"], limit=10)

    # then "terminating" finds both forms of the word, "liabilities" both liability passages
    termination = _bm25(1, 5, average, 3, 2)
    liability = _bm25(1, 5, average, 3, 2)
    both = _bm25(1, 4, average, 3, 2) * 2
    assert [pid for pid, _ in ranked] == [_passage(BOTH).pk, _passage(LIABILITY).pk, _passage(TERMINATION).pk]
    assert [score for _, score in ranked] == pytest.approx([both, liability, termination], rel=1e-6)


def test_equal_scores_keep_passage_order_and_limit_cuts_the_tail(corpus):
    for i in range(5):
        ingest_text(corpus, f"{i}.txt", f"Indemnity clause number {'one two three four five'.split()[i]}.")

    ranked = _index(corpus).rank(["indemnity"], limit=3)

    ids = sorted(Passage.objects.filter(corpus=corpus).values_list("pk", flat=True))
    assert [pid for pid, _ in ranked] == ids[:3]


def test_headings_count_at_half_weight(corpus):
    # given a section long enough for several passages: only its first holds the heading's word
    paragraph = "The goods shall be fit for purpose and free of defects in design, material and make. " * 6
    ingest_text(corpus, "h.md", "# Warranty\n\n" + "\n\n".join([paragraph] * 4) + "\n")
    passages = list(Passage.objects.filter(corpus=corpus).order_by("ordinal"))
    first, later = passages[0], passages[-1]
    assert "Warranty" in first.text and "Warranty" not in later.text
    assert later.heading_path == ["Warranty"]

    scores = dict(_index(corpus).rank(["warranty"], limit=10))

    # then the later passage is found by its heading alone, below the one that also says it
    assert HEADING_WEIGHT == 0.5
    assert 0 < scores[later.pk] < scores[first.pk]


def test_unknown_words_and_a_document_filter(corpus):
    _acme, initech = ingest_samples(corpus, schedule_embedding=False)
    index = _index(corpus)

    assert index.rank(["zyzzyva"], limit=5) == []
    scoped = index.rank(["agreement"], limit=50, document_ids=[initech.document.pk])
    assert scoped
    assert {Passage.objects.get(pk=pid).document_id for pid, _ in scoped} == {initech.document.pk}
    assert index.rank(["agreement"], limit=50, document_ids=[]) == []


def test_an_embedding_batch_keeps_the_index_and_an_ingest_rebuilds_it(corpus):
    ingest_text(corpus, "a.txt", LIABILITY, schedule_embedding=False)
    first = _index(corpus)

    corpus_bump_index_version(corpus_id=corpus.pk)  # what each embedding batch does
    kept = _index(corpus)
    assert kept.postings is first.postings and kept.rows is first.rows

    ingest_text(corpus, "b.txt", TERMINATION, schedule_embedding=False)
    rebuilt = _index(corpus)
    assert rebuilt is not first
    assert [pid for pid, _ in rebuilt.rank(["convenience"], limit=5)] == [_passage(TERMINATION).pk]


def test_hybrid_fuses_the_term_index_with_the_dense_ranking(corpus, embedding_server):
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)

    hits = passage_search(corpus=corpus, query="governing law Delaware", top_k=3)

    assert "Delaware" in hits[0].passage.text
    assert _index(corpus).rank(["delaware"], limit=1)[0][0] == hits[0].passage.pk


def test_hybrid_with_a_quoted_phrase_still_matches_the_phrase(corpus, embedding_server):
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)

    hits = passage_search(corpus=corpus, query='"consequential damages"', top_k=3)

    assert "consequential damages" in hits[0].passage.text


def test_hybrid_hits_are_the_weighted_fusion_of_the_term_index_and_the_dense_ranking(
    corpus, embedding_server, settings
):
    # given an embedded corpus and a keyword query that few passages hold
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)
    query, top_k = "Delaware", 6
    depth = max(FUSION_CANDIDATES_MIN, 2 * top_k)
    lexical = _index(corpus).rank(["delaware"], limit=depth)
    embedder = get_embedder()
    version = Corpus.objects.get(pk=corpus.pk).index_version
    dense = dense_indexes.get(corpus_id=corpus.pk, model=embedder.name, version=version).rank(
        embedder.embed_query(query), limit=depth
    )
    expected = weighted_rrf(
        lexical,
        dense,
        lexical_weight=settings.SEARCH_FUSION_LEXICAL_WEIGHT,
        dense_weight=settings.SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS,
        limit=top_k,
    )

    # when hybrid search runs
    hits = passage_search(corpus=corpus, query=query, top_k=top_k)

    # then its hits are that fusion, in order, rows loaded early or late alike
    assert [h.passage.pk for h in hits] == [f.passage_id for f in expected]
    assert [h.score for h in hits] == pytest.approx([f.score for f in expected])
    assert len(lexical) < top_k  # so some hits came from the dense ranking alone
    assert all(h.passage.text and h.passage.document.title for h in hits)


def test_hits_come_from_memory_as_the_database_has_them(
    corpus, embedding_server, django_assert_num_queries, settings
):
    # given an embedded corpus whose term index is built, and dense search in memory (pgvector's
    # is a query by design)
    settings.SEARCH_VECTOR_BACKEND = "memory"
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)
    passage_search(corpus=corpus, query="governing law", top_k=3)

    # when a hybrid and a dense search run: no query through the ORM (the index_version goes
    # to the driver directly), no hit loading
    with django_assert_num_queries(0):
        hybrid = passage_search(corpus=corpus, query="termination for convenience", top_k=5)
    with django_assert_num_queries(0):
        dense = passage_search(corpus=corpus, query="termination for convenience", top_k=5, mode="dense")

    # then each hit's passage and document fields equal the ORM's
    for hit in hybrid + dense:
        stored = Passage.objects.select_related("document").get(pk=hit.passage.pk)
        for name in (
            "corpus_id",
            "document_id",
            "ordinal",
            "text",
            "start",
            "end",
            "page",
            "heading_path",
            "is_heading",
            "word_count",
        ):
            assert getattr(hit.passage, name) == getattr(stored, name), name
        for name in ("corpus_id", "title", "source_name", "file_type", "page_count"):
            assert getattr(hit.passage.document, name) == getattr(stored.document, name), name
        # and the fields memory does not keep load on access
        assert hit.passage.embedding_model == stored.embedding_model
        assert hit.passage.document.text == stored.document.text
    # each hit has its own heading list: changing one leaves the index as it was
    hybrid[0].passage.heading_path.append("changed")
    again = passage_search(corpus=corpus, query="termination for convenience", top_k=5)
    assert "changed" not in again[0].passage.heading_path


def test_a_renamed_document_shows_its_new_title_once_the_version_moves(corpus, embedding_server):
    from django.contrib.admin.sites import AdminSite

    from corpora.admin import DocumentAdmin
    from corpora.models import Document

    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)
    hit = passage_search(corpus=corpus, query="governing law Delaware", top_k=1)[0]
    document = Document.objects.get(pk=hit.passage.document_id)

    # the admin's save moves the corpus's index_version with the title
    document.title = "Renamed agreement"
    DocumentAdmin(Document, AdminSite()).save_model(None, document, None, change=True)

    again = passage_search(corpus=corpus, query="governing law Delaware", top_k=1)[0]
    assert again.passage.pk == hit.passage.pk
    assert again.passage.document.title == "Renamed agreement"
