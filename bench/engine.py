"""Research-engine overhead per step: a 60-step run with an instant scripted model, minus the
model's own time and the retrieval time the run logs, on CUAD contracts (lexical search).

    .venv/bin/python bench/engine.py [--contracts 20] [--runs 5] [--postgres URL] [--out FILE]

Prints one JSON object. Reads ../shared/data/cuad (never copied into the repo) and works in a
fresh temporary SQLite file, or a fresh temporary PostgreSQL database with --postgres."""

import argparse
import atexit
import cProfile
import importlib.metadata
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import percentile, temporary_postgres

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cuad"
TARGET_MS = 10.0
STEPS = 60  # tool-call steps per run: 20 rounds of search -> read_context -> record_finding
SEARCH_TOP_K = 10
QUOTE_CHARS = 160
# One search query per round; legal terms every commercial contract has somewhere.
QUERIES = (
    "governing law",
    "termination for convenience",
    "indemnification",
    "limitation of liability",
    "confidential information",
    "assignment consent",
    "exclusivity",
    "non-compete",
    "audit rights",
    "insurance coverage",
    "warranty disclaimer",
    "intellectual property ownership",
    "license grant",
    "renewal term",
    "notice in writing",
    "payment terms invoice",
    "force majeure",
    "minimum purchase commitment",
    "change of control",
    "dispute resolution arbitration",
)
METHOD = (
    "Each run is a real report: research.services.report_start(depth='standard', max_steps=100) "
    "with its researcher under researcher_agent.override(model=FunctionModel(script)) (the "
    "planner, writer and critic are the offline minds). The report is started the way "
    "production starts it with a broker: CELERY_BROKER_URL=memory:// and Celery's "
    "task_always_eager, so the on-commit enqueue runs the real task (tasks.research.run_research "
    "-> research.engine.run.report_run) synchronously in this thread, where the override's context "
    "variable is visible (the in-process thread pool would not see it and would run the offline "
    "model instead; calling report_run beside it would race it). The script is an async function "
    "that answers at once: request 1 search_passages, then search_passages / read_context / "
    "record_finding (a verbatim quote of a passage a search returned) in turn, one tool call per "
    "request, 60 tool-call steps, then finish_direction. It returns its usage (as a provider "
    "does), so FunctionModel's test-only "
    "token estimate over the whole history is not run. Clocks: run wall = Celery task_prerun -> "
    "task_postrun (QUEUED->RUNNING, the agent loop, finalize); model = the script's own time per "
    "request; retrieval = the sum of duration_ms in the report's tool_call_log (the selector call "
    "itself). overhead_per_step = (wall - model - retrieval) / steps, so it also carries the "
    "run's start, the other roles and finalize. Per step (the researcher's 60 only): the time "
    "from the end of model request k to the start "
    "of request k+1, minus step k's logged retrieval ms (tool dispatch, argument validation, the "
    "log write, the cancel checks, passage views, the next request's assembly). One warm-up run "
    "(first imports, schema building, cold caches) is excluded from the medians and reported apart. "
    "Settings: config.settings.local with DEBUG=0 (as a worker runs), EMBEDDING_BACKEND=none."
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CUAD folder (contracts/)")
    parser.add_argument("--contracts", type=int, default=20, help="first N contracts by file name")
    parser.add_argument("--runs", type=int, default=5, help="measured 60-step runs (after one warm-up)")
    parser.add_argument("--profile", type=int, default=0, help="cProfile one extra run; top N functions")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="run on a fresh temporary database created on this PostgreSQL server "
        "(e.g. postgres://postgres@127.0.0.1:5432/postgres) instead of SQLite",
    )
    return parser.parse_args(argv)


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["EMBEDDING_BACKEND"] = "none"
    # Truthy so research_enqueue hands the run to Celery, which runs it eagerly (see METHOD).
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    os.environ["LOG_LEVEL"] = "WARNING"
    # A worker runs with DEBUG off: no per-query SQL capture in connection.queries.
    os.environ["DEBUG"] = "0"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from config.celery_app import app

    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    call_command("migrate", verbosity=0)


