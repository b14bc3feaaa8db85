"""The one entry point of a research run: QUEUED -> RUNNING, the roles under the run's budgets,
then exactly one finalize. Cancel is checked between agent steps; a budget or the time limit running out
salvages the findings into the report; any other error fails the report with its findings kept.

A worker carries runs on the process's run loop (research.runloop); report_run drives one from
a synchronous caller, its database work in that caller's thread and transaction."""

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone
from pydantic_ai import UsageLimits
from pydantic_ai.exceptions import UsageLimitExceeded

from config.exceptions import ApplicationError
from corpora.selectors import corpus_get_for_user
from llms.errors import is_transient, retry_after
from llms.providers import OFFLINE, ChosenModel, Engine, configured_model
from research.constants import DEPTH_PRESETS, ERROR_MAX_CHARS
from research.engine.prompts import research_user_prompt
from research.engine.researcher import OFFLINE_MODEL_NAME, ResearchDeps, offline_model, research_agent
from research.engine.store import RunStore
from research.models import ResearchReport
from research.runloop import database, on_run_loop
from research.services import (
    LeaseLost,
    Outcome,
    report_finalize,
    report_mark_running,
    report_requeue,
)

logger = logging.getLogger(__name__)

RETRY_BACKOFF_MAX_SECONDS = 60


@dataclass
class RunEnd:
    outcome: str
    draft: str | None = None
    budget: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
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
    chosen = _research_model(report.depth)
    store = RunStore(
        report_id=report.pk,
        corpus=corpus,
        search_top_k=preset.search_top_k,
        document_ids=list(report.document_scope) or None,
        lease_token=report.lease_token,
        retrieved=set(report.retrieved_passage_ids),
        # Read by the write that took the lease: the first step needs no query of its own.
        seen_status=report.status,
    )
    deps = ResearchDeps(store=store, breadth=preset.breadth)
    limits = UsageLimits(
        request_limit=report.max_steps,
        tool_calls_limit=report.max_tool_calls,
        total_tokens_limit=report.token_limit,
    )
    prompt = research_user_prompt(
        title=report.title,
        prompt=report.prompt,
        rubric=report.rubric,
        depth=report.depth,
        document_scope=list(report.document_scope),
        checkpoint=_checkpoint(report),
    )
    deadline = (report.started_at or timezone.now()) + timedelta(seconds=report.time_limit_seconds)
    run = None

    earlier = report.model_usage if report.model_usage.get("model") == chosen.name else {}

    def usage() -> dict[str, Any]:
        """This attempt's usage added to the earlier attempts' (a resumed run keeps counting)."""
        counted = run.usage if run is not None else None
        totals = {
            key: int(earlier.get(key, 0)) + getattr(counted, key, 0)
            for key in ("requests", "input_tokens", "output_tokens", "tool_calls")
        }
        retried = int(earlier.get("inline_retries", 0)) + getattr(chosen.model, "retried", 0)
        return {"model": chosen.name, "engine": chosen.engine, **totals, "inline_retries": retried}

    try:
        async with asyncio.timeout((deadline - timezone.now()).total_seconds()):
            async with research_agent.iter(prompt, deps=deps, model=chosen.model, usage_limits=limits) as run:
                async for node in run:
                    # Between steps: before each model request, never in the middle of a step.
                    if not research_agent.is_model_request_node(node):
                        continue
                    store.usage = usage()  # written with the next step: a checkpoint of the spend
                    if await store.cancel_pending():
                        return RunEnd(Outcome.CANCELLED, usage=usage())
                return RunEnd(Outcome.COMPLETED, draft=run.result.output.markdown, usage=usage())
    except UsageLimitExceeded as exc:
        return RunEnd(Outcome.SALVAGED, budget=_budget_name(exc), usage=usage())
    except TimeoutError:
        return RunEnd(Outcome.SALVAGED, budget="time", usage=usage())
    except ApplicationError as exc:
        return RunEnd(Outcome.FAILED, error=f"{exc.code}: {exc.message}", usage=usage())
    except Exception as exc:
        if not is_transient(exc):
            raise
        return RunEnd(Outcome.FAILED, error=_describe(exc), usage=usage(), transient=exc)
    finally:
        if chosen.aclose is not None:  # a client of this run's own, on the loop that used it
            await chosen.aclose()


def _research_model(depth: str) -> ChosenModel:
    """RESEARCH_MODEL's provider model, or the offline mind (the default when none is set)."""
    spec = (settings.RESEARCH_MODEL or OFFLINE).strip()
    if spec == OFFLINE:
        preset = DEPTH_PRESETS[depth]
        model = offline_model(breadth=preset.breadth, search_top_k=preset.search_top_k, depth=depth)
        return ChosenModel(model, OFFLINE_MODEL_NAME, Engine.OFFLINE)
    return configured_model(spec, shared_client=on_run_loop())


def _checkpoint(report: ResearchReport) -> list[str]:
    """What an earlier attempt left, for a resumed run: its plan and findings."""
    lines = [f"Planned sub-question: {step['question']}" for step in report.plan if step.get("question")]
    lines += [f"Recorded finding (passage {f['passage_id']}): {f['claim']}" for f in report.findings]
    return lines


def _corpus_for_creator(report: ResearchReport):
    # The creator's read permission is checked again when the run starts: access can be
    # revoked while a report waits in the queue.
    return corpus_get_for_user(user=report.creator, corpus_id=report.corpus_id)


def _budget_name(exc: UsageLimitExceeded) -> str:
    message = str(exc)
    if "token" in message:
        return "tokens"
    return "steps"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS]
