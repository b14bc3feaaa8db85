"""Many research runs at once on one worker process: N runs against an OpenAI-compatible model
server that takes a fixed time per answer, through one real `celery worker --pool threads
--concurrency N` on Redis. Wall time, throughput against the ideal latency-bound throughput, and
the worker's memory per concurrent run.

    .venv/bin/python bench/concurrency.py [--n 1 10 50 100] [--latency 1.0] [--findings 3]
        [--database auto|sqlite|postgres] [--postgres URL] [--redis URL] [--out FILE]

Prints one JSON object. Works in its own fresh temporary database (SQLite file, or a database
created on the PostgreSQL server) and its own Redis database number, flushed before and after."""

import argparse
import atexit
import contextlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from common import temporary_postgres

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/11"
TARGET_RATIO = 0.8
TARGET_N = 100
# Connections the benchmark needs besides the worker's database threads: this process's two,
# the worker's main thread, and room for whatever else is connected to the server.
CONNECTION_HEADROOM = 5
# The worker's database connections: its research run loop's database threads, whatever N.
WORKER_DATABASE_THREADS = 4
SEARCH_QUERY = "liability termination licence"
METHOD = (
    "One real worker subprocess per N: `python -m celery -A config worker --pool threads "
    "--concurrency N --without-gossip --without-mingle` (config.settings.local, DEBUG=0, "
    "EMBEDDING_BACKEND=none, RESEARCH_MODEL=openai-compatible:slow, LLM_BASE_URL = a threaded "
    "OpenAI-compatible HTTP server in the benchmark process). Every answer of that server sleeps "
    "model_latency_seconds and follows a fixed script per run and role: the planner plans one "
    "sub-question; the researcher calls search_passages, then record_finding with a verbatim "
    "sentence of a returned passage, once per finding, then finish_direction; the writer cites "
    "every finding; the critic is satisfied: requests_per_run model requests, so a run can take no less than "
    "requests_per_run * latency. Each run has its own corpus (two short sample contracts, "
    "tests/factories.py) since one active report per user and corpus is allowed. Before each "
    "measurement one warm-up run goes through the fresh worker (it is then up, its imports done); "
    "then N reports are created by research.services.report_start in one transaction, so their "
    "on-commit enqueues go to Redis back to back. wall = first task publish (Celery "
    "before_task_publish in this process) -> the last report's completed_at (the database "
    "polled every 0.25 s until all N are terminal). throughput = N / wall; ideal = N / "
    "(requests_per_run * latency); ratio = throughput / ideal. Each report must end COMPLETED "
    "with exactly `findings` findings. RSS = VmRSS from /proc of the worker and its children, "
    "sampled every 0.1 s: idle after the warm-up, peak while the N runs go; "
    "rss_per_run = (peak - idle) / N. run_overhead = a run's started_at -> completed_at minus "
    "requests_per_run * latency (the engine's own time per run, under this load); queue_wait = "
    "first publish -> the run's started_at. model_in_flight_max = the most model requests the "
    "server held at once (N when every worker thread is really running a run). "
    "cpu_bound_ratio_ceiling = (requests_per_run * latency) / worker_cpu_seconds: the ratio the "
    "worker's CPU allows on one interpreter. worker_database_connections_peak (PostgreSQL only) "
    "= the most connections to the database besides the benchmark's own, sampled every 0.1 s."
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1, 10, 50, 100], help="concurrent runs")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model answer")
    parser.add_argument("--findings", type=int, default=3, help="record_finding calls per run")
    parser.add_argument(
        "--database",
        choices=("auto", "sqlite", "postgres"),
        default="auto",
        help="auto: PostgreSQL when its max_connections leaves room for the worker's database threads, "
        "else a SQLite file (WAL)",
    )
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, metavar="URL", help="PostgreSQL server")
    parser.add_argument("--redis", default=DEFAULT_REDIS, metavar="URL", help="broker (a db of its own)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args(argv)


# --- Fresh databases and Django ---------------------------------------------------------------
def temporary_sqlite(name: str) -> str:
    folder = tempfile.mkdtemp(prefix="deepcite-bench-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return f"sqlite:///{Path(folder) / name}"


def postgres_room(server_url: str) -> tuple[int, int] | None:
    """(max_connections, connections in use) on the server, or None if it is unreachable."""
    try:
        import psycopg

        with psycopg.connect(server_url, autocommit=True, connect_timeout=3) as admin:
            limit = int(admin.execute("SHOW max_connections").fetchone()[0])
            used = int(admin.execute("SELECT count(*) FROM pg_stat_activity").fetchone()[0])
            return limit, used
    except Exception:
        return None


def base_env(database_url: str, broker_url: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "CELERY_BROKER_URL": broker_url,
        "EMBEDDING_BACKEND": "none",
        "LOG_LEVEL": "WARNING",
        # A worker runs with DEBUG off: no per-query SQL capture growing connection.queries.
        "DEBUG": "0",
        "RESEARCH_DATABASE_THREADS": str(WORKER_DATABASE_THREADS),
        # One user starts all N runs: the per-user cap on active runs (3 by default) is lifted.
        "RESEARCH_MAX_ACTIVE_RUNS_PER_USER": "0",
    }


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url, socket_connect_timeout=2).flushdb()


def database_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("select sqlite_version()")
            return f"sqlite {cursor.fetchone()[0]}"
        cursor.execute("show server_version")
        return f"postgresql {cursor.fetchone()[0]}"


def machine() -> dict[str, Any]:
    packages = {}
    for name in ("django", "celery", "pydantic-ai-slim", "openai", "asgiref"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            packages[name] = importlib.metadata.version(name)
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": packages,
        # Other work shares the machine; its load drifts the figures.
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


# --- The model server -------------------------------------------------------------------------
class ScriptedResearcher:
    """The model's "mind" for one run, read from the request, for each role: the planner plans
    the request as one sub-question; the researcher searches once, records `findings` findings
    (a verbatim sentence of a passage the search returned, one per request), then finishes; the
    writer cites every finding; the critic is satisfied. Every answer takes `latency` seconds."""

    def __init__(self, *, latency: float, findings: int) -> None:
        self.latency = latency
        self.findings = findings

    @property
    def requests_per_run(self) -> int:
        return self.findings + 2 + 3  # the researcher's, and the planner, writer and critic

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(self.latency)
        names = {tool["function"]["name"] for tool in body.get("tools", [])}
        if "submit_plan" in names:
            return {"tool_calls": [("submit_plan", {"sub_questions": [{"question": SEARCH_QUERY}]})]}
        if "submit_report" in names:
            return {"tool_calls": [("submit_report", {"markdown": _draft(body)})]}
        if "submit_critique" in names:
            return {"tool_calls": [("submit_critique", {"satisfied": True})]}
        return self.answer(tool_results(body))

    def answer(self, results: list[Any]) -> dict[str, Any]:
        """The next tool call, given the tool results so far (oldest first)."""
        if not results:
            return {"tool_calls": [("search_passages", {"query": SEARCH_QUERY, "mode": "lexical"})]}
        sentences = [
            (hit["passage_id"], sentence)
            for hit in results[0]["results"]
            for sentence in re.split(r"(?<=\.)\s+", hit["text"])
            if len(sentence) > 40 and not sentence.startswith("#")
        ]
        done = len(results) - 1
        if done < min(self.findings, len(sentences)):
            pid, sentence = sentences[done]
            args = {"claim": f"Finding {done}", "quote": sentence, "passage_ids": [pid]}
            return {"tool_calls": [("record_finding", args)]}
        return {"tool_calls": [("finish_direction", {"follow_ups": []})]}


def _draft(body: dict[str, Any]) -> str:
    """The writer's report: every finding in the data of its prompt, cited."""
    text = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    start, end = text.find("<research_data>"), text.find("</research_data>")
    findings = (
        json.loads(text[start + len("<research_data>") : end]).get("findings", []) if start >= 0 else []
    )
    lines = ["# Report", ""] + [f'- <cite findings="{f["id"]}">{f["claim"]}</cite>' for f in findings]
    return "\n".join(lines)


class ModelServer:
    """A threaded HTTP server speaking OpenAI's /v1/chat/completions, answering from a script.
    Unlike http.server's default it keeps a deep accept backlog (a burst of 100 connects must
    not overflow a backlog of 5 and wait out a SYN retry) and counts requests in flight."""

    def __init__(self, script: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.in_flight = 0
        self.in_flight_max = 0
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as providers do
            # Headers and body go out in two writes; with Nagle on, the body waits for the
            # client's delayed ACK of the headers (~40 ms a request), which providers don't add.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server._enter()
                try:
                    answer = script(body)
                finally:
                    server._leave()
                payload = json.dumps(_completion(body, answer)).encode()
                # The durability benchmark kills workers mid-request: their sockets are gone.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _enter(self) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def reset_counters(self) -> None:
        with self._lock:
            self.in_flight_max = self.in_flight
            self.requests = 0

    def __enter__(self) -> "ModelServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    if answer.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments in answer["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if answer.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def tool_results(body: dict[str, Any]) -> list[Any]:
    """The tool results the agent sent back so far, decoded, oldest first."""
    results = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            try:
                results.append(json.loads(message.get("content")))
            except (TypeError, ValueError):
                results.append(message.get("content"))
    return results


# --- Worker processes -------------------------------------------------------------------------
def start_worker(
    env: dict[str, str], *, pool: str, concurrency: int, log: Path | None = None
) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
    ]
    stderr = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 - the child owns it
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,
    )


def stop_worker(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def process_tree(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                queue += [int(child) for child in (task / "children").read_text().split()]
    return found


def _status_field(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its descendants (VmRSS, so shared pages count twice)."""
    return sum(_status_field(p, "VmRSS") for p in process_tree(pid)) / 1024


def tree_threads(pid: int) -> int:
    return sum(_status_field(p, "Threads") for p in process_tree(pid))


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads, live and ended) and its descendants."""
    ticks = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Samples something in a background thread every `interval` s while in the with block."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


class RssSampler(Sampler):
    """A process tree's RSS and thread count; keeps the peaks."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        super().__init__(interval)
        self.pid = pid
        self.peak_mb = 0.0
        self.peak_threads = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, tree_rss_mb(self.pid))
            self.peak_threads = max(self.peak_threads, tree_threads(self.pid))
            self._stop.wait(self.interval)


class ConnectionSampler(Sampler):
    """On PostgreSQL, the most connections to the benchmark's database other than this
    process's own: the worker's, which its research run loop keeps to RESEARCH_DATABASE_THREADS."""

    def __init__(self, interval: float = 0.1) -> None:
        super().__init__(interval)
        self.peak: int | None = None

    def _run(self) -> None:
        from django.db import connection

        if connection.vendor != "postgresql":
            return
        try:
            with connection.cursor() as cursor:
                while not self._stop.is_set():
                    cursor.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid()"
                    )
                    # Less one: the main thread's connection, which polls the reports.
                    self.peak = max(self.peak or 0, cursor.fetchone()[0] - 1)
                    self._stop.wait(self.interval)
        finally:
            connection.close()


@contextlib.contextmanager
def publish_clock() -> Iterator[list[float]]:
    """time.time() of every task this process publishes to the broker."""
    from celery.signals import before_task_publish

    stamps: list[float] = []

    def record(**_: Any) -> None:
        stamps.append(time.time())

    before_task_publish.connect(record, weak=False)
    try:
        yield stamps
    finally:
        before_task_publish.disconnect(record)


def wait_terminal(report_ids: list[int], *, timeout: float, interval: float = 0.25) -> bool:
    from research.models import ResearchReport

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = ResearchReport.objects.filter(
            pk__in=report_ids, status__in=["COMPLETED", "FAILED", "CANCELLED"]
        ).count()
        if ended == len(report_ids):
            return True
        time.sleep(interval)
    return False


# --- One measurement --------------------------------------------------------------------------
def corpora_for_runs(count: int) -> tuple[Any, list[Any]]:
    """One user with `count` + 1 small corpora (the last for warm-ups): one active report per
    user and corpus is allowed, so concurrent runs each need a corpus of their own."""
    from django.contrib.auth import get_user_model

    from corpora.services import corpus_create
    from tests.factories import ingest_samples

    user = get_user_model().objects.create_user(username="bench-concurrency")
    corpora = []
    for i in range(count + 1):
        corpus = corpus_create(creator=user, name=f"concurrency-{i}")
        ingest_samples(corpus, schedule_embedding=False)
        corpora.append(corpus)
    return user, corpora


def start_reports(user: Any, corpora: list[Any], label: str) -> tuple[list[int], list[float]]:
    from django.db import transaction

    from research.services import report_start

    with publish_clock() as published, transaction.atomic():
        reports = [
            report_start(user=user, corpus=corpus, prompt=f"Research liability and termination ({label} {i})")
            for i, corpus in enumerate(corpora)
        ]
    return [r.pk for r in reports], published


def measure(
    *,
    n: int,
    user: Any,
    corpora: list[Any],
    env: dict[str, str],
    server: ModelServer,
    script: ScriptedResearcher,
    log: Path | None,
) -> dict[str, Any]:
    from research.models import ResearchReport

    ideal_run = script.requests_per_run * script.latency
    worker = start_worker(env, pool="threads", concurrency=n, log=log)
    try:
        # Warm-up: proves the worker consumes, and does its first imports and connections.
        [warm_id], _ = start_reports(user, [corpora[-1]], f"warm-up n={n}")
        if not wait_terminal([warm_id], timeout=120):
            raise RuntimeError(f"the warm-up run for n={n} did not end within 120 s")
        time.sleep(0.5)
        rss_idle = tree_rss_mb(worker.pid)
        threads_idle = tree_threads(worker.pid)
        server.reset_counters()
        load_before = os.getloadavg()[0]
        cpu_before = tree_cpu_seconds(worker.pid)
        with RssSampler(worker.pid) as sampler, ConnectionSampler() as connections:
            report_ids, published = start_reports(user, corpora[:n], f"n={n}")
            timeout = 120 + 3 * ideal_run + n * 2
            all_ended = wait_terminal(report_ids, timeout=timeout)
        worker_cpu = tree_cpu_seconds(worker.pid) - cpu_before
        in_flight_max = server.in_flight_max
        model_requests = server.requests
    finally:
        stop_worker(worker)

    reports = list(ResearchReport.objects.filter(pk__in=report_ids))
    first_publish = min(published)
    ended = [r.completed_at.timestamp() for r in reports if r.completed_at]
    wall = max(ended) - first_publish if all_ended and ended else None
    ok = [r for r in reports if r.status == "COMPLETED" and len(r.findings) == script.findings]
    overhead = [
        (r.completed_at - r.started_at).total_seconds() - ideal_run
        for r in reports
        if r.started_at and r.completed_at
    ]
    queue_wait = [r.started_at.timestamp() - first_publish for r in reports if r.started_at]
    throughput = n / wall if wall else None
    ideal = n / ideal_run
    return {
        "n": n,
        "wall_seconds": round(wall, 3) if wall else None,
        "throughput_runs_per_second": round(throughput, 4) if throughput else None,
        "ideal_runs_per_second": round(ideal, 4),
        "ratio": round(throughput / ideal, 4) if throughput else None,
        "rss_idle_mb": round(rss_idle, 1),
        "rss_peak_mb": round(sampler.peak_mb, 1),
        "rss_per_run_mb": round(max(0.0, sampler.peak_mb - rss_idle) / n, 2),
        "completed": len(ok),
        "statuses": _count(r.status for r in reports),
        "enqueue_span_seconds": round(max(published) - first_publish, 3),
        "queue_wait_seconds": _spread(queue_wait),
        "run_overhead_seconds": _spread(overhead),
        # CPU the worker spent from the first enqueue until all N ended (polling granularity
        # included): near 1.0 of wall means one core, all the GIL lets one process use, is full.
        "worker_cpu_seconds": round(worker_cpu, 2),
        "worker_cpu_per_run_seconds": round(worker_cpu / n, 3),
        "worker_cpu_utilization": round(worker_cpu / wall, 2) if wall else None,
        # The best ratio this CPU allows: the N runs cannot end before the worker has spent
        # worker_cpu on one interpreter (one GIL), however well their waits overlap.
        "cpu_bound_ratio_ceiling": round(min(1.0, ideal_run / worker_cpu), 4) if worker_cpu else None,
        "worker_database_connections_peak": connections.peak,
        "model_requests": model_requests,
        "model_in_flight_max": in_flight_max,
        "worker_threads_idle": threads_idle,
        "worker_threads_peak": sampler.peak_threads,
        "load_average_1m_before": round(load_before, 2),
    }


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 3),
        "median": round(statistics.median(ordered), 3),
        "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "max": round(ordered[-1], 3),
    }


def choose_database(args: argparse.Namespace) -> tuple[str, str, str]:
    """(kind, why, url) for the benchmark's fresh database."""
    needed = WORKER_DATABASE_THREADS + CONNECTION_HEADROOM
    room = postgres_room(args.postgres) if args.database in ("auto", "postgres") else None
    if args.database == "postgres":
        if room is None:
            sys.exit(f"PostgreSQL at {args.postgres} is not reachable")
        kind, why = "postgres", f"asked for; max_connections={room[0]}, in use={room[1]}, needed~{needed}"
    elif args.database == "auto" and room is not None and room[0] - room[1] >= needed:
        kind, why = "postgres", f"max_connections={room[0]}, in use={room[1]}, needed~{needed}"
    else:
        kind = "sqlite"
        why = (
            "asked for"
            if args.database == "sqlite"
            else "PostgreSQL unreachable"
            if room is None
            else f"PostgreSQL max_connections={room[0]} with {room[1]} in use leaves no room for "
            f"the worker's {WORKER_DATABASE_THREADS} database threads + {CONNECTION_HEADROOM}"
        )
    if kind == "postgres":
        url, drop = temporary_postgres(args.postgres, "deepcite_bench_concurrency")
        atexit.register(drop)
    else:
        url = temporary_sqlite("concurrency.sqlite3")
    return kind, why, url


def main(argv: list[str] | None = None) -> dict[str, Any]:
    # Stopped (a test's timeout, Ctrl-C from a terminal's kill): unwind, so the worker process
    # this started is stopped and the Redis database flushed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(argv)
    kind, why, database_url = choose_database(args)
    flush_redis(args.redis)
    atexit.register(flush_redis, args.redis)
    env = base_env(database_url, args.redis)
    setup_django(env)
    script = ScriptedResearcher(latency=args.latency, findings=args.findings)
    user, corpora = corpora_for_runs(max(args.n))
    log = Path(os.environ["DEEPCITE_WORKER_LOG"]) if os.environ.get("DEEPCITE_WORKER_LOG") else None
    results = []
    with ModelServer(script) as server:
        worker_env = {
            **env,
            "RESEARCH_MODEL": "openai-compatible:slow",
            "LLM_BASE_URL": server.url,
            "LLM_API_KEY": "x",
        }
        for n in args.n:
            results.append(
                measure(
                    n=n, user=user, corpora=corpora, env=worker_env, server=server, script=script, log=log
                )
            )
    at_target = [r for r in results if r["n"] == TARGET_N]
    out: dict[str, Any] = {
        "benchmark": "concurrency",
        "machine": machine(),
        "database": (
            "postgresql (fresh temporary database)"
            if kind == "postgres"
            else "sqlite (fresh temporary file, WAL)"
        ),
        "database_choice": why,
        "database_version": database_version(),
        "broker": args.redis,
        "method": METHOD,
        "model_latency_seconds": args.latency,
        "requests_per_run": script.requests_per_run,
        "findings_per_run": args.findings,
        "results": results,
        "target": (
            f"one worker process: {TARGET_N} concurrent runs at >= {TARGET_RATIO:.0%} of the ideal "
            "latency-bound throughput, with per-run memory reported"
        ),
        # None when N = 100 was not among the measured N (a smoke run, say).
        "met": all(r["completed"] == r["n"] and (r["ratio"] or 0) >= TARGET_RATIO for r in at_target)
        if at_target
        else None,
    }
    text = json.dumps(out)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