# --- The scripted model ----------------------------------------------------------------------
class Script:
    """An instant model: one tool call per request, chosen from the last tool result, with its
    own entry and exit times kept so the engine's time between requests can be measured."""

    def __init__(self) -> None:
        self.requests = 0
        self.entered: list[float] = []
        self.left: list[float] = []
        self.last_search: list[dict[str, Any]] = []
        self.seen: dict[int, dict[str, Any]] = {}
        self.quoted: list[int] = []
        self.claims: dict[int, str] = {}

    async def __call__(self, messages, info):
        from pydantic_ai.messages import ModelResponse
        from pydantic_ai.usage import RequestUsage

        self.entered.append(time.perf_counter())
        step = self.requests
        self.requests += 1
        self._take(messages[-1])
        part = self._next_call(step)
        # A provider reports usage; without it FunctionModel estimates tokens over the whole
        # history on every request, a test-only cost that is neither model nor engine.
        response = ModelResponse(parts=[part], usage=RequestUsage(input_tokens=1000, output_tokens=50))
        self.left.append(time.perf_counter())
        return response

    def model_ms(self) -> list[float]:
        return [(b - a) * 1000 for a, b in zip(self.entered, self.left, strict=True)]

    def _take(self, message) -> None:
        from pydantic_ai.messages import ModelRequest, ToolReturnPart

        from llms.prompts import tool_content

        if not isinstance(message, ModelRequest):
            return
        for part in message.parts:
            # A tool's result reaches a model as JSON with "<" escaped: read back as its data.
            content = tool_content(part.content) if isinstance(part, ToolReturnPart) else None
            if isinstance(content, dict):
                results = content.get("results", [])
                if part.tool_name == "search_passages":
                    self.last_search = results
                for row in results:
                    self.seen.setdefault(row["passage_id"], row)

    def _next_call(self, step: int):
        from pydantic_ai.messages import ToolCallPart

        call_id = f"call-{step}"
        if step >= STEPS:
            return ToolCallPart("finish_direction", {"follow_ups": []}, tool_call_id=call_id)
        round_, phase = divmod(step, 3)
        if phase == 0:
            args = {"query": QUERIES[round_ % len(QUERIES)], "mode": "lexical", "top_k": SEARCH_TOP_K}
            return ToolCallPart("search_passages", args, tool_call_id=call_id)
        passage = self._unquoted()
        if phase == 1:
            args = {"passage_id": passage["passage_id"] if passage else 1, "before": 1, "after": 1}
            return ToolCallPart("read_context", args, tool_call_id=call_id)
        if passage is None:  # nothing retrieved yet: the engine rejects it, still one step
            args = {"claim": "nothing found", "quote": "nothing found", "passage_ids": [1]}
            return ToolCallPart("record_finding", args, tool_call_id=call_id)
        pid = passage["passage_id"]
        claim = f"The contracts address {QUERIES[round_ % len(QUERIES)]}."
        self.quoted.append(pid)
        self.claims[pid] = claim
        args = {"claim": claim, "quote": _quote(passage["text"]), "passage_ids": [pid]}
        return ToolCallPart("record_finding", args, tool_call_id=call_id)

    def _unquoted(self) -> dict[str, Any] | None:
        """A passage with enough text to quote, from the last search first, not quoted yet."""
        for row in [*self.last_search, *self.seen.values()]:
            if row["passage_id"] not in self.quoted and not row["is_heading"] and len(row["text"]) >= 40:
                return row
        return None


def _quote(text: str) -> str:
    cut = text[:QUOTE_CHARS]
    if len(text) > QUOTE_CHARS and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.strip()


