"""The one entry point of a research run: QUEUED -> RUNNING, the orchestration of its roles
(research.engine.orchestrator) under the run's budgets, then exactly one finalize. Cancel is
checked before every model request and polled while one is in flight; a budget or the time
limit running out salvages the findings into the report; any other error fails the report with
its findings kept.

A worker carries runs on the process's run loop (research.runloop); report_run drives one from
a synchronous caller, its database work in that caller's thread and transaction."""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone
from pydantic_ai.exceptions import UsageLimitExceeded

from config.exceptions import ApplicationError
from corpora.selectors import corpus_get_for_user
from llms.errors import is_transient, retry_after
from llms.providers import masked_spec
from research.constants import BUDGET_STEPS, BUDGET_TIME, DEPTH_PRESETS, ERROR_MAX_CHARS
from research.engine.budget import BudgetExhausted, RunBudget
from research.engine.minds import Minds
from research.engine.orchestrator import Orchestration, RunCancelled
from research.engine.store import RunStore
from research.models import ResearchReport
from research.runloop import database, on_run_loop
from research.selectors import report_cancel_pending
from research.services import (
    LeaseLost,
    Outcome,
    report_finalize,
    report_mark_running,
    report_requeue,
)

logger = logging.getLogger(__name__)

RETRY_BACKOFF_MAX_SECONDS = 60

T = TypeVar("T")


@dataclass
class RunEnd:
    outcome: str
    draft: str | None = None
    budget: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # A provider or database failure worth retrying from the checkpoint.
    transient: BaseException | None = None


def report_run(*, report_id: int) -> ResearchReport | None:
    """Run a queued report to its end from a synchronous caller (see report_run_async)."""
    return async_to_sync(report_run_async)(report_id=report_id)


async def report_run_async(*, report_id: int) -> ResearchReport | None:
    """Run a queued report to its end, or back to the queue after a transient failure. A
    missing, ended or already-taken report is a no-op (returns None), so a task delivered twice
    does nothing the second time."""
    report = await database(report_mark_running, report_id=report_id)
    if report is None:
        return None
    lease = report.lease_token
    try:
        end = await _drive(report)
    except LeaseLost:
        logger.warning("research run %s was taken over by another worker; this one stops", report_id)
        return None
    except Exception as exc:  # the report must end, whatever went wrong
        logger.exception("research run %s failed", report_id)
        end = RunEnd(Outcome.FAILED, error=_describe(exc))
    if end.transient is not None and await database(_requeue, report, end):
        return await database(ResearchReport.objects.get, pk=report_id)
    try:
        return await database(
            report_finalize,
            report_id=report_id,
            outcome=end.outcome,
            draft=end.draft,
            budget=end.budget,
            error=end.error,
            usage=end.usage or None,
            lease_token=lease,
            run_warnings=end.warnings,
        )
    except LeaseLost:
        return None


def _requeue(report: ResearchReport, end: "RunEnd") -> bool:
    """Back to the queue with backoff min(2**n, 60) s, or the provider's Retry-After; False once
    the retry budget is spent (the run then fails, its findings rendered)."""
    exc = end.transient
    delay = retry_after(exc)
    if delay is None:
        delay = min(2 ** (report.retry_count + 1), RETRY_BACKOFF_MAX_SECONDS)
    requeued = report_requeue(
        report_id=report.pk,
        lease_token=report.lease_token,
        reason=_describe(exc),
        delay_seconds=delay,
        usage=end.usage,
    )
    if requeued:
        logger.warning("research run %s hit %s; resuming in %ss", report.pk, type(exc).__name__, delay)
    return requeued


def report_fail_unstarted(*, report_id: int, error: str) -> None:
    """Best effort for a run that raised outside the agent loop (the database was unreachable,
    say): end the report FAILED with its findings rather than leave it waiting forever."""
    try:
        report_finalize(report_id=report_id, outcome=Outcome.FAILED, error=error[:ERROR_MAX_CHARS])
    except Exception:
        logger.exception("could not end research run %s; it stays in its current status", report_id)


def report_salvage_on_timeout(*, report_id: int) -> ResearchReport:
    """The worker's own time limit fired (Celery's soft limit): keep what was found."""
    return report_finalize(report_id=report_id, outcome=Outcome.SALVAGED, budget="time")


