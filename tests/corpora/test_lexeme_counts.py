"""PostgreSQL keeps, per corpus, how many passages hold each lexeme (corpora_lexeme_count, kept
by triggers in the transaction that writes the passages: corpora/retrieval/schema.py), so that
BM25's document frequencies are an indexed read instead of a scan of every passage holding the
term. Whatever writes or deletes passages, the stored counts are the ones the passages' own
tsvectors give."""

import threading

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from corpora.models import Corpus, Passage
from corpora.retrieval.lexical import term_statistics
from corpora.selectors import passage_search, term_frequencies
from corpora.services import corpus_bump_index_version, corpus_create, corpus_delete, document_delete
from tests.factories import ingest_samples, ingest_text

CLAUSES = [
    "The supplier shall maintain insurance against product liability claims.",
    "Either party may terminate this agreement for convenience on ninety days notice.",
    "Liability is capped at the fees paid in the twelve months before the claim.",
    "Confidential information shall be returned or destroyed when the agreement ends.",
]


@pytest.fixture
def postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL keeps lexeme counts; FTS5 counts from its own index")


def _stored() -> tuple[dict, dict]:
    """({(corpus, lexeme): passages}, {corpus: (passages, id sum, tsvector positions)}) as the
    triggers keep them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT corpus_id, lexeme, passages FROM corpora_lexeme_count WHERE passages <> 0")
        lexemes = {(c, lexeme): n for c, lexeme, n in cursor.fetchall()}
        cursor.execute(
            "SELECT corpus_id, passages, id_sum, positions FROM corpora_passage_tally WHERE passages <> 0"
        )
        tally = {c: (n, int(ids), int(k)) for c, n, ids, k in cursor.fetchall()}
    return lexemes, tally


def _counted() -> tuple[dict, dict]:
    """The same, computed afresh from the passages and their tsvectors."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.corpus_id, l, count(*) FROM corpora_passage p, "
            "unnest(tsvector_to_array(p.search_vector)) AS l GROUP BY 1, 2"
        )
        lexemes = {(c, lexeme): n for c, lexeme, n in cursor.fetchall()}
        cursor.execute(
            "SELECT corpus_id, count(*), sum(id), "
            "sum((SELECT sum(cardinality(u.positions)) FROM unnest(search_vector) u)) "
            "FROM corpora_passage GROUP BY 1"
        )
        tally = {c: (n, int(ids), int(k)) for c, n, ids, k in cursor.fetchall()}
    return lexemes, tally