# --- One run ----------------------------------------------------------------------------------
def run_once(*, user, corpus, label: str) -> dict[str, Any]:
    from celery.signals import task_postrun, task_prerun
    from pydantic_ai.models.function import FunctionModel

    from research.engine.researcher import researcher_agent
    from research.models import ResearchReport
    from research.services import report_start

    script = Script()
    clock: dict[str, float] = {}

    def prerun(**_: Any) -> None:
        clock["start"] = time.perf_counter()

    def postrun(**_: Any) -> None:
        clock["end"] = time.perf_counter()

    task_prerun.connect(prerun, weak=False)
    task_postrun.connect(postrun, weak=False)
    try:
        with researcher_agent.override(model=FunctionModel(script)):
            started = time.perf_counter()
            cpu_started, thread_cpu_started = time.process_time(), time.thread_time()
            created = report_start(
                user=user, corpus=corpus, prompt=f"Benchmark run {label}", depth="standard", max_steps=100
            )
            start_to_end = time.perf_counter() - started
            this_thread_cpu = time.thread_time() - thread_cpu_started
            process_cpu = time.process_time() - cpu_started
    finally:
        task_prerun.disconnect(prerun)
        task_postrun.disconnect(postrun)
    report = ResearchReport.objects.get(pk=created.pk)
    wall_ms = (clock["end"] - clock["start"]) * 1000
    model_ms = script.model_ms()
    # The researcher's steps: the script's 60 tool calls, logged after the plan was recorded.
    start = next(i for i, entry in enumerate(report.tool_call_log) if entry["tool"] == "record_plan") + 1
    log = report.tool_call_log[start : start + STEPS]
    retrieval = [float(entry["duration_ms"]) for entry in log]
    # Step k runs between the end of request k and the start of request k + 1.
    per_step = [
        (script.entered[k + 1] - script.left[k]) * 1000 - retrieval[k]
        for k in range(min(len(log), len(script.entered) - 1))
    ]
    steps = len(log)
    overhead = wall_ms - sum(model_ms) - sum(retrieval)
    return {
        "status": report.status,
        "steps": steps,
        "model_requests": script.requests,
        "findings": len(report.findings),
        "citations": len(report.citations),
        "warnings": report.warnings,
        "wall_ms": round(wall_ms, 1),
        "start_to_end_ms": round(start_to_end * 1000, 1),
        "model_ms": round(sum(model_ms), 2),
        "retrieval_ms": round(sum(retrieval), 1),
        "retrieval_ms_by_tool": _by_tool(log),
        "overhead_ms": round(overhead, 1),
        # Where the run's CPU went: this thread does every database call (thread-sensitive
        # sync_to_async, retrieval included); asgiref's loop thread runs the agent graph and
        # the model. Wall minus both is waiting: disk flushes, the server, other processes.
        "cpu_ms": {
            "database_thread": round(this_thread_cpu * 1000, 1),
            "agent_loop_thread": round((process_cpu - this_thread_cpu) * 1000, 1),
            "not_on_cpu": round(start_to_end * 1000 - process_cpu * 1000, 1),
        },
        "overhead_per_step_ms": round(overhead / steps, 2) if steps else None,
        "per_step_median_ms": round(statistics.median(per_step), 2),
        "per_step_p95_ms": round(percentile(per_step, 95), 2),
        "per_step_by_tool_median_ms": _per_step_by_tool(log, per_step),
        # Steps 1-20, 21-40, 41-60: the agent's per-request work grows with the message history.
        "per_step_median_by_third_ms": [
            round(statistics.median(part), 2) for part in _thirds(per_step) if part
        ],
        "first_step_overhead_ms": round(per_step[0], 2),
        "last_step_overhead_ms": round(per_step[-1], 2),
        "_per_step": per_step,
    }


