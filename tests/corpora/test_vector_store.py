"""The vector store: the in-memory matrix and pgvector answer a search the same way, pgvector is
really what answers where it is configured, and its table follows the passages. The pgvector
tests run in the pgvector pass (`make test-pgvector`, tests/pgvector_pass.py) and skip
elsewhere; the memory and migration tests run on every database."""

import io
import json
import os

import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpora.exceptions import VectorBackendUnavailable
from corpora.models import Passage
from corpora.retrieval import pgvector
from corpora.retrieval.dense import dense_indexes
from corpora.retrieval.vector_store import (
    MemoryVectorStore,
    PgvectorVectorStore,
    forget,
    vector_store,
)
from corpora.selectors import passage_search, passage_search_by_document
from corpora.services import document_delete, passage_embed_pending
from tests.factories import ingest_text

PGVECTOR_PASS = os.environ.get("DEEPCITE_TEST_PGVECTOR") == "1"

TOPICS = [
    "general liability insurance of five million dollars for the supplier",
    "termination for convenience on sixty days written notice",
    "limitation of liability capped at the fees paid in the preceding year",
    "confidential information returned or destroyed after termination",
    "payment due within thirty days of the invoice date with late interest",
    "backups kept for ninety days after a document is deleted",
    "incident response within twenty four hours of a security breach",
    "governing law of the state of delaware and exclusive venue",
]
QUERIES = [
    "How long are backups kept?",
    "insurance liability supplier",
    "What happens to confidential information on termination?",
    "late payment interest invoice",
]


@pytest.fixture(autouse=True)
def _store_asked_anew():
    forget()
    yield
    forget()


@pytest.fixture
def pgvector_db(db):
    """The database's vector table, or a skip outside the pgvector pass (a failure inside it)."""
    if not pgvector.installed(connection):
        if PGVECTOR_PASS:
            pytest.fail("the pgvector pass runs on a database without the vector table")
        pytest.skip("needs PostgreSQL with pgvector (make test-pgvector)")
    return connection


@pytest.fixture
def hnsw(pgvector_db, settings):
    if not settings.SEARCH_PGVECTOR_HNSW:
        pytest.skip("HNSW indexes are off here (SEARCH_PGVECTOR_HNSW=0: see tests/pgvector_pass.py)")


def _corpus_of_topics(corpus, documents: int = 8) -> list[int]:
    """`documents` documents, each of several passages mixing the topics differently, left
    unembedded (the tests embed them, rather than a background job racing them)."""
    ids = []
    for i in range(documents):
        paragraphs = [
            f"## Clause {k}\n\n"
            + " ".join(
                [f"Clause {k} of agreement {i} covers {TOPICS[(i + k) % len(TOPICS)]}."]
                + [f"It restates {TOPICS[(i * 3 + k + n) % len(TOPICS)]} in part {n}." for n in range(6)]
            )
            for k in range(4)
        ]
        text = "\n\n".join(paragraphs) + "\n"
        ids.append(ingest_text(corpus, f"agreement-{i}.txt", text, schedule_embedding=False).document.pk)
    return ids


def _vector_rows(**filters) -> int:
    where = " AND ".join(f"{name} = %s" for name in filters) or "TRUE"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {pgvector.TABLE} WHERE {where}", list(filters.values()))  # noqa: S608
        return cursor.fetchone()[0]


def _search_both(settings, corpus, **kwargs) -> tuple[list, list]:
    """(memory's hits, pgvector's hits) for the same search, as (passage id, score)."""
    results = []
    for backend in ("memory", "pgvector"):
        settings.SEARCH_VECTOR_BACKEND = backend
        forget()
        dense_indexes.clear()
        hits = passage_search(corpus=corpus, **kwargs)
        results.append([(h.passage.pk, h.score) for h in hits])
    return results[0], results[1]


def _assert_same_hits(memory: list, database: list, *, tolerance: float = 2e-3) -> None:
    """The same passages with the same scores, in the same order but for near-ties: memory's
    float16 dot product and pgvector's cosine over the same halfvecs differ by ~1e-3 at most."""
    assert len(database) == len(memory)
    for (_, memory_score), (_, database_score) in zip(memory, database, strict=True):
        assert abs(memory_score - database_score) <= tolerance
    scores = dict(database)
    last = memory[-1][1]
    for pid, score in memory:
        if pid in scores:
            assert abs(scores[pid] - score) <= tolerance
        else:  # only a near-tie at the cut may be another passage
            assert abs(score - last) <= tolerance


