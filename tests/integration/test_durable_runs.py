"""Durable runs through real worker processes, Redis and PostgreSQL: SIGKILL a worker mid-run
and the report still completes with every finding; restart Redis mid-run and the run completes;
a task delivered twice runs and finalizes once."""

import random
import re
import signal
import subprocess
import time

import pytest
import redis
from django.db import connection

from notifications.models import Notification
from research.models import ReportStatus, ResearchReport
from research.services import report_start, reports_reap_stalled
from tasks.research import run_research
from tests.chat_server import ChatServer, RoleScript, role_of, tool_results
from tests.factories import ingest_samples
from tests.integration.workers import broker_for_this_process, start_worker, stop, wait_for, worker_env

pytestmark = pytest.mark.django_db(transaction=True)

BROKER_URL = "redis://127.0.0.1:6379/13"
KILL_TRIALS = 2  # bench/durability.py runs the full 20
FINDINGS = 6
RESPONSE_SECONDS = 0.3


class SlowResearcher:
    """A researcher that searches once, records FINDINGS findings one per request, then
    finishes; every answer takes RESPONSE_SECONDS, so a run lasts a few seconds."""

    def __call__(self, body):
        results = tool_results(body)
        if not results:
            return {
                "tool_calls": [
                    ("search_passages", {"query": "liability termination licence", "mode": "lexical"})
                ]
            }
        sentences = [
            (hit["passage_id"], sentence)
            for hit in results[0]["results"]
            for sentence in re.split(r"(?<=\.)\s+", hit["text"])
            if len(sentence) > 40 and not sentence.startswith("#")
        ]
        done = len(results) - 1
        if done < min(FINDINGS, len(sentences)):
            pid, sentence = sentences[done]
            return {
                "tool_calls": [
                    ("record_finding", {"claim": f"Finding {done}", "quote": sentence, "passage_ids": [pid]})
                ]
            }
        return {"tool_calls": [("finish_direction", {"follow_ups": []})]}


class SlowModel(RoleScript):
    """Every role over HTTP, each answer RESPONSE_SECONDS late."""

    def __init__(self) -> None:
        super().__init__(SlowResearcher())

    def __call__(self, body):
        time.sleep(RESPONSE_SECONDS)
        return super().__call__(body)