def _thirds(values: list[float]) -> list[list[float]]:
    size = -(-len(values) // 3)
    return [values[i : i + size] for i in range(0, len(values), size)]


def _by_tool(log: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for entry in log:
        totals[entry["tool"]] = totals.get(entry["tool"], 0.0) + float(entry["duration_ms"])
    return {tool: round(ms, 1) for tool, ms in totals.items()}


def _per_step_by_tool(log: list[dict[str, Any]], per_step: list[float]) -> dict[str, float]:
    grouped: dict[str, list[float]] = {}
    for entry, ms in zip(log, per_step, strict=False):
        grouped.setdefault(entry["tool"], []).append(ms)
    return {tool: round(statistics.median(values), 2) for tool, values in grouped.items()}


def profile_once(*, user, corpus, top: int) -> dict[str, Any]:
    """cProfile one more run in both threads it uses: this one (every database call, through
    thread-sensitive sync_to_async) and asgiref's event-loop thread (the agent graph). Time a
    thread spends waiting for the other (lock acquire, selector poll) is left out of by_own_time."""
    profilers = [cProfile.Profile()]

    def start_in_new_thread(*_: Any) -> None:
        sys.setprofile(None)
        profiler = cProfile.Profile()
        profilers.append(profiler)
        profiler.enable()

    threading.setprofile(start_in_new_thread)
    profilers[0].enable()
    try:
        run = run_once(user=user, corpus=corpus, label="profiled")
    finally:
        profilers[0].disable()
        threading.setprofile(None)
    stats = pstats.Stats(profilers[0], stream=io.StringIO())
    for profiler in profilers[1:]:
        profiler.create_stats()
        stats.add(profiler)
    rows = [
        (f"{_short(path)}:{line}({name})", calls, tottime, cumtime)
        for (path, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items()
    ]
    waits = ("acquire' of '_thread.lock", "'poll' of 'select.epoll", "'select' of 'select")

    def view(items: list[tuple[str, int, float, float]]) -> list[dict[str, Any]]:
        return [
            {"function": f, "calls": c, "own_ms": round(t * 1000, 1), "cumulative_ms": round(ct * 1000, 1)}
            for f, c, t, ct in items[:top]
        ]

    working = [r for r in rows if not any(w in r[0] for w in waits)]
    return {
        "wall_ms_under_profiler": run["wall_ms"],
        "threads_profiled": len(profilers),
        "wait_ms": {r[0]: round(r[2] * 1000, 1) for r in rows if any(w in r[0] for w in waits)},
        "by_own_time": view(sorted(working, key=lambda r: r[2], reverse=True)),
        "by_cumulative": view(sorted(rows, key=lambda r: r[3], reverse=True)),
    }


def _short(path: str) -> str:
    for marker in ("site-packages/", str(ROOT) + "/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _versions() -> dict[str, str]:
    names = ("django", "pydantic-ai-slim", "celery", "asgiref")
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _database_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("select sqlite_version()")
            return f"sqlite {cursor.fetchone()[0]}"
        cursor.execute("show server_version")
        return f"postgresql {cursor.fetchone()[0]}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    contracts_dir = args.data / "contracts"
    if not contracts_dir.is_dir():
        sys.exit(f"CUAD not found at {args.data} (expected ../shared/data/cuad beside the checkout)")
    if args.postgres:
        database_url, drop = temporary_postgres(args.postgres, "deepcite_bench_engine")
        atexit.register(drop)
    else:
        folder = tempfile.mkdtemp(prefix="deepcite-bench-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        database_url = f"sqlite:///{Path(folder) / 'engine.sqlite3'}"
    setup_django(database_url)
    from django.contrib.auth import get_user_model

    from corpora.models import Passage
    from corpora.services import corpus_create, document_ingest

    user = get_user_model().objects.create_user(username="bench")
    corpus = corpus_create(creator=user, name="cuad-engine")
    files = sorted(contracts_dir.glob("*.txt"))[: args.contracts]
    for path in files:
        document_ingest(corpus=corpus, path=path, schedule_embedding=False)

    load_before = os.getloadavg()
    warmup = run_once(user=user, corpus=corpus, label="warm-up")
    runs = [run_once(user=user, corpus=corpus, label=str(i + 1)) for i in range(args.runs)]
    pooled = [ms for run in runs for ms in run.pop("_per_step")]
    warmup.pop("_per_step")
    amortized = [run["overhead_per_step_ms"] for run in runs]
    headline = statistics.median(amortized)
    step_median = statistics.median(pooled)
    out: dict[str, Any] = {
        "benchmark": "engine",
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "packages": _versions(),
            # Other work shares the machine; its load drifts the figures (see README).
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "database": (
            "postgresql (fresh temporary database)" if args.postgres else "sqlite (fresh temporary file)"
        ),
        "database_version": _database_version(),
        "method": METHOD,
        "corpus": {
            "contracts": len(files),
            "passages": Passage.objects.filter(corpus=corpus).count(),
            "selection": "first N CUAD contracts by sorted file name; lexical only (EMBEDDING_BACKEND=none)",
        },
        "runs": len(runs),
        "steps": runs[0]["steps"] if runs else warmup["steps"],
        "model_requests": runs[0]["model_requests"] if runs else warmup["model_requests"],
        "overhead_per_step_ms": {
            "median_over_runs": round(headline, 2),
            "min_over_runs": round(min(amortized), 2),
            "max_over_runs": round(max(amortized), 2),
            "definition": "(run wall - model - retrieval) / steps",
        },
        "per_step_overhead_ms": {
            "median": round(step_median, 2),
            "p95": round(percentile(pooled, 95), 2),
            "max": round(max(pooled), 2),
            "samples": len(pooled),
            "definition": "end of model request k -> start of request k+1, minus step k's retrieval ms",
        },
        "median_over_runs": {
            key: round(statistics.median(run[key] for run in runs), 2)
            for key in (
                "wall_ms",
                "model_ms",
                "retrieval_ms",
                "overhead_ms",
                "per_step_median_ms",
                "per_step_p95_ms",
            )
        },
        "target_ms": TARGET_MS,
        "met": headline <= TARGET_MS and step_median <= TARGET_MS,
        "warmup_run": warmup,
        "per_run": runs,
    }
    if args.profile:
        out["profile"] = profile_once(user=user, corpus=corpus, top=args.profile)
    text = json.dumps(out)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
