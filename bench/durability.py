"""Crash recovery, measured: SIGKILL a real Celery worker in the middle of a research run,
start another, let the stall reaper resume the run, and check the report completes with every
finding recorded before the kill. 20 trials, each killed at a seeded random point.

    .venv/bin/python bench/durability.py [--trials 20] [--seed 4] [--postgres URL] [--redis URL]
        [--out FILE]

Prints one JSON object. Works in a fresh temporary PostgreSQL database (worker processes cannot
share anything less) and its own Redis database number, flushed before and after."""

import argparse
import atexit
import json
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

from common import temporary_postgres
from concurrency import (
    DEFAULT_POSTGRES,
    ModelServer,
    ScriptedResearcher,
    base_env,
    database_version,
    flush_redis,
    machine,
    setup_django,
    start_worker,
    stop_worker,
)

DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
FINDINGS = 6
LATENCY = 0.3
STALL_SECONDS = 2
LEASE_SECONDS = 2
WORKER = ("threads", 4)  # the README's worker: --pool threads --concurrency 4
TARGET = "20 of 20 SIGKILL-mid-run trials end with the report COMPLETED and no finding lost"
METHOD = (
    "Per trial, on a fresh temporary PostgreSQL database and Redis: a real worker subprocess "
    "(`python -m celery -A config worker --pool threads --concurrency 4`, as the README runs it; "
    "RESEARCH_STALL_SECONDS=2, RESEARCH_LEASE_SECONDS=2) runs a report started by "
    "research.services.report_start against an OpenAI-compatible HTTP model server in this "
    "process (0.3 s per answer; the planner plans one sub-question, the researcher calls "
    "search_passages, then record_finding x6 with verbatim sentences of the returned passages, "
    "then finish_direction; the writer cites every finding, the critic is satisfied). "
    "The kill point is seeded per trial: after "
    "kill_after_findings findings (0 = after the search step, before any finding) plus a random "
    "0-0.3 s more, so the kill lands during a model request or a step's write. Then SIGKILL to "
    "the worker's process group (no cleanup, no ack), the report must still be RUNNING; a new "
    "worker starts; after RESEARCH_STALL_SECONDS + 0.5 s this process calls "
    "research.services.reports_reap_stalled() once, standing in for Celery beat's every-minute "
    "schedule (the same function beat's task calls); the report is polled until terminal. "
    "findings_lost counts findings present before the kill (passage id, quote) missing from "
    "the final report's findings or citations. seconds = report_start -> terminal."
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, metavar="URL", help="PostgreSQL server")
    parser.add_argument("--redis", default=DEFAULT_REDIS, metavar="URL", help="broker (a db of its own)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args(argv)


def wait_for(predicate, *, timeout: float, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def trial(*, index: int, rng: random.Random, user: Any, corpus: Any, env: dict[str, str]) -> dict[str, Any]:
    from notifications.models import Notification
    from research.models import ResearchReport
    from research.services import report_start, reports_reap_stalled

    def report() -> ResearchReport:
        return ResearchReport.objects.get(pk=report_id)

    kill_after = rng.randint(0, FINDINGS - 1)
    extra_delay = round(rng.uniform(0, LATENCY), 3)
    outcome: dict[str, Any] = {
        "trial": index,
        "kill_after_findings": kill_after,
        "kill_extra_delay_s": extra_delay,
    }
    started = time.monotonic()
    first = start_worker(env, pool=WORKER[0], concurrency=WORKER[1])
    try:
        report_id = report_start(
            user=user, corpus=corpus, prompt=f"Research liability and termination (trial {index})"
        ).pk
        reached = wait_for(
            lambda: (r := report()).step_count >= 1 and len(r.findings) >= kill_after, timeout=90
        )
        if reached is None:
            return {**outcome, "error": "the run never reached its kill point", "status": report().status}
        time.sleep(extra_delay)
    finally:
        stop_worker(first, signal.SIGKILL)
    before_kill = report()
    before = {(f["passage_id"], f["quote"]) for f in before_kill.findings}
    outcome.update(
        findings_before_kill=len(before),
        steps_before_kill=before_kill.step_count,
        status_after_kill=before_kill.status,
    )

    second = start_worker(env, pool=WORKER[0], concurrency=WORKER[1])
    try:
        time.sleep(STALL_SECONDS + 0.5)
        outcome["reaped"] = reports_reap_stalled()
        finished = wait_for(lambda: (r := report()).is_terminal and r, timeout=90, interval=0.1)
    finally:
        stop_worker(second)
    final = finished or report()
    kept = {(f["passage_id"], f["quote"]) for f in final.findings}
    cited = {(c["passage_id"], c["quote"]) for c in final.citations}
    outcome.update(
        findings_final=len(final.findings),
        findings_lost=len(before - kept) + len(before & kept - cited),
        retry_count=final.retry_count,
        status=final.status,
        error=final.error[:300] or None,
        notifications=Notification.objects.filter(report=final).count(),
        seconds=round(time.monotonic() - started, 2),
    )
    return outcome


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    database_url, drop = temporary_postgres(args.postgres, "deepcite_bench_durability")
    atexit.register(drop)
    flush_redis(args.redis)
    atexit.register(flush_redis, args.redis)
    env = {
        **base_env(database_url, args.redis),
        "RESEARCH_STALL_SECONDS": str(STALL_SECONDS),
        "RESEARCH_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    setup_django(env)
    from django.contrib.auth import get_user_model

    from corpora.services import corpus_create
    from tests.factories import ingest_samples

    user = get_user_model().objects.create_user(username="bench-durability")
    rng = random.Random(args.seed)
    trials = []
    with ModelServer(ScriptedResearcher(latency=LATENCY, findings=FINDINGS)) as server:
        worker_env = {
            **env,
            "RESEARCH_MODEL": "openai-compatible:slow",
            "LLM_BASE_URL": server.url,
            "LLM_API_KEY": "x",
        }
        for index in range(args.trials):
            corpus = corpus_create(creator=user, name=f"durability-{index}")
            ingest_samples(corpus, schedule_embedding=False)
            trials.append(trial(index=index, rng=rng, user=user, corpus=corpus, env=worker_env))
            print(json.dumps(trials[-1]), file=sys.stderr)
    completed = sum(t.get("status") == "COMPLETED" for t in trials)
    lost = sum(t.get("findings_lost", 0) for t in trials)
    out: dict[str, Any] = {
        "benchmark": "durability",
        "machine": machine(),
        "database": "postgresql (fresh temporary database)",
        "database_version": database_version(),
        "broker": args.redis,
        "method": METHOD,
        "reaper": (
            "reports_reap_stalled() called once from the benchmark process after the stall time, "
            "standing in for Celery beat's every-minute schedule"
        ),
        "settings": {
            "RESEARCH_STALL_SECONDS": STALL_SECONDS,
            "RESEARCH_LEASE_SECONDS": LEASE_SECONDS,
            "worker": f"--pool {WORKER[0]} --concurrency {WORKER[1]}",
            "model_latency_seconds": LATENCY,
            "findings_per_run": FINDINGS,
            "seed": args.seed,
        },
        "trials": len(trials),
        "completed": completed,
        "findings_lost": lost,
        "per_trial": trials,
        "target": TARGET,
        "met": completed == len(trials) == args.trials and lost == 0,
    }
    text = json.dumps(out)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