def _document(i: int, words: int = 40) -> str:
    body = " ".join(f"{CLAUSES[(i + k) % len(CLAUSES)]} Clause {i}-{k}." for k in range(words // 10))
    return f"# Agreement {i}\n\n{body}\n"


def test_ingestion_and_deletion_keep_the_counts(postgres, user, corpus):
    # given two corpora with documents
    other = corpus_create(creator=user, name="Other")
    ingest_samples(corpus, schedule_embedding=False)
    for i in range(3):
        ingest_text(other, f"a{i}.md", _document(i), schedule_embedding=False)
    # then the stored counts are the passages' own, corpus by corpus
    assert _stored() == _counted()
    assert {c for c, _ in _stored()[0]} == set(_stored()[1]) == {corpus.pk, other.pk}
    # when a document is deleted, and a passage's text edited in place
    document_delete(user=user, document=other.documents.first())
    passage = Passage.objects.filter(corpus=corpus).first()
    passage.text = "A zeppelin clause about indemnity."
    passage.save(update_fields=["text"])
    # then they still are
    assert _stored() == _counted()
    assert _stored()[0][(corpus.pk, "zeppelin")] == 1
    # and a deleted corpus takes its counts with it, zeros included
    corpus_delete(user=user, corpus=other)
    with connection.cursor() as cursor:
        for table in ("corpora_lexeme_count", "corpora_passage_tally"):
            cursor.execute(f"SELECT count(*) FROM {table} WHERE corpus_id = %s", [other.pk])  # noqa: S608
            assert cursor.fetchone()[0] == 0
    assert _stored() == _counted()


def test_a_term_of_one_lexeme_is_read_and_one_of_several_is_counted(postgres, corpus, settings):
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 1  # frequencies from the database, not a term index
    text = "The co-operation clause. Cooperation and operation.\n\nAnother co-operation.\n"
    ingest_text(corpus, "a.md", _document(1, words=600) + text, schedule_embedding=False)
    assert corpus.passages.count() > 1
    term_statistics.clear()
    with CaptureQueriesContext(connection) as captured:
        words = ["operation", "co-operation", "the", "zebra"]
        frequencies, rows = term_frequencies(corpus=corpus, words=words)
    scans = [q["sql"] for q in captured.captured_queries if "count(*)" in q["sql"] and "@@" in q["sql"]]
    # a stopword holds no passage, an unknown word none, and only the hyphenated word (three
    # lexemes for PostgreSQL, ANDed) is counted in the full-text index
    assert frequencies["the"] == frequencies["zebra"] == 0
    assert len(scans) == 1
    with connection.cursor() as cursor:
        for word in ("operation", "co-operation"):
            cursor.execute(
                "SELECT count(*) FROM corpora_passage "
                "WHERE corpus_id = %s AND search_vector @@ plainto_tsquery('english', %s)",
                [corpus.pk, word],
            )
            assert frequencies[word] == cursor.fetchone()[0] > 0
    assert rows == corpus.passages.count()


def test_the_migration_counts_the_passages_stored_before_it(transactional_db, user):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL keeps lexeme counts")
    corpus = corpus_create(creator=user, name="Before")
    ingest_samples(corpus, schedule_embedding=False)
    # when the counts' migration is reverted, passages are added, and it is applied again
    call_command("migrate", "corpora", "0003", verbosity=0)
    ingest_text(corpus, "later.md", _document(9), schedule_embedding=False)
    call_command("migrate", "corpora", verbosity=0)
    # then every passage is counted, those ingested without the table included
    assert _stored() == _counted()
    assert (corpus.pk, "agreement") in _stored()[0]
    assert _stored()[1][corpus.pk][0] == corpus.passages.count()


def test_concurrent_writers_of_one_corpus_keep_exact_counts(transactional_db, user):
    """Ingestions and a deletion in the same corpus at once, each in its own connection and
    transaction: none deadlocks or fails, and the counts are exact afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL keeps lexeme counts")
    corpus = corpus_create(creator=user, name="Busy")
    doomed = ingest_text(corpus, "doomed.md", _document(100, words=600), schedule_embedding=False).document
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def ingest(first: int) -> None:
        try:
            start.wait()
            mine = Corpus.objects.get(pk=corpus.pk)
            for i in range(first, first + 4):
                # 600 words a document: several passages, in several insert batches for some
                ingest_text(mine, f"d{i}.md", _document(i, words=600), schedule_embedding=False)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    def delete() -> None:
        try:
            start.wait()
            document_delete(user=user, document=doomed)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ingest, args=(k * 10,)) for k in range(3)]
    threads.append(threading.Thread(target=delete))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert corpus.documents.count() == 12
    assert _stored() == _counted()


def test_a_search_after_a_version_bump_does_not_count_the_corpus(postgres, corpus, settings):
    """Every embedding batch bumps the corpus's index_version; on a corpus past the term
    index's bound, the next search reads the stored tally instead of aggregating the corpus's
    passages (~400 ms each at a million)."""
    ingest_text(corpus, "a.md", _document(1, words=600), schedule_embedding=False)
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = 1
    passage_search(corpus=corpus, query="insurance liability", top_k=3, mode="lexical")
    corpus_bump_index_version(corpus_id=corpus.pk)
    with CaptureQueriesContext(connection) as captured:
        hits = passage_search(corpus=corpus, query="insurance liability", top_k=3, mode="lexical")
        frequencies, rows = term_frequencies(corpus=corpus, words=["insurance"])
    aggregates = [q["sql"] for q in captured.captured_queries if "count(" in q["sql"].lower()]
    assert hits and aggregates == []
    assert rows == corpus.passages.count() and frequencies["insurance"] > 0
