"""A corpus larger than SEARCH_TERM_INDEX_MAX_PASSAGES gets no in-memory term index: hybrid
search's lexical leg, the per-document sweep search (tests/corpora/test_search_by_document.py)
and term frequencies then come from the database's full-text index (FTS5 or tsvector), and
answer as the term index does. The bound is set below these small corpora's size to take that
path."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpora.retrieval.lexical import term_statistics
from corpora.retrieval.term_index import term_indexes
from corpora.selectors import passage_search, term_frequencies
from corpora.services import corpus_bump_index_version, passage_embed_pending
from tests.corpora.test_search_by_document import _documents
from tests.factories import ingest_text

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


def _term_counts_run(corpus, words) -> tuple[dict, int, int]:
    """(term_frequencies' answer, how many statements counted a term's passages in the
    full-text index, how many read PostgreSQL's stored lexeme counts)."""
    with CaptureQueriesContext(connection) as captured:
        frequencies, _ = term_frequencies(corpus=corpus, words=words)
    statements = [q["sql"] for q in captured.captured_queries]
    counting = [sql for sql in statements if "count(*)" in sql and ("MATCH" in sql or "@@" in sql)]
    stored = [sql for sql in statements if "corpora_lexeme_count" in sql]
    return frequencies, len(counting), len(stored)


def test_term_counts_outlive_an_embedding_batch_but_not_new_passages(corpus, embedded, settings):
    # given a corpus over the bound, whose term counts come from the database
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    term_statistics.clear()
    words = ["insurance", "liability"]
    first, counted, stored = _term_counts_run(corpus, words)
    # (PostgreSQL reads both from its stored counts at once, SQLite counts each in FTS5)
    assert (counted, stored) == ((0, 1) if connection.vendor == "postgresql" else (len(words), 0))
    # when an embedding batch bumps the corpus's index_version (its passages unchanged)
    corpus_bump_index_version(corpus_id=corpus.pk)
    again, *reads = _term_counts_run(corpus, words)
    # then the counts are reused
    assert (again, reads) == (first, [0, 0])
    # and when a document adds passages, they are counted anew
    ingest_text(corpus, "policy.txt", "The supplier keeps insurance against liability and more insurance.\n")
    after, *reads_after = _term_counts_run(corpus, words)
    assert sum(reads_after) > 0
    assert after == {word: first[word] + 1 for word in words}


def test_a_term_count_one_process_made_serves_the_others(corpus, embedded, settings):
    # given a corpus over the bound, whose terms one process has counted
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    words = ["insurance", "liability"]
    first, counted, stored = _term_counts_run(corpus, words)
    assert counted + stored > 0
    # when another process (no counts of its own) asks for the same words
    term_statistics.clear()
    again, recounted, _ = _term_counts_run(corpus, words)
    # then no passage is counted again: the counts come from the shared cache (SQLite) or
    # from the counts PostgreSQL keeps
    assert (again, recounted) == (first, 0)


def test_an_unreachable_shared_cache_leaves_counting_to_each_process(corpus, embedded, settings):
    # given a shared cache that refuses connections (a Redis that is down)
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 5
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    words = ["insurance", "liability"]
    # when terms are counted, and a search runs
    frequencies, counted, stored = _term_counts_run(corpus, words)
    hits = passage_search(corpus=corpus, query="insurance liability", top_k=3, mode="lexical")
    # then both answer from the database
    assert counted + stored > 0 and frequencies["insurance"] > 0
    assert hits
