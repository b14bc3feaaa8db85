"""Where a research run's CPU goes when one process carries many runs at once: the same N runs,
the same 1 s model and the same script as bench/concurrency.py, measured with one layer of the
stack added at a time, all in this process on one event loop.

    .venv/bin/python bench/concurrency_layers.py [--n 100] [--latency 1.0] [--findings 3]
        [--postgres URL] [--out FILE]

Layers:
  agent        the researcher agent alone (its real tool schemas, argument validation,
               instructions and output tool; its five requests are the ideal here) with a
               PydanticAI FunctionModel that sleeps `latency` per request;
               its tools are stand-ins with the real signatures answering what the real tools
               answered once (no database, no HTTP)
  agent_http   the same stand-in tools, the model reached as in production: the OpenAI-compatible
               client (llms/providers.py) over HTTP to the model server of bench/concurrency.py,
               run in a subprocess so that its CPU is not counted
  research     full research runs (report_start -> the run loop -> planner, researcher, writer,
               critic, checkpoints, finalize, notification) on a fresh PostgreSQL database, in
               process, without Celery
bench/concurrency.py adds the last layer: a Celery worker process taking the runs from Redis.

Prints one JSON object: per layer wall, ratio to the ideal latency-bound throughput and this
process's CPU per run (time.process_time; the model server's is excluded)."""

import argparse
import asyncio
import atexit
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import temporary_postgres
from concurrency import DEFAULT_POSTGRES, SEARCH_QUERY, ScriptedResearcher, corpora_for_runs, machine

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 0.8
SERVER = (
    "import sys; sys.path.insert(0, {bench!r}); "
    "from concurrency import ModelServer, ScriptedResearcher; "
    "server = ModelServer(ScriptedResearcher(latency={latency!r}, findings={findings!r})); "
    "server.__enter__(); print(server.url, flush=True); sys.stdin.read()"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100, help="concurrent runs")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model answer")
    parser.add_argument("--findings", type=int, default=3, help="record_finding calls per run")
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, metavar="URL", help="PostgreSQL server")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args(argv)


def start_model_server(latency: float, findings: int) -> tuple[str, subprocess.Popen]:
    code = SERVER.format(bench=str(ROOT / "bench"), latency=latency, findings=findings)
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    atexit.register(process.kill)
    return process.stdout.readline().strip(), process


def setup_django(database_url: str, model_url: str, n: int) -> None:
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "EMBEDDING_BACKEND": "none",
            "LOG_LEVEL": "WARNING",
            "DEBUG": "0",
            "RESEARCH_MODEL": "openai-compatible:slow",
            "LLM_BASE_URL": model_url,
            "LLM_API_KEY": "x",
            "RESEARCH_INPROCESS_WORKERS": str(n + 1),
            "RESEARCH_MAX_ACTIVE_RUNS_PER_USER": "0",  # one user starts all N runs
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)  # runs go to the in-process pool on the run loop
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# --- The agent with stand-in tools ----------------------------------------------------------
def stand_in_tools(answers: dict[str, Any]) -> list[Any]:
    """The research agent's tools with their real signatures (so the same schemas and argument
    validation), each answering what `answers` holds for it."""
    from pydantic_ai import Tool

    from research.engine.researcher import researcher_agent

    def stand_in(tool: Any, answer: Any) -> Any:
        @functools.wraps(tool.function)
        async def answering(ctx, *args, **kwargs):
            return answer

        return Tool(answering, name=tool.name, description=tool.description, takes_ctx=True)

    return [
        stand_in(tool, answers.get(name, "ok")) for name, tool in researcher_agent.toolsets[0].tools.items()
    ]


