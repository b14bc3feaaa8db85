"""The research agent: read-only retrieval tools over one corpus, scratchpad tools that record
the plan and findings, and `finalize_report` as its output. Report, corpus and user come from
the deps, never from the model; every tool call is logged on the report."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Literal

from django.db import DatabaseError
from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext, ToolOutput

from config.exceptions import ApplicationError
from corpora.constants import NEIGHBOURS_MAX_WINDOW
from corpora.exceptions import EmbeddingUnavailable
from corpora.models import Corpus, Passage
from corpora.selectors import document_list, passage_exact_search, passage_neighbours, passage_search
from llms.breaker import breakers
from llms.passages import passage_view
from llms.prompts import RESEARCH_INSTRUCTIONS
from research.runloop import database
from research.services import LeaseLost, ToolCall, finding_record, report_plan_record, report_tool_call_record

logger = logging.getLogger(__name__)

SEARCH_TOP_K_MAX = 20


@dataclass
class ResearchDeps:
    report_id: int
    corpus: Corpus
    user_id: int
    breadth: int
    search_top_k: int
    document_ids: list[int] | None = None
    lease_token: str | None = None
    retrieved: set[int] = field(default_factory=set)
    # The model usage so far, written with each step as part of the run's checkpoint.
    usage: dict[str, Any] | None = None
    # The report's status as the last step's write saw it (None: no write since the last check),
    # so the run need not query for a pending cancel after a step that already read the row.
    seen_status: str | None = None


class FinalReport(BaseModel):
    """The finished report in markdown, claims wrapped as <cite ids="...">claim</cite>."""

    markdown: str = Field(description="The report in markdown with <cite ids=...> placeholders.")


research_agent = Agent(
    deps_type=ResearchDeps,
    output_type=ToolOutput(FinalReport, name="finalize_report", description="Submit the finished report."),
    name="deepcite-researcher",
    retries=2,
)


@research_agent.instructions
async def _instructions(ctx: RunContext[ResearchDeps]) -> str:
    return RESEARCH_INSTRUCTIONS.format(breadth=ctx.deps.breadth)


# --- Read-only retrieval tools --------------------------------------------------------------
@research_agent.tool
async def search_passages(
    ctx: RunContext[ResearchDeps],
    query: str,
    mode: Literal["hybrid", "lexical", "dense"] = "hybrid",
    top_k: int | None = None,
) -> dict[str, Any] | str:
    """Search the corpus. Returns passages (id, document, page, heading, text, score), best first."""
    deps = ctx.deps
    k = max(1, min(top_k or deps.search_top_k, SEARCH_TOP_K_MAX))

    def run() -> list[Passage]:
        hits = passage_search(
            corpus=deps.corpus, query=query, top_k=k, document_ids=deps.document_ids, mode=mode
        )
        return [h.passage for h in hits]

    return await _retrieval(ctx, "search_passages", {"query": query, "mode": mode, "top_k": k}, run)


@research_agent.tool
async def exact_search(ctx: RunContext[ResearchDeps], phrase: str) -> dict[str, Any] | str:
    """Passages that contain this exact phrase (case, spacing and quote style ignored)."""
    deps = ctx.deps

    def run() -> list[Passage]:
        hits = passage_exact_search(
            corpus=deps.corpus, phrase=phrase, top_k=deps.search_top_k, document_ids=deps.document_ids
        )
        return [h.passage for h in hits]

    return await _retrieval(ctx, "exact_search", {"phrase": phrase}, run)


@research_agent.tool
async def read_context(
    ctx: RunContext[ResearchDeps], passage_id: int, before: int = 1, after: int = 1
) -> dict[str, Any] | str:
    """The passage and its neighbours in document order (up to 10 each side)."""
    deps = ctx.deps
    before = max(0, min(before, NEIGHBOURS_MAX_WINDOW))
    after = max(0, min(after, NEIGHBOURS_MAX_WINDOW))

    def run() -> list[Passage]:
        passages = passage_neighbours(corpus=deps.corpus, passage_id=passage_id, before=before, after=after)
        if deps.document_ids is not None and passages and passages[0].document_id not in deps.document_ids:
            return []
        return passages

    return await _retrieval(
        ctx, "read_context", {"passage_id": passage_id, "before": before, "after": after}, run
    )


@research_agent.tool
async def list_documents(ctx: RunContext[ResearchDeps]) -> dict[str, Any] | str:
    """The documents this run may search: id, title, source file, pages."""
    deps = ctx.deps

    def run() -> list[dict[str, Any]]:
        queryset = document_list(corpus=deps.corpus, document_ids=deps.document_ids)
        return [
            {"document_id": pk, "title": title, "source_name": source, "pages": pages}
            for pk, title, source, pages in queryset.values_list("pk", "title", "source_name", "page_count")[
                :200
            ]
        ]

    def work() -> dict[str, Any] | str:
        started = perf_counter()
        documents = run()
        _log(deps, ToolCall("list_documents", {}, _ms(started), f"{len(documents)} documents"))
        return {"documents": documents}

    return await database(work)


# --- Scratchpad tools -----------------------------------------------------------------------
@research_agent.tool
async def record_plan(ctx: RunContext[ResearchDeps], questions: list[str]) -> str:
    """Record the sub-questions this run will pursue."""
    deps = ctx.deps
    cleaned = [" ".join(q.split()) for q in questions if q and q.strip()][: max(deps.breadth, 1)]

    def work() -> str:
        started = perf_counter()
        report_plan_record(report_id=deps.report_id, plan=[{"question": q} for q in cleaned])
        _log(deps, ToolCall("record_plan", {"questions": cleaned}, _ms(started), f"{len(cleaned)} questions"))
        return f"plan recorded: {len(cleaned)} questions"

    return await database(work)


@research_agent.tool
async def record_finding(
    ctx: RunContext[ResearchDeps], claim: str, quote: str, passage_ids: list[int], section: str | None = None
) -> str:
    """Record a finding: a claim, a quote copied exactly from one passage, and the ids of
    passages returned by this run's searches. Errors say how to correct the finding."""
    deps = ctx.deps

    def work() -> str:
        try:
            recorded = finding_record(
                report_id=deps.report_id,
                claim=claim,
                quote=quote,
                passage_ids=passage_ids,
                section=section,
                lease_token=deps.lease_token,
            )
        except ApplicationError as exc:
            return f"error[{exc.code}]: {exc.message}"
        deps.seen_status = recorded.report_status
        finding = recorded.finding
        return f"recorded finding {finding['id']} (passage {finding['passage_id']})"

    return await database(work)


