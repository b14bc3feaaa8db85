"""Searches keep a corpus's index_version until a change is notified (PostgreSQL), or read it
every time (SQLite)."""

import threading
import time

import pytest
from django.db import connection, connections

from corpora.models import Corpus
from corpora.retrieval.versions import APPLICATION_NAME, IndexVersions, index_versions
from corpora.selectors import _index_version, passage_search
from corpora.services import corpus_bump_index_version
from tests.factories import ingest_text

postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")


def _eventually(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def _listening(corpus) -> bool:
    _index_version(corpus.pk)  # starts the listener on first use
    return _eventually(index_versions.listening)


def _set_version_silently(corpus_id: int, version: int) -> None:
    """What no code path does: change the version without the bump's notification."""
    Corpus.objects.filter(pk=corpus_id).update(index_version=version)


def _in_another_thread(fn) -> None:
    def run():
        try:
            fn()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)


@pytest.fixture
def listening_corpus(user):
    """A committed corpus whose version this process keeps, and that version."""
    corpus = Corpus.objects.create(creator=user, name="c")
    assert _listening(corpus)
    return corpus, _index_version(corpus.pk)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_kept_version_moves_when_another_connection_commits_a_bump(listening_corpus):
    corpus, kept = listening_corpus

    # a silent change is not seen: the version is kept, no statement per search
    _set_version_silently(corpus.pk, kept + 10)
    assert _index_version(corpus.pk) == kept

    # a bump committed by another connection reaches this process within moments
    _in_another_thread(lambda: corpus_bump_index_version(corpus_id=corpus.pk))
    assert _eventually(lambda: _index_version(corpus.pk) == kept + 11)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_ingest_in_another_thread_is_found_by_the_next_search(user):
    corpus = Corpus.objects.create(creator=user, name="c")
    ingest_text(corpus, "a.txt", "The licensee shall indemnify the licensor.", schedule_embedding=False)
    assert _listening(corpus)
    assert passage_search(corpus=corpus, query="escrow", mode="lexical") == []

    _in_another_thread(
        lambda: ingest_text(corpus, "b.txt", "Source code is held in escrow.", schedule_embedding=False)
    )

    assert _eventually(lambda: bool(passage_search(corpus=corpus, query="escrow", mode="lexical")))


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_nothing_is_kept_while_the_listener_is_down_and_it_listens_again(listening_corpus):
    corpus, kept = listening_corpus

    # when the listener's connection is cut
    with connection.cursor() as cursor:
        cursor.execute(
            # this database's listener only: other processes on the server listen too
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            [APPLICATION_NAME],
        )
        assert cursor.fetchall() == [(True,)]
    _set_version_silently(corpus.pk, kept + 5)

    # then the silent change is read (nothing was kept across the loss) once it notices, and
    # it listens again
    assert _eventually(lambda: _index_version(corpus.pk) == kept + 5)
    assert _eventually(index_versions.listening)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite reads every time")
def test_on_sqlite_every_search_reads_the_version(user):
    corpus = Corpus.objects.create(creator=user, name="c")
    before = _index_version(corpus.pk)

    _set_version_silently(corpus.pk, before + 3)

    assert _index_version(corpus.pk) == before + 3


@postgres_only
def test_a_version_is_kept_only_while_listening_and_at_most_max_age(settings, db):
    versions = IndexVersions(max_age=0.3)
    reads = []

    def read() -> int:
        reads.append(1)
        return len(reads)

    try:
        assert versions.get(1, read) == 1  # starts its listener; not kept before it listens
        assert _eventually(versions.listening)
        assert versions.get(1, read) == 2
        assert versions.get(1, read) == 2  # kept
        time.sleep(0.35)
        assert versions.get(1, read) == 3  # older than max_age: read again
        versions.forget(1)
        assert versions.get(1, read) == 4  # this process bumped it: read again
        settings.SEARCH_INDEX_VERSION_LISTEN = False
        assert versions.get(1, read) == 5 and versions.get(1, read) == 6  # switched off: always read
    finally:
        versions.stop()
