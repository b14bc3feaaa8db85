"""A research run through a real Celery worker process on Redis and PostgreSQL, started the way
the README starts it. Skipped where either service is missing (SQLite runs, a bare laptop)."""

import json
import os
import subprocess
import time

import pytest
import redis
from django.core.management import call_command
from django.db import connection

from corpora.models import Document
from corpora.services import cli_user_ensure, corpus_create
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tasks.embeddings import embed_corpus
from tests.factories import ingest_samples
from tests.integration.workers import broker_for_this_process, start_worker, stop, worker_env

BROKER_URL = os.environ.get("DEEPCITE_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")
WAIT_SECONDS = 90

pytestmark = pytest.mark.django_db(transaction=True)


def _redis_up() -> bool:
    try:
        return bool(redis.Redis.from_url(BROKER_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def broker(settings):
    if connection.vendor != "postgresql":
        pytest.skip(
            "runs on PostgreSQL (the CI pass with DATABASE_URL): worker processes share its test database"
        )
    if not _redis_up():
        pytest.skip(f"needs Redis at {BROKER_URL}")
    redis.Redis.from_url(BROKER_URL).flushdb()
    settings.CELERY_BROKER_URL = BROKER_URL
    with broker_for_this_process(BROKER_URL):
        yield BROKER_URL
    redis.Redis.from_url(BROKER_URL).flushdb()


@pytest.fixture
def worker(broker):
    # The README's worker command, as a production deployment runs it.
    process = start_worker(worker_env(broker), pool="threads", concurrency=4)
    yield process
    stop(process)


def _wait_terminal(report_id: int, worker: subprocess.Popen) -> ResearchReport:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        report = ResearchReport.objects.get(pk=report_id)
        if report.is_terminal:
            return report
        assert worker.poll() is None, "the worker exited"
        time.sleep(0.3)
    raise AssertionError(f"report {report_id} still {report.status} after {WAIT_SECONDS}s")


def test_a_worker_process_runs_the_research_and_the_command_waits_for_it(worker, capsys):
    owner = cli_user_ensure(username="deepcite")
    corpus = corpus_create(creator=owner, name="Samples")
    ingest_samples(corpus)

    # a run queued by the service is picked up by the worker
    report = report_start(user=owner, corpus=corpus, prompt="Research liability caps and governing law")
    finished = _wait_terminal(report.pk, worker)
    assert finished.status == ReportStatus.COMPLETED
    assert finished.citations
    for citation in finished.citations:
        document = Document.objects.get(pk=citation["document_id"])
        assert document.text[citation["start"] : citation["end"]] == citation["quote"]
        assert citation["passage_id"] in finished.retrieved_passage_ids

    # the command enqueues, waits and prints the report
    call_command("research", "--corpus", "Samples", "--json", "When can the licence be terminated?")
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == ReportStatus.COMPLETED
    assert printed["citations"]

    # --no-wait prints only the id; the worker still finishes the run
    call_command("research", "--corpus", "Samples", "--no-wait", "insurance")
    report_id = int(capsys.readouterr().out.strip())
    assert _wait_terminal(report_id, worker).status == ReportStatus.COMPLETED


def test_research_and_embedding_have_queues_of_their_own(broker):
    # Given the two workers compose runs, one per queue, each started alone
    owner = cli_user_ensure(username="deepcite")
    corpus = corpus_create(creator=owner, name="Samples")
    ingest_samples(corpus)
    queued = redis.Redis.from_url(BROKER_URL)

    def only(queue: str) -> subprocess.Popen:
        return start_worker(worker_env(broker), pool="threads", concurrency=2, queues=queue)

    # an embedding worker leaves a research run in the research queue
    embedding = only("embedding")
    try:
        report = report_start(user=owner, corpus=corpus, prompt="Research liability caps")
        time.sleep(3)
        assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED
        assert queued.llen("research") == 1
    finally:
        stop(embedding)
    # a research worker takes the run, and leaves an embedding batch in the embedding queue
    research = only("research")
    try:
        assert _wait_terminal(report.pk, research).status == ReportStatus.COMPLETED
        embed_corpus.delay(corpus.pk)
        time.sleep(3)
        assert queued.llen("embedding") == 1
    finally:
        stop(research)
    # which the embedding worker then takes
    embedding = only("embedding")
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while queued.llen("embedding") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert queued.llen("embedding") == 0
        assert embedding.poll() is None
    finally:
        stop(embedding)