# --- Helpers --------------------------------------------------------------------------------
async def _retrieval(
    ctx: RunContext[ResearchDeps], tool: str, arguments: dict[str, Any], run: Callable[[], list[Passage]]
) -> dict[str, Any] | str:
    """Run a retrieval on the run's database thread, add what it returned to the run's
    accumulator (the only ids a finding may cite) and log the call, in one write."""
    deps = ctx.deps
    breaker = breakers.for_endpoint(f"{tool}:{arguments.get('mode', '')}")

    def work() -> dict[str, Any] | str:
        started = perf_counter()
        if not breaker.allow():
            _log(deps, ToolCall(tool, arguments, 0.0, "error: circuit_open"))
            return (
                f"error[circuit_open]: {tool} is failing repeatedly and is paused for a minute; "
                "use another tool or mode, or finalize with the findings you have"
            )
        try:
            passages = run()
        except ApplicationError as exc:
            if isinstance(exc, EmbeddingUnavailable):  # a dependency down, not a bad request
                breaker.record_failure()
            _log(deps, ToolCall(tool, arguments, _ms(started), f"error: {exc.code}"))
            return f"error[{exc.code}]: {exc.message}"
        except (DatabaseError, LeaseLost):
            raise  # the run's own storage: retried from the checkpoint, not by the model
        except Exception as exc:  # a failing dependency (an embedding endpoint, say)
            breaker.record_failure()
            logger.warning("%s failed: %s", tool, exc)
            _log(deps, ToolCall(tool, arguments, _ms(started), f"error: tool_failed: {type(exc).__name__}"))
            return (
                f"error[tool_failed]: {tool} failed ({type(exc).__name__}); try again, another tool or mode"
            )
        breaker.record_success()
        elapsed = _ms(started)
        ids = [p.pk for p in passages]
        report = report_tool_call_record(
            report_id=deps.report_id,
            call=ToolCall(tool, arguments, elapsed, f"{len(ids)} passages"),
            passage_ids=ids,
            lease_token=deps.lease_token,
            usage=deps.usage,
        )
        deps.seen_status = report.status
        deps.retrieved.update(ids)
        return {"results": [passage_view(p) for p in passages]}

    return await database(work)


def _log(deps: ResearchDeps, call: ToolCall) -> None:
    report = report_tool_call_record(
        report_id=deps.report_id, call=call, lease_token=deps.lease_token, usage=deps.usage
    )
    deps.seen_status = report.status


def _ms(started: float) -> float:
    return (perf_counter() - started) * 1000
