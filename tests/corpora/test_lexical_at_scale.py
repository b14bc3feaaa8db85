"""A corpus larger than SEARCH_TERM_INDEX_MAX_PASSAGES gets no in-memory term index: hybrid
search's lexical leg, the per-document sweep search and term frequencies then come from the
database's full-text index (FTS5 or tsvector), and answer as the term index does. The bound is
set below these small corpora's size to take that path."""

import pytest

from corpora.retrieval.term_index import term_indexes
from corpora.selectors import passage_search, passage_search_by_document, term_frequencies
from corpora.services import passage_embed_pending
from tests.corpora.test_search_by_document import _documents

QUERIES = [
    "Which contracts require insurance?",
    "termination for convenience notice",
    "liability capped at the fees paid",
    "When is payment due after the invoice?",
]


@pytest.fixture
def embedded(corpus, embedding_server):
    documents = _documents(corpus)
    assert passage_embed_pending(corpus=corpus) > 0
    term_indexes.clear()
    return documents


def _held(corpus) -> bool:
    """Whether this process holds a term index of the corpus."""
    return term_indexes._items.get(corpus.pk) is not None


def _hybrid(corpus, settings, bound: int, **kwargs) -> list:
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = bound
    term_indexes.clear()
    return passage_search(corpus=corpus, **kwargs)


def test_a_corpus_over_the_bound_is_searched_without_a_term_index(corpus, embedded, settings):
    # given an embedded corpus of more passages than the bound
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    for query in QUERIES:
        # when it is searched (hybrid)
        hits = passage_search(corpus=corpus, query=query, top_k=5)
        # then it answers, and no process-wide term index was built for it
        assert hits
    assert not _held(corpus)
    # while without the bound the index is built as before
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 0
    passage_search(corpus=corpus, query=QUERIES[0], top_k=5)
    assert _held(corpus)


def test_rankings_from_the_database_match_the_term_indexs(corpus, embedded, settings):
    for query in QUERIES:
        in_memory = [h.passage.pk for h in _hybrid(corpus, settings, 0, query=query, top_k=5)]
        from_database = [h.passage.pk for h in _hybrid(corpus, settings, 5, query=query, top_k=5)]
        # the best hit is the same, and most of the top five
        assert from_database[0] == in_memory[0]
        assert len(set(from_database) & set(in_memory)) >= 3


def test_the_document_sweep_search_ranks_each_document_from_the_database(corpus, embedded, settings):
    # given a corpus over the bound
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    query = "Which contracts require insurance?"
    # when every document is searched at once
    evidence, best = passage_search_by_document(
        corpus=corpus, query=query, document_ids=embedded, per_document=2
    )
    # then each document's hits are what a hybrid search scoped to it returns, in order
    assert [e.document_id for e in evidence] == embedded
    for document in evidence:
        scoped = passage_search(corpus=corpus, query=query, top_k=2, document_ids=[document.document_id])
        assert [p.pk for p, _ in document.hits] == [h.passage.pk for h in scoped]
        assert all(p.document_id == document.document_id for p, _ in document.hits)
        assert "nsurance" in " ".join(p.text for p, _ in document.hits)
    # and the best scores are those of the whole corpus
    every = [hit for document in evidence for _, hit in document.hits]
    assert best.lexical == pytest.approx(max(hit.lexical for hit in every)) and best.lexical > 0
    assert best.dense == max(hit.dense for hit in every) > 0
    assert not _held(corpus)


def test_term_frequencies_from_the_database_count_as_the_term_index_does(corpus, embedded, settings):
    words = ["insurance", "liability", "terminate", "zebra"]
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 0
    in_memory = term_frequencies(corpus=corpus, words=words)
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    term_indexes.clear()
    from_database = term_frequencies(corpus=corpus, words=words)
    assert from_database == in_memory
    assert in_memory[0]["insurance"] > 0 and in_memory[0]["zebra"] == 0
    assert not _held(corpus)