# --- Every database ---------------------------------------------------------------------------
def test_memory_is_chosen_where_the_database_has_no_vector_table(db, settings):
    # given auto on a database without the vector table (SQLite, PostgreSQL without pgvector)
    if pgvector.installed(connection):
        pytest.skip("this database has pgvector")
    settings.SEARCH_VECTOR_BACKEND = "auto"
    # then searches use the in-memory matrix
    assert isinstance(vector_store(), MemoryVectorStore)


def test_pgvector_named_where_unavailable_is_a_clear_error_not_a_crash(db, settings):
    if pgvector.installed(connection):
        pytest.skip("this database has pgvector")
    settings.SEARCH_VECTOR_BACKEND = "pgvector"
    # when a search asks for the store
    with pytest.raises(VectorBackendUnavailable) as raised:
        vector_store()
    # then it says what is missing, with a code
    assert raised.value.code == "vector_backend_unavailable"
    assert "SEARCH_VECTOR_BACKEND=pgvector" in raised.value.message
    # and the system checks `migrate` runs say so before anything serves
    errors = run_checks(databases=["default"])
    assert [e.id for e in errors if e.id.startswith("corpora.")] == (
        [] if pgvector.extension_available(connection) else ["corpora.E002"]
    )


def test_search_command_naming_pgvector_where_unavailable_fails_with_a_code(db, corpus):
    if pgvector.installed(connection):
        pytest.skip("this database has pgvector")
    with pytest.raises(CommandError, match=r"\[vector_backend_unavailable\]"):
        call_command(
            "search",
            "--corpus",
            str(corpus.pk),
            "backups",
            "--user",
            corpus.creator.username,
            "--vector-backend",
            "pgvector",
            stdout=io.StringIO(),
        )


def test_search_command_compares_the_two_backends(pgvector_db, corpus, embedding_server, settings):
    # given an embedded corpus whose vectors are in memory and in pgvector alike
    _corpus_of_topics(corpus, documents=4)
    passage_embed_pending(corpus=corpus)
    configured = settings.SEARCH_VECTOR_BACKEND
    results = {}
    for backend in ("memory", "pgvector"):
        # when the command searches it with each backend named on the command line
        out = io.StringIO()
        call_command(
            "search",
            "--corpus",
            str(corpus.pk),
            QUERIES[0],
            "--mode",
            "dense",
            "--top-k",
            "5",
            "--json",
            "--user",
            corpus.creator.username,
            "--vector-backend",
            backend,
            stdout=out,
        )
        results[backend] = [(hit["passage_id"], hit["score"]) for hit in json.loads(out.getvalue())]
    # then both answered, alike, and the setting is back as it was
    assert results["memory"]
    _assert_same_hits(results["memory"], results["pgvector"])
    assert configured == settings.SEARCH_VECTOR_BACKEND


def test_an_unknown_backend_fails_the_system_check(settings):
    settings.SEARCH_VECTOR_BACKEND = "faiss"
    assert [e.id for e in run_checks() if e.id.startswith("corpora.")] == ["corpora.E001"]


@pytest.mark.parametrize(
    ("m", "ef_construction", "ef_search"),
    [(1, 64, 800), (101, 300, 800), (16, 20, 800), (16, 1001, 800), (16, 64, 0), (16, 64, 1001)],
)
def test_hnsw_parameters_pgvector_refuses_fail_the_system_check(settings, m, ef_construction, ef_search):
    settings.SEARCH_PGVECTOR_HNSW_M = m
    settings.SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION = ef_construction
    settings.SEARCH_PGVECTOR_EF_SEARCH = ef_search
    assert [e.id for e in run_checks() if e.id.startswith("corpora.")] == ["corpora.E003"]


def test_migration_0003_runs_back_and_forth_on_this_database(transactional_db, corpus, embedding_server):
    # given a migrated database with embedded passages
    _corpus_of_topics(corpus, documents=2)
    embedded = passage_embed_pending(corpus=corpus)
    # when the vector store's migration is reverted and re-applied (an upgrade of a deployment)
    call_command("migrate", "corpora", "0002", verbosity=0)
    assert not pgvector.installed(connection)
    call_command("migrate", "corpora", verbosity=0)
    # then the table exists exactly where the server has pgvector (never an error elsewhere),
    # holding the vectors stored before
    assert pgvector.installed(connection) == pgvector.extension_available(connection)
    if pgvector.installed(connection):
        assert _vector_rows(corpus_id=corpus.pk) == embedded > 0