def function_mind(script: ScriptedResearcher):
    """The model server's script as a FunctionModel: the same calls, `latency` per answer."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    async def mind(messages, info):
        await asyncio.sleep(script.latency)
        results = [
            part.content
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        calls = script.answer(results)["tool_calls"]
        return ModelResponse(parts=[ToolCallPart(name, arguments) for name, arguments in calls])

    return FunctionModel(mind)


async def agent_runs(n: int, tools: list[Any], model_for_run) -> tuple[float, float]:
    """(wall, CPU) of n concurrent runs, after one warm-up run (imports, a first connection)."""
    from research.engine.budget import RunBudget
    from research.engine.researcher import Direction, ResearcherDeps, researcher_agent
    from research.engine.store import RunStore

    async def one() -> None:
        # Deps as a run builds them; the stand-in tools read none of them.
        budget = RunBudget(max_steps=1000, max_tool_calls=1000, token_limit=10**9)
        store = RunStore(report_id=0, corpus=None, search_top_k=8, budget=budget)
        direction = Direction("Liability and termination", ("Liability and termination",), plan_index=0)
        deps = ResearcherDeps(
            store=store, direction=direction, findings_limit=3, context_reads=0, search_top_k=8
        )
        async with researcher_agent.iter(
            "Liability and termination", deps=deps, model=model_for_run()
        ) as run:
            async for _node in run:
                pass
        if run.result.output is None:
            raise RuntimeError("a run ended without its notes")

    with researcher_agent.override(tools=tools):
        await one()
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.perf_counter() - wall, time.process_time() - cpu


def layer(name: str, n: int, ideal_run: float, wall: float, cpu: float) -> dict[str, Any]:
    return {
        "layer": name,
        "n": n,
        "wall_seconds": round(wall, 3),
        "ratio": round(ideal_run / wall, 4),
        "cpu_per_run_ms": round(cpu / n * 1000, 1),
        "cpu_bound_ratio_ceiling": round(min(1.0, ideal_run / cpu), 4) if cpu else None,
    }


# --- Full research runs ---------------------------------------------------------------------
def research_runs(user: Any, corpora: list[Any], label: str) -> list[str]:
    from django.db import transaction

    from research.models import ResearchReport
    from research.services import report_start
    from tasks.research import in_process_pool

    with transaction.atomic():
        ids = [
            report_start(
                user=user, corpus=corpus, prompt=f"Research liability and termination ({label} {i})"
            ).pk
            for i, corpus in enumerate(corpora)
        ]
    if not in_process_pool.wait(timeout=600):
        raise RuntimeError("the research runs did not end within 600 s")
    return list(ResearchReport.objects.filter(pk__in=ids).values_list("status", flat=True))


def search_answer(corpus: Any) -> dict[str, Any]:
    """What the real search tool answers the script's query on a sample corpus."""
    from corpora.passage_views import passage_view
    from corpora.selectors import passage_search

    hits = passage_search(corpus=corpus, query=SEARCH_QUERY, top_k=8, mode="lexical")
    return {"results": [passage_view(hit.passage) for hit in hits]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    script = ScriptedResearcher(latency=args.latency, findings=args.findings)
    ideal_run = script.requests_per_run * args.latency
    # The agent layers run the researcher alone: its search, its findings and its finish.
    ideal_researcher = (script.findings + 2) * args.latency
    model_url, server = start_model_server(args.latency, args.findings)
    database_url, drop = temporary_postgres(args.postgres, "deepcite_bench_layers")
    atexit.register(drop)
    setup_django(database_url, model_url, args.n)

    from django.conf import settings

    from llms.providers import configured_model

    user, corpora = corpora_for_runs(args.n)
    tools = stand_in_tools(
        {
            "search_passages": search_answer(corpora[-1]),
            "record_finding": "recorded finding 1 (passage 1)",
            "record_plan": "plan recorded: 1 questions",
        }
    )
    results = []
    mind = function_mind(script)
    wall, cpu = asyncio.run(agent_runs(args.n, tools, lambda: mind))
    results.append(layer("agent", args.n, ideal_researcher, wall, cpu))

    def http_model():
        return configured_model(settings.RESEARCH_MODEL, shared_client=True).model

    wall, cpu = asyncio.run(agent_runs(args.n, tools, http_model))
    results.append(layer("agent_http", args.n, ideal_researcher, wall, cpu))

    research_runs(user, corpora[-1:], "warm-up")
    wall, cpu = time.perf_counter(), time.process_time()
    statuses = research_runs(user, corpora[: args.n], "measured")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    results.append(
        {**layer("research", args.n, ideal_run, wall, cpu), "completed": statuses.count("COMPLETED")}
    )
    server.stdin.close()

    out = {
        "benchmark": "concurrency_layers",
        "machine": machine(),
        "method": "Layers:" + __doc__.split("Layers:")[1].split("Prints")[0].rstrip(),
        "model_latency_seconds": args.latency,
        "requests_per_run": script.requests_per_run,
        "results": results,
        "target": f"{args.n} concurrent runs at >= {TARGET_RATIO:.0%} of the ideal latency-bound throughput",
    }
    text = json.dumps(out)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