def _services_or_skip() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            "runs on PostgreSQL (the CI pass with DATABASE_URL): worker processes share its test database"
        )
    try:
        redis.Redis.from_url(BROKER_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis at 127.0.0.1:6379")


@pytest.fixture
def model_server():
    with ChatServer(SlowModel()) as server:
        yield server


@pytest.fixture
def broker(settings):
    _services_or_skip()
    redis.Redis.from_url(BROKER_URL).flushdb()
    settings.CELERY_BROKER_URL = BROKER_URL
    with broker_for_this_process(BROKER_URL):
        yield BROKER_URL
    redis.Redis.from_url(BROKER_URL).flushdb()


def _env(broker_url: str, model_server: ChatServer, **extra) -> dict[str, str]:
    return worker_env(
        broker_url,
        RESEARCH_MODEL="openai-compatible:slow",
        LLM_BASE_URL=model_server.url,
        LLM_API_KEY="sk-local",
        RESEARCH_LEASE_SECONDS="2",
        **extra,
    )


def _findings(report_id: int) -> list[tuple[int, str]]:
    report = ResearchReport.objects.get(pk=report_id)
    return [(f["passage_id"], f["quote"]) for f in report.findings]


def _terminal(report_id: int) -> ResearchReport | None:
    report = ResearchReport.objects.get(pk=report_id)
    return report if report.is_terminal else None


@pytest.mark.parametrize("trial", range(KILL_TRIALS))
def test_sigkill_mid_run_loses_no_finding(broker, model_server, user, corpus, settings, trial):
    ingest_samples(corpus)
    settings.RESEARCH_STALL_SECONDS = 2
    kill_after = random.Random(trial).randint(1, 3)
    first = start_worker(_env(broker, model_server))
    try:
        report = report_start(user=user, corpus=corpus, prompt=f"Research liability (trial {trial})")
        wait_for(
            lambda: len(_findings(report.pk)) >= kill_after, timeout=60, message=f"{kill_after} findings"
        )
        stop(first, signal.SIGKILL)  # mid-run: no cleanup, no ack
    finally:
        stop(first, signal.SIGKILL)
    before = _findings(report.pk)
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.RUNNING

    second = start_worker(_env(broker, model_server))
    try:
        time.sleep(settings.RESEARCH_STALL_SECONDS + 0.5)
        assert reports_reap_stalled()["resumed"] == 1  # what beat does every minute
        finished = wait_for(lambda: _terminal(report.pk), timeout=90, message="the resumed run to end")
    finally:
        stop(second)

    assert finished.status == ReportStatus.COMPLETED, finished.error
    assert finished.retry_count == 1
    cited = {(c["passage_id"], c["quote"]) for c in finished.citations}
    assert set(before) <= cited, "a finding recorded before the kill is missing from the report"
    assert [(f["passage_id"], f["quote"]) for f in finished.findings][: len(before)] == before
    assert Notification.objects.filter(report=finished).count() == 1
    # the resumed run went on from its checkpoint: it did not plan again
    roles = [role_of(r["body"]) for r in model_server.requests]
    assert roles.count("planner") == 1
    assert [e["tool"] for e in finished.tool_call_log].count("record_plan") == 1


def test_a_redis_restart_mid_run_does_not_stop_the_run(model_server, user, corpus, settings, tmp_path):
    _services_or_skip()
    ingest_samples(corpus)
    port = 6391
    server_cmd = [
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    redis_server = subprocess.Popen(server_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_for(lambda: _ping(url), timeout=10, message="redis")
        settings.CELERY_BROKER_URL = url
        worker = start_worker(_env(url, model_server))
        try:
            with broker_for_this_process(url):
                report = report_start(user=user, corpus=corpus, prompt="Research liability")
            wait_for(lambda: len(_findings(report.pk)) >= 2, timeout=60, message="two findings")
            redis_server.terminate()
            redis_server.wait(timeout=10)
            redis_server = subprocess.Popen(server_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda: _ping(url), timeout=10, message="redis again")
            finished = wait_for(lambda: _terminal(report.pk), timeout=90, message="the run to end")
        finally:
            stop(worker)
    finally:
        redis_server.terminate()
        redis_server.wait(timeout=10)
    assert finished.status == ReportStatus.COMPLETED, finished.error
    assert len(finished.findings) == FINDINGS


class RedisServer:
    """A redis-server of the test's own on a fixed port, restartable mid-run."""

    def __init__(self, port: int) -> None:
        self.url = f"redis://127.0.0.1:{port}/0"
        self.command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        self.command += ["--appendonly", "no"]
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: _ping(self.url), timeout=10, message="redis")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()


def test_a_threads_worker_survives_two_redis_restarts_and_keeps_taking_runs(
    model_server, user, corpus, settings, tmp_path
):
    # Given a worker as the README runs it (--pool threads) and a run in progress
    _services_or_skip()
    ingest_samples(corpus)
    server = RedisServer(6392)
    server.start()
    log = tmp_path / "worker.log"
    settings.CELERY_BROKER_URL = server.url
    try:
        worker = start_worker(_env(server.url, model_server), pool="threads", concurrency=4, log=log)
        try:
            finished = []
            for restart in range(2):
                with broker_for_this_process(server.url):
                    report = report_start(user=user, corpus=corpus, prompt=f"Research liability ({restart})")
                wait_for(lambda r=report: len(_findings(r.pk)) >= 2, timeout=60, message="two findings")
                # When Redis restarts mid-run (an unacknowledged message in the worker's hands)
                server.restart()
                finished.append(wait_for(lambda r=report: _terminal(r.pk), timeout=120, message="the run"))
            # Then the same worker process takes a run started afterwards
            with broker_for_this_process(server.url):
                report = report_start(user=user, corpus=corpus, prompt="Research liability (after)")
            finished.append(wait_for(lambda: _terminal(report.pk), timeout=120, message="the run after"))
            assert worker.poll() is None, log.read_text()[-3000:]
        finally:
            stop(worker)
    finally:
        server.stop()
    assert [r.status for r in finished] == [ReportStatus.COMPLETED] * 3, [r.error for r in finished]
    assert [len(r.findings) for r in finished] == [FINDINGS] * 3
    assert "Unrecoverable error" not in log.read_text()


def test_a_task_delivered_twice_runs_and_finalizes_once(broker, model_server, user, corpus):
    ingest_samples(corpus)
    worker = start_worker(_env(broker, model_server), pool="threads", concurrency=2)
    try:
        report = report_start(user=user, corpus=corpus, prompt="Research liability")  # one delivery
        run_research.delay(report.pk)  # and a duplicate, as a broker may send
        finished = wait_for(lambda: _terminal(report.pk), timeout=90, message="the run to end")
        time.sleep(1)  # let the duplicate finish too
    finally:
        stop(worker)
    assert finished.status == ReportStatus.COMPLETED
    searches = [e for e in finished.tool_call_log if e["tool"] == "search_passages"]
    assert len(searches) == 1
    assert len(finished.findings) == FINDINGS
    assert Notification.objects.filter(report=finished).count() == 1


def _ping(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False