# --- pgvector ---------------------------------------------------------------------------------
def test_pgvector_is_the_store_and_embedding_fills_its_table(pgvector_db, corpus, embedding_server, settings):
    # given the pgvector backend configured and a corpus being embedded
    settings.SEARCH_VECTOR_BACKEND = "auto"
    _corpus_of_topics(corpus, documents=3)
    embedded = passage_embed_pending(corpus=corpus, batch_size=10)
    # then the store is pgvector, and every stored embedding has its row of the same model
    assert isinstance(vector_store(), PgvectorVectorStore)
    assert embedded == Passage.objects.filter(corpus=corpus).count() > 10
    assert _vector_rows(corpus_id=corpus.pk, model="openai:bag-of-words") == embedded
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT vector_dims(embedding) FROM {pgvector.TABLE}")  # noqa: S608
        assert cursor.fetchall() == [(64,)]


@pytest.fixture
def minilm(settings):
    settings.EMBEDDING_BACKEND = "minilm"


@pytest.mark.embedding
def test_pgvector_answers_as_the_memory_backend_does(pgvector_db, corpus, minilm, settings):
    # given a small corpus embedded by the bundled model (384 dimensions)
    _corpus_of_topics(corpus)
    passage_embed_pending(corpus=corpus)
    for query in QUERIES:
        # when the same dense and hybrid searches run on each backend
        for mode in ("dense", "hybrid"):
            memory, database = _search_both(settings, corpus, query=query, top_k=10, mode=mode)
            # then they return the same passages with the same scores
            assert len(memory) == 10
            _assert_same_hits(memory, database)
            # and the same best hits, in the same order
            assert [pid for pid, _ in database[:3]] == [pid for pid, _ in memory[:3]], (query, mode)


@pytest.mark.embedding
def test_pgvector_by_document_matches_memory(pgvector_db, corpus, minilm, settings):
    documents = _corpus_of_topics(corpus)
    passage_embed_pending(corpus=corpus)
    answers = []
    for backend in ("memory", "pgvector"):
        settings.SEARCH_VECTOR_BACKEND = backend
        forget()
        evidence, best = passage_search_by_document(
            corpus=corpus,
            query="How long are backups kept after deletion?",
            document_ids=documents[:5],
            per_document=3,
            scope=documents[:6],
        )
        answers.append(
            (
                [(e.document_id, [(p.pk, round(h.dense, 2)) for p, h in e.hits]) for e in evidence],
                round(best.dense, 2),
                round(best.lexical, 6),
            )
        )
    assert answers[0][0]
    assert answers[1] == answers[0]


def test_a_document_filter_returns_k_rows(pgvector_db, corpus, embedding_server, settings):
    # given many documents, and a search restricted to two of them
    documents = _corpus_of_topics(corpus, documents=12)
    passage_embed_pending(corpus=corpus)
    settings.SEARCH_VECTOR_BACKEND = "pgvector"
    wanted = documents[3:5]
    in_wanted = Passage.objects.filter(document_id__in=wanted).count()
    # when a dense search asks for fewer passages than those documents hold
    hits = passage_search(
        corpus=corpus, query="backups", top_k=in_wanted - 1, mode="dense", document_ids=wanted
    )
    # then it gets exactly that many, all from those documents
    assert len(hits) == in_wanted - 1
    assert {h.passage.document_id for h in hits} <= set(wanted)


def test_deleting_a_document_deletes_its_vectors(pgvector_db, corpus, user, embedding_server):
    documents = _corpus_of_topics(corpus, documents=3)
    passage_embed_pending(corpus=corpus)
    assert _vector_rows(document_id=documents[0]) > 0
    document_delete(user=user, document=corpus.documents.get(pk=documents[0]))
    assert _vector_rows(document_id=documents[0]) == 0
    assert _vector_rows(document_id=documents[1]) == Passage.objects.filter(document_id=documents[1]).count()


def test_sync_rebuilds_the_table_from_stored_embeddings(pgvector_db, corpus, embedding_server, settings):
    # given embeddings stored while the table lost them (a deployment moving from memory)
    _corpus_of_topics(corpus, documents=3)
    embedded = passage_embed_pending(corpus=corpus)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {pgvector.TABLE}")  # noqa: S608
    # when the command runs, and runs again
    first, second = io.StringIO(), io.StringIO()
    call_command("vector_store_sync", stdout=first)
    call_command("vector_store_sync", "--corpus", str(corpus.pk), "--user", "alice", stdout=second)
    # then every embedding has its row again, the second run had nothing to write, and searches
    # agree with memory
    assert json.loads(first.getvalue()) == {"written": embedded, "removed": 0}
    assert json.loads(second.getvalue()) == {"written": 0, "removed": 0}
    assert _vector_rows(corpus_id=corpus.pk) == embedded
    memory, database = _search_both(settings, corpus, query=QUERIES[0], top_k=5, mode="dense")
    _assert_same_hits(memory, database)


def _index_definitions() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [pgvector.TABLE])
        return dict(cursor.fetchall())