async def _drive(report: ResearchReport) -> RunEnd:
    preset = DEPTH_PRESETS[report.depth]
    corpus = await database(_corpus_for_creator, report)
    cost_limit = settings.RESEARCH_COST_LIMIT_USD
    budget = RunBudget.resumed(
        max_steps=report.max_steps,
        max_tool_calls=report.max_tool_calls,
        token_limit=report.token_limit,
        cost_limit=Decimal(str(cost_limit)) if cost_limit else None,
        earlier=report.model_usage,
    )
    minds = Minds.for_run(
        override=report.model,
        preset=preset,
        breadth=report.breadth,
        shared_client=on_run_loop(),
    )
    store = RunStore(
        report_id=report.pk,
        corpus=corpus,
        search_top_k=preset.search_top_k,
        budget=budget,
        document_ids=list(report.document_scope) or None,
        lease_token=report.lease_token,
        retrieved=set(report.retrieved_passage_ids),
        findings=list(report.findings),
        # Read by the write that took the lease: the first step needs no query of its own.
        seen_status=report.status,
    )
    orchestration = Orchestration(
        title=report.title,
        prompt=report.prompt,
        rubric=report.rubric,
        depth=report.depth,
        preset=preset,
        breadth=report.breadth,
        store=store,
        minds=minds,
        state=dict(report.engine_state or {}),
        plan=_plan(report.plan),
    )
    deadline = (report.started_at or timezone.now()) + timedelta(seconds=report.time_limit_seconds)
    earlier_retries = int(report.model_usage.get("inline_retries", 0))

    def end(outcome: str, **fields: Any) -> RunEnd:
        usage = {
            "model": masked_spec(minds.lead),
            "worker_model": masked_spec(minds.worker),
            "engine": minds.engine,
            **budget.usage(),
            "inline_retries": earlier_retries + minds.inline_retries(),
        }
        warnings = [*orchestration.warnings, *budget.warnings()]
        return RunEnd(outcome, usage=usage, warnings=warnings, **fields)

    try:
        async with asyncio.timeout((deadline - timezone.now()).total_seconds()):
            draft = await _until_cancelled(orchestration.run(), report_id=report.pk)
        return end(Outcome.COMPLETED, draft=draft)
    except RunCancelled:
        return end(Outcome.CANCELLED)
    except BudgetExhausted as exc:
        return end(Outcome.SALVAGED, budget=exc.budget)
    except UsageLimitExceeded:  # one role's own request limit: the run's budget is not spent
        return end(Outcome.SALVAGED, budget=BUDGET_STEPS)
    except TimeoutError:
        return end(Outcome.SALVAGED, budget=BUDGET_TIME)
    except ApplicationError as exc:
        return end(Outcome.FAILED, error=f"{exc.code}: {exc.message}")
    except LeaseLost:
        raise
    except Exception as exc:
        if is_transient(exc):
            return end(Outcome.FAILED, error=_describe(exc), transient=exc)
        # Any other failure (a provider refusing the request, say) ends the run with what it
        # spent so far: its usage is kept, not lost with the error.
        logger.exception("research run %s failed", report.pk)
        return end(Outcome.FAILED, error=_describe(exc))
    finally:
        await minds.aclose()


async def _until_cancelled(work: Awaitable[T], *, report_id: int) -> T:
    """Await `work`, looking for a cancel every RESEARCH_CANCEL_POLL_SECONDS meanwhile: a cancel
    asked for while a model request is in flight (a slow model may take minutes) stops the run
    then, not when the request returns. What the run recorded is in the database already; a
    write under way when its step is cancelled completes on its database thread."""
    task = asyncio.ensure_future(work)
    poll = settings.RESEARCH_CANCEL_POLL_SECONDS
    try:
        while poll > 0 and not task.done():
            await asyncio.wait({task}, timeout=poll)
            if not task.done() and await database(report_cancel_pending, report_id=report_id):
                raise RunCancelled
        return await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _plan(stored: list) -> list[dict[str, Any]]:
    """The plan an earlier attempt recorded, in the shape the orchestration keeps it."""
    return [
        {
            "question": step["question"],
            "queries": list(step.get("queries") or [step["question"]]),
            "sweep": bool(step.get("sweep")),
        }
        for step in stored
        if isinstance(step, dict) and step.get("question")
    ]


def _corpus_for_creator(report: ResearchReport):
    # The creator's read permission is checked again when the run starts: access can be
    # revoked while a report waits in the queue.
    return corpus_get_for_user(user=report.creator, corpus_id=report.corpus_id)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS]