def test_sync_drops_the_index_of_a_model_no_passage_uses(hnsw, corpus, embedding_server):
    # given an embedded corpus, and the index an earlier embedding model left behind
    _corpus_of_topics(corpus, documents=2)
    passage_embed_pending(corpus=corpus)
    current = pgvector.hnsw_index_name("openai:bag-of-words", 64)
    stale = pgvector.hnsw_index_name("openai:retired-model", 1536)
    pgvector.ensure_hnsw_index(connection, model="openai:retired-model", dims=1536)
    assert {current, stale} <= set(_index_definitions())
    # when the table is synced
    out = io.StringIO()
    call_command("vector_store_sync", stdout=out)
    # then the stale index is gone, named in the output, and the model in use keeps its own
    assert json.loads(out.getvalue()) == {"written": 0, "removed": 0, "indexes_dropped": [stale]}
    assert current in _index_definitions() and stale not in _index_definitions()


def test_reindex_builds_the_index_again_with_the_given_parameters(hnsw, corpus, embedding_server, settings):
    # given an embedded corpus whose index was built with the default parameters
    _corpus_of_topics(corpus, documents=2)
    passage_embed_pending(corpus=corpus)
    name = pgvector.hnsw_index_name("openai:bag-of-words", 64)
    assert "m='32'" in _index_definitions()[name] and "ef_construction='128'" in _index_definitions()[name]
    # when the parameters change and the command rebuilds the indexes
    settings.SEARCH_PGVECTOR_HNSW_M = 24
    settings.SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION = 96
    out = io.StringIO()
    call_command("vector_store_sync", "--reindex", stdout=out)
    # then the index is the same one, built with them, and searches still use it
    assert json.loads(out.getvalue())["indexes_dropped"] == [name]
    definition = _index_definitions()[name]
    assert "m='24'" in definition and "ef_construction='96'" in definition
    settings.SEARCH_VECTOR_BACKEND = "pgvector"
    assert passage_search(corpus=corpus, query=QUERIES[0], top_k=3, mode="dense")


def test_an_unfiltered_search_walks_the_hnsw_index(hnsw, corpus, embedding_server, settings):
    # given an embedded corpus and its model's HNSW index
    _corpus_of_topics(corpus, documents=3)
    passage_embed_pending(corpus=corpus)
    index = vector_store().dense(corpus_id=corpus.pk, model="openai:bag-of-words", version=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [pgvector.TABLE])
        assert pgvector.hnsw_index_name("openai:bag-of-words", 64) in {row[0] for row in cursor.fetchall()}
        # when the planner is told the table is large (a few dozen rows would be read whole)
        cursor.execute("SET LOCAL enable_seqscan = off")
        query = index.prepare(embedding_server_vector("backups kept"))
        cursor.execute(
            "EXPLAIN " + index.nearest_sql(filtered=False),
            index.nearest_params(query, limit=10, document_ids=None),
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # then the search's own statement uses the index
    assert pgvector.hnsw_index_name("openai:bag-of-words", 64) in plan


def test_a_filtered_walk_of_the_index_still_returns_k_rows(hnsw, corpus, embedding_server, settings):
    # given a corpus of many documents, and the planner left only the HNSW index
    documents = _corpus_of_topics(corpus, documents=12)
    passage_embed_pending(corpus=corpus)
    index = vector_store().dense(corpus_id=corpus.pk, model="openai:bag-of-words", version=0)
    wanted = [documents[7]]
    k = Passage.objects.filter(document_id__in=wanted).count() - 1
    query = index.prepare(embedding_server_vector("backups"))
    with connection.cursor() as cursor:
        # (in the test's transaction, rolled back after it)
        cursor.execute(f"DROP INDEX {pgvector.TABLE}_document, {pgvector.TABLE}_corpus_model")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN " + index.nearest_sql(filtered=True),
            index.nearest_params(query, limit=k, document_ids=wanted),
        )
        assert pgvector.hnsw_index_name("openai:bag-of-words", 64) in "\n".join(
            r[0] for r in cursor.fetchall()
        )
    # when a search filtered to one document asks for k rows
    with CaptureQueriesContext(connection) as queries:
        hits = index.top(query, limit=k, document_ids=wanted)
    # then the iterative index scan found them in one statement (no exact fallback)
    assert len(hits) == k
    assert {pid for pid, _ in hits} <= set(
        Passage.objects.filter(document_id__in=wanted).values_list("pk", flat=True)
    )
    assert sum("WITH nearest" in q["sql"] for q in queries.captured_queries) == 1


def embedding_server_vector(text: str):
    import numpy as np

    from tests.embedding_server import bag_of_words_vector

    vector = np.asarray(bag_of_words_vector(text), dtype=np.float32)
    return vector / np.linalg.norm(vector)
