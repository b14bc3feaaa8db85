"""Every write to a research report: start, cancel, the run's scratchpad (retrieved passages,
tool calls, findings) and the one-time finalize. Status changes go through research.lifecycle."""

import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from time import perf_counter
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.db.models.expressions import RawSQL
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from config.text import name_clean
from conversations.models import ChatMessage, Conversation, MessageRole
from conversations.services import chat_message_append
from corpora.exceptions import CorpusNotFound
from corpora.models import Corpus, Document
from llms.providers import OFFLINE, ModelConfigurationError, model_check
from notifications.services import notification_create_for_report
from research.citations import citations_render, draft_passage_ids, markdown_literal
from research.constants import (
    BREADTH_MAX,
    CLAIM_MAX_CHARS,
    DEFAULT_DEPTH,
    DEPTH_PRESETS,
    DOCUMENT_SCOPE_MAX,
    ERROR_MAX_CHARS,
    MAX_STEPS_CEILING,
    PROMPT_MAX_CHARS,
    QUOTE_MAX_CHARS,
    QUOTE_MIN_CHARS,
    RUBRIC_MAX_CHARS,
    SECTION_MAX_CHARS,
    TIME_LIMIT_MIN_SECONDS,
    TITLE_MAX_CHARS,
    TOOL_ARGS_PREVIEW_CHARS,
    TOOL_OUTCOME_PREVIEW_CHARS,
    WARNING_BUDGET_EXHAUSTED,
    WARNING_DRAFT_MISSING,
)
from research.drafts import compose_from_findings, findings_set_aside
from research.exceptions import (
    BreadthInvalid,
    DepthInvalid,
    DocumentScopeInvalid,
    FindingRejected,
    MaxStepsInvalid,
    ModelNotAllowed,
    PromptInvalid,
    ReportAlreadyActive,
    ReportNotCancellable,
    ReportNotFound,
    ReportNotResumable,
    ReportPermissionDenied,
    RubricInvalid,
    TimeLimitInvalid,
    TitleInvalid,
    TooManyActiveRuns,
    TransitionLost,
)
from research.lifecycle import report_transition
from research.models import TERMINAL_STATUSES, ReportStatus, ResearchReport
from research.quotes import quote_locate
from research.selectors import citable_passages

logger = logging.getLogger(__name__)

VIEW_CORPUS = "corpora.view_corpus"


# --- Start ----------------------------------------------------------------------------------
def report_start(
    *,
    user: AbstractBaseUser,
    corpus: Corpus,
    prompt: str,
    title: str | None = None,
    depth: str | None = None,
    max_steps: int | None = None,
    rubric: str | None = None,
    document_ids: Sequence[int] | None = None,
    conversation: Conversation | None = None,
    origin_message: ChatMessage | None = None,
    breadth: int | None = None,
    time_limit_seconds: int | None = None,
    model: str | None = None,
) -> ResearchReport:
    """Queue a research run. The task is enqueued when the transaction commits. `breadth`,
    `time_limit_seconds` and `model` override the depth preset's and the configured model for
    this run (the time limit within RESEARCH_TIME_LIMIT_SECONDS, the model among the allowed)."""
    if not user.is_authenticated or not user.has_perm(VIEW_CORPUS, corpus):
        raise ReportPermissionDenied("you may not read this corpus", field="corpus_id")
    prompt = (prompt or "").strip()
    if "\x00" in prompt + (rubric or "") + (title or ""):
        raise PromptInvalid("text must not contain NUL characters", field="prompt")
    if not prompt:
        raise PromptInvalid("a research prompt needs some text: the question to research", field="prompt")
    if len(prompt) > PROMPT_MAX_CHARS:
        raise PromptInvalid(
            f"a research prompt is at most {PROMPT_MAX_CHARS:,} characters (this one has {len(prompt):,})",
            field="prompt",
        )
    depth = depth or DEFAULT_DEPTH
    if depth not in DEPTH_PRESETS:
        raise DepthInvalid(f"depth is one of {', '.join(DEPTH_PRESETS)}", field="depth")
    preset = DEPTH_PRESETS[depth]
    rubric = (rubric or "").strip()
    if len(rubric) > RUBRIC_MAX_CHARS:
        raise RubricInvalid(f"a rubric is at most {RUBRIC_MAX_CHARS:,} characters", field="rubric")
    title = name_clean(title) or name_clean(_title_from_prompt(prompt)) or "Research report"
    if len(title) > TITLE_MAX_CHARS:
        raise TitleInvalid(f"a title is at most {TITLE_MAX_CHARS} characters", field="title")
    steps = preset.max_steps if max_steps is None else _max_steps(max_steps)
    breadth = _breadth(preset.breadth if breadth is None else breadth)
    time_limit = _time_limit(preset.time_limit_seconds if time_limit_seconds is None else time_limit_seconds)
    model = _model_spec(model)
    _models_usable(model)
    scope = _document_scope(corpus, document_ids)
    if conversation is not None and (
        conversation.creator_id != user.pk or conversation.corpus_id != corpus.pk
    ):
        raise ReportPermissionDenied(
            "the conversation is not yours or not on this corpus", field="conversation_id"
        )

    with transaction.atomic():
        _no_active_run(creator_id=user.pk, corpus_id=corpus.pk, field="corpus_id")
        _active_runs_below_cap(user_id=user.pk, field="corpus_id")
        try:
            with transaction.atomic():
                report = ResearchReport.objects.create(
                    corpus=corpus,
                    creator=user,
                    title=title,
                    slug=_slug(title),
                    prompt=prompt,
                    depth=depth,
                    rubric=rubric,
                    rubric_iterations=preset.rubric_iterations,
                    breadth=breadth,
                    model=model,
                    document_scope=scope,
                    max_steps=steps,
                    max_tool_calls=preset.max_tool_calls,
                    token_limit=min(preset.token_limit, settings.RESEARCH_TOKEN_LIMIT),
                    time_limit_seconds=time_limit,
                    conversation=conversation,
                    origin_message=origin_message,
                )
        except IntegrityError as exc:  # a simultaneous start won the unique-active constraint
            raise ReportAlreadyActive(_ALREADY_ACTIVE, field="corpus_id") from exc
        transaction.on_commit(lambda: _enqueue(report))
    return report


_ACTIVE = [ReportStatus.QUEUED, ReportStatus.RUNNING, ReportStatus.CANCELLING]
_ALREADY_ACTIVE = "a research run on this corpus is already in progress; wait for it or cancel it"


def _no_active_run(*, creator_id: int, corpus_id: int, field: str) -> None:
    """Refuse a second run on a corpus while the user's first is queued or running, naming that
    one (its title and page), so that they can go to it."""
    active = (
        ResearchReport.objects.filter(creator=creator_id, corpus=corpus_id, status__in=_ACTIVE)
        .values_list("title", "slug")
        .first()
    )
    if active is not None:
        title, slug = active
        page = reverse("research:report-detail", kwargs={"slug": slug})
        raise ReportAlreadyActive(
            f"a research run on this corpus is already in progress (\u201c{title}\u201d, {page}); "
            "wait for it or cancel it",
            field=field,
        )


def _active_runs_below_cap(*, user_id: int, field: str) -> None:
    """RESEARCH_MAX_ACTIVE_RUNS_PER_USER across corpora (0: no cap). Called in the start's
    transaction with the user's row locked, so simultaneous starts on PostgreSQL count each other.
    FOR NO KEY UPDATE, not FOR UPDATE: a run ending at that moment inserts rows that reference
    the user (a foreign key check takes FOR KEY SHARE on the user's row) while this start's
    insert waits on that run's update of the one-active-report index; FOR UPDATE made that a
    deadlock."""
    cap = settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER
    if cap <= 0:
        return
    locked = get_user_model().objects.select_for_update(no_key=True).filter(pk=user_id)
    list(locked.values_list("pk", flat=True))
    if ResearchReport.objects.filter(creator_id=user_id, status__in=_ACTIVE).count() >= cap:
        raise TooManyActiveRuns(
            f"you have {cap} research runs in progress, the most at once; wait for one or cancel it",
            field=field,
        )


def _breadth(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= BREADTH_MAX:
        raise BreadthInvalid(f"breadth is a whole number from 1 to {BREADTH_MAX}", field="breadth")
    return value


def _max_steps(value: Any) -> int:
    """At least one step (a run of none could only fail); past the ceiling, the ceiling."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MaxStepsInvalid(
            f"max steps is a whole number of at least 1 (runs use at most {MAX_STEPS_CEILING:,})",
            field="max_steps",
        )
    return min(value, MAX_STEPS_CEILING)


def _time_limit(value: Any) -> int:
    ceiling = settings.RESEARCH_TIME_LIMIT_SECONDS
    if isinstance(value, bool) or not isinstance(value, int) or value < TIME_LIMIT_MIN_SECONDS:
        raise TimeLimitInvalid(
            f"a time limit is at least {TIME_LIMIT_MIN_SECONDS} seconds "
            f"(a longer one is capped at {ceiling})",
            field="time_limit_seconds",
        )
    return min(value, ceiling)


def _model_spec(model: str | None) -> str:
    """The request's model, if it names one this server allows: the offline engine, the
    configured models, or one listed in RESEARCH_ALLOWED_MODELS. Empty: the configured ones."""
    model = (model or "").strip()
    if not model:
        return ""
    allowed = {"offline", *settings.RESEARCH_ALLOWED_MODELS}
    for configured in (settings.RESEARCH_MODEL, settings.RESEARCH_WORKER_MODEL):
        if configured:
            allowed.add(configured.strip())
    if model not in allowed:
        raise ModelNotAllowed(
            f"model {model[:100]!r} is not offered here; use one of: {', '.join(sorted(allowed))}",
            field="model",
        )
    return model


def _models_usable(model: str) -> None:
    """Refuse a run whose models cannot be used as configured (an unknown provider, a missing
    API key), before it is queued: not a run that fails at its first step."""
    lead = (model or settings.RESEARCH_MODEL or OFFLINE).strip()
    worker = (model or settings.RESEARCH_WORKER_MODEL or lead).strip()
    for spec in dict.fromkeys((lead, worker)):
        try:
            model_check(spec)
        except ModelConfigurationError as error:
            which = "this model" if model else "RESEARCH_MODEL / RESEARCH_WORKER_MODEL"
            raise ModelConfigurationError(
                f"{error.message.rstrip('.')}. The server's {which} needs fixing (or use offline).",
                field="model" if model else None,
            ) from error


# A title made from the prompt is at most this long (a given one may take TITLE_MAX_CHARS).
PROMPT_TITLE_CHARS = 120
# The error a failed run's body quotes, at most (the report's error field holds it whole).
FAILURE_NOTE_MAX_CHARS = 500


def _title_from_prompt(prompt: str) -> str:
    """The prompt's first line, whole where it fits a title; else cut at the last word that fits."""
    first_line = " ".join(prompt.splitlines()[0].split()) if prompt.splitlines() else prompt
    if len(first_line) <= PROMPT_TITLE_CHARS:
        return first_line
    cut = first_line[: PROMPT_TITLE_CHARS - 1]
    words = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return words.rstrip(" ,;:-") + "\u2026"


def _slug(title: str) -> str:
    return f"{slugify(title)[:60].strip('-') or 'report'}-{secrets.token_hex(4)}"


def _document_scope(corpus: Corpus, document_ids: Sequence[int] | None) -> list[int]:
    if not document_ids:
        return []
    try:
        ids = sorted({int(i) for i in document_ids})
    except (TypeError, ValueError) as exc:
        raise DocumentScopeInvalid("document ids must be integers", field="document_ids") from exc
    if len(ids) > DOCUMENT_SCOPE_MAX:
        raise DocumentScopeInvalid(f"at most {DOCUMENT_SCOPE_MAX} documents", field="document_ids")
    found = set(Document.objects.filter(corpus=corpus, pk__in=ids).values_list("pk", flat=True))
    missing = [i for i in ids if i not in found]
    if missing:
        raise DocumentScopeInvalid(f"documents not in this corpus: {missing[:10]}", field="document_ids")
    return ids


def _enqueue(report: ResearchReport, delay_seconds: float = 0) -> None:
    # Imported here: tasks import services, services only hand work to them.
    from tasks.research import research_enqueue

    research_enqueue(
        report_id=report.pk, time_limit_seconds=report.time_limit_seconds, delay_seconds=delay_seconds
    )


# --- Cancel ---------------------------------------------------------------------------------
def report_cancel(*, user: AbstractBaseUser, report_id: int) -> ResearchReport:
    """QUEUED ends CANCELLED at once; RUNNING becomes CANCELLING and the run stops at its next
    step, keeping its findings; a terminal report cannot be cancelled."""
    for _ in range(3):  # the status can move under us (the run starting or ending): retry
        report = _report_for_writer(user=user, report_id=report_id)
        if report.status == ReportStatus.CANCELLING:
            return report
        if report.is_terminal:
            raise ReportNotCancellable(f"the report is already {report.status.lower()}", field="id")
        try:
            if report.status == ReportStatus.QUEUED:
                return report_finalize(
                    report_id=report.pk, outcome=Outcome.CANCELLED, expect=ReportStatus.QUEUED
                )
            return report_transition(report=report, to=ReportStatus.CANCELLING, cancel_requested=True)
        except TransitionLost:
            continue
    raise ReportNotCancellable("the report changed while cancelling; try again", field="id")


def _report_for_writer(*, user: AbstractBaseUser, report_id: int) -> ResearchReport:
    report = ResearchReport.objects.filter(pk=report_id).first()
    if report is None or not (user.is_authenticated and (report.creator_id == user.pk or user.is_superuser)):
        raise ReportNotFound("report not found", field="id")
    return report


# --- The run's scratchpad -------------------------------------------------------------------
class LeaseLost(Exception):
    """Another delivery of the task took the run over (this one stalled past its lease): stop
    without writing anything more. Not an ApplicationError: no user ever sees it."""


def report_mark_running(*, report_id: int) -> ResearchReport | None:
    """Take the run's lease. QUEUED -> RUNNING; or a RUNNING/CANCELLING report whose lease has
    expired (its worker died) is taken over as it stands. None when the report is gone, ended,
    or held by a live lease: a task delivered twice runs once."""
    # With its creator: the run checks the creator's access to the corpus next.
    report = ResearchReport.objects.select_related("creator").filter(pk=report_id).first()
    if report is None:
        return None
    now = timezone.now()
    lease = {"lease_token": secrets.token_hex(16), "lease_expires_at": now + _lease_duration()}
    if report.status == ReportStatus.QUEUED:
        try:
            return report_transition(report=report, to=ReportStatus.RUNNING, not_before=None, **lease)
        except TransitionLost:
            return None
    if report.status in (ReportStatus.RUNNING, ReportStatus.CANCELLING) and (
        report.lease_expires_at is None or report.lease_expires_at < now
    ):
        taken = ResearchReport.objects.filter(
            pk=report_id, status=report.status, lease_token=report.lease_token
        ).update(last_progress_at=now, updated=now, **lease)
        if taken:
            report.refresh_from_db()
            return report
    return None


def _lease_duration() -> timedelta:
    return timedelta(seconds=settings.RESEARCH_LEASE_SECONDS)


def report_requeue(
    *,
    report_id: int,
    lease_token: str | None,
    reason: str,
    delay_seconds: float,
    usage: dict[str, Any] | None = None,
) -> bool:
    """Send a run back to the queue to resume from its checkpoint after a transient failure or
    a stall, counting a retry. False when the retry budget is spent (the caller fails it)."""
    with transaction.atomic():
        report = ResearchReport.objects.select_for_update().get(pk=report_id)
        if report.status != ReportStatus.RUNNING or (
            lease_token is not None and report.lease_token != lease_token
        ):
            return False
        if report.retry_count >= settings.RESEARCH_TASK_MAX_RETRIES:
            return False
        report_transition(
            report=report,
            to=ReportStatus.QUEUED,
            retry_count=report.retry_count + 1,
            lease_token="",
            lease_expires_at=None,
            not_before=timezone.now() + timedelta(seconds=delay_seconds),
            warnings=[*report.warnings, f"retried:{reason[:200]}"],
            model_usage=usage if usage is not None else report.model_usage,
        )
        transaction.on_commit(lambda: _enqueue(report, delay_seconds=delay_seconds))
    return True


def report_resume(*, user: AbstractBaseUser, report_id: int) -> ResearchReport:
    """Continue a FAILED or CANCELLED report from its findings with a fresh budget; it keeps
    its id, findings, retrieved passages and history."""
    report = _report_for_writer(user=user, report_id=report_id)
    if report.status not in (ReportStatus.FAILED, ReportStatus.CANCELLED):
        raise ReportNotResumable(
            f"only a failed or cancelled report can be resumed, not a {report.status.lower()} one"
        )
    if not report.creator.has_perm(VIEW_CORPUS, report.corpus):
        # The corpus is no longer shared with its creator: the run would fail at its start.
        raise CorpusNotFound("corpus not found", field="id")
    _no_active_run(creator_id=report.creator_id, corpus_id=report.corpus_id, field="id")
    try:
        with transaction.atomic():
            _active_runs_below_cap(user_id=report.creator_id, field="id")
            report_transition(
                report=report,
                to=ReportStatus.QUEUED,
                cancel_requested=False,
                finalized_at=None,
                completed_at=None,
                error="",
                step_count=0,
                tool_call_count=0,
                retry_count=0,
                lease_token="",
                lease_expires_at=None,
                not_before=None,
                warnings=[*report.warnings, "resumed"],
                # Not the phase it ended in ("cancelled"), which the CLI and page would show.
                progress={**report.progress, "phase": "queued", "updated_at": timezone.now().isoformat()},
            )
            transaction.on_commit(lambda: _enqueue(report))
    except IntegrityError as exc:  # another run on this corpus started in between
        raise ReportAlreadyActive(_ALREADY_ACTIVE, field="id") from exc
    except TransitionLost as exc:
        raise ReportNotResumable("the report changed while resuming; try again", field="id") from exc
    return report


def report_plan_record(*, report_id: int, plan: list[dict[str, Any]]) -> None:
    ResearchReport.objects.filter(pk=report_id).update(plan=plan, last_progress_at=timezone.now())


def report_progress_record(
    *,
    report_id: int,
    progress: dict[str, Any],
    engine_state: dict[str, Any] | None = None,
    strategy: str | None = None,
    lease_token: str | None = None,
) -> bool:
    """What the run is doing now, and (with engine_state) the orchestration's checkpoint, in
    one write by the lease holder. False when the run has ended; LeaseLost when another
    delivery of the task holds it now."""
    now = timezone.now()
    fields: dict[str, Any] = {
        "progress": {**progress, "updated_at": now.isoformat()},
        "last_progress_at": now,
    }
    if engine_state is not None:
        fields["engine_state"] = engine_state
    if strategy is not None:
        fields["strategy"] = strategy
    queryset = ResearchReport.objects.filter(
        pk=report_id, status__in=[ReportStatus.RUNNING, ReportStatus.CANCELLING]
    )
    if lease_token is not None:
        queryset = queryset.filter(lease_token=lease_token)
        fields["lease_expires_at"] = now + _lease_duration()
    if queryset.update(**fields):
        return True
    current = ResearchReport.objects.filter(pk=report_id).values("status", "lease_token").first()
    if current and current["status"] not in (s.value for s in TERMINAL_STATUSES):
        _check_lease(ResearchReport(pk=report_id, lease_token=current["lease_token"]), lease_token)
    return False


@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: dict[str, Any]
    duration_ms: float
    outcome: str


_STEP_FIELDS = (
    "lease_token",
    "model_usage",
    "status",
    "corpus_id",
    "retrieved_passage_ids",
    "tool_call_log",
    "findings",
    "step_count",
    "tool_call_count",
)


def report_tool_call_record(
    *,
    report_id: int,
    call: ToolCall | Sequence[ToolCall],
    passage_ids: Sequence[int] = (),
    lease_token: str | None = None,
    usage: dict[str, Any] | None = None,
) -> ResearchReport:
    """One step of the run (or several, a sweep batch's), in one write: the calls' log entries,
    the passages they retrieved joined to the run's accumulator, the progress counters, the
    usage so far and the lease renewal."""
    with transaction.atomic():
        report = _locked_for_step(report_id, relaxed_commit=True)
        return _step_write(report, call, passage_ids=passage_ids, lease_token=lease_token, usage=usage)


def _locked_for_step(report_id: int, *, relaxed_commit: bool = False) -> ResearchReport:
    """The report row, locked for one step's write. With `relaxed_commit` on PostgreSQL the
    transaction's commit does not wait for the WAL flush (~4 ms a step here). That is safe for
    the step log: the next synchronous commit (every finding, the finalize) flushes it too, since
    the WAL is written in order; a crash can lose at most the last few log entries and retrieved
    ids, never a finding or a report. set_config(..., true) is SET LOCAL, evaluated inside the
    locking SELECT: one round trip less per step."""
    queryset = ResearchReport.objects.select_for_update().only(*_STEP_FIELDS)
    if relaxed_commit and connection.vendor == "postgresql":
        queryset = queryset.annotate(_relaxed=RawSQL("set_config('synchronous_commit', 'off', true)", []))
    return queryset.get(pk=report_id)


def _step_write(
    report: ResearchReport,
    call: ToolCall | Sequence[ToolCall],
    *,
    passage_ids: Sequence[int] = (),
    findings: Sequence[dict[str, Any]] = (),
    lease_token: str | None = None,
    usage: dict[str, Any] | None = None,
) -> ResearchReport:
    """Apply one step to a report row the caller has locked, renewing the caller's lease. A
    finished report takes no more steps (a run cut short by a worker's hard limit may still be
    unwinding); a run whose lease another delivery took over raises LeaseLost."""
    if report.is_terminal:
        return report
    _check_lease(report, lease_token)
    fields = ["tool_call_log", "tool_call_count", "step_count", "last_progress_at", "updated"]
    if lease_token is not None:
        report.lease_expires_at = timezone.now() + _lease_duration()
        fields.append("lease_expires_at")
    if usage is not None:
        report.model_usage = usage
        fields.append("model_usage")
    if passage_ids:
        known = set(report.retrieved_passage_ids)
        fresh = [pid for pid in dict.fromkeys(passage_ids) if pid not in known]
        if fresh:
            report.retrieved_passage_ids = [*report.retrieved_passage_ids, *fresh]
            fields.append("retrieved_passage_ids")
    if findings:
        report.findings = [*report.findings, *findings]
        fields.append("findings")
    calls = [call] if isinstance(call, ToolCall) else list(call)
    start = len(report.tool_call_log) + 1
    report.tool_call_log = [*report.tool_call_log, *(_log_entry(c, start + i) for i, c in enumerate(calls))]
    report.tool_call_count += len(calls)
    report.step_count += len(calls)
    report.last_progress_at = report.updated = timezone.now()
    report.save(update_fields=fields)
    return report


def _check_lease(report: ResearchReport, lease_token: str | None) -> None:
    if lease_token is not None and report.lease_token != lease_token:
        raise LeaseLost(f"report {report.pk} is run by another worker now")


def _log_entry(call: ToolCall, index: int) -> dict[str, Any]:
    preview = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return {
        "index": index,
        "tool": call.tool,
        "arguments": _clip(preview, TOOL_ARGS_PREVIEW_CHARS),
        "duration_ms": round(call.duration_ms, 2),
        "outcome": _clip(call.outcome, TOOL_OUTCOME_PREVIEW_CHARS),
        "at": timezone.now().isoformat(),
    }


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class FindingRecorded:
    finding: dict[str, Any]
    # The report's status as the finding's write read it under its row lock: the run needs no
    # query of its own to see a cancel requested before this step.
    report_status: str


@dataclass(frozen=True)
class FindingInput:
    """A finding as a role proposes it: a claim, a quote copied from one of the passages, and
    where it belongs (the sub-question, the position it takes, the role that found it)."""

    claim: str
    quote: str
    passage_ids: Sequence[int]
    section: str | None = None
    question: int | None = None
    position: str | None = None
    origin: str | None = None


def finding_record(
    *,
    report_id: int,
    claim: str,
    quote: str,
    passage_ids: Sequence[int],
    section: str | None = None,
    lease_token: str | None = None,
    question: int | None = None,
    position: str | None = None,
    origin: str | None = None,
) -> FindingRecorded:
    """Record a finding if its passages were retrieved by this run and its quote is verbatim in
    one of them; otherwise FindingRejected with a message the agent can act on. Atomic: the
    finding, its log entry and the counters are written together, under one row lock."""
    item = FindingInput(claim, quote, passage_ids, section, question, position, origin)
    outcome = findings_record(report_id=report_id, items=[item], lease_token=lease_token)[0]
    if isinstance(outcome, FindingRejected):
        raise outcome
    return outcome


def findings_record(
    *, report_id: int, items: Sequence[FindingInput], lease_token: str | None = None
) -> list[FindingRecorded | FindingRejected]:
    """Record several findings in one write (a document sweep's verdicts): each validated as
    finding_record validates one, against the findings before it too. Returns, in order, each
    one's FindingRecorded or the FindingRejected that says why it was not recorded."""
    started = perf_counter()
    outcomes: list[FindingRecorded | FindingRejected] = []
    rejected: list[ToolCall] = []
    with transaction.atomic():
        report = _locked_for_step(report_id)
        _check_lease(report, lease_token)
        calls: list[ToolCall] = []
        accepted: list[dict[str, Any]] = []
        for item in items:
            arguments = {
                "claim": item.claim,
                "quote": item.quote,
                "passage_ids": list(item.passage_ids) if isinstance(item.passage_ids, list | tuple) else [],
                "section": item.section,
            }
            try:
                finding = _finding_validate(report, item, pending=accepted)
            except FindingRejected as exc:
                outcomes.append(exc)
                rejected.append(
                    ToolCall("record_finding", arguments, _ms(started), f"rejected: {exc.message}")
                )
                continue
            accepted.append(finding)
            calls.append(
                ToolCall("record_finding", arguments, _ms(started), f"recorded finding {finding['id']}")
            )
            outcomes.append(FindingRecorded(finding, report.status))
        if accepted:
            _step_write(report, calls, findings=accepted, lease_token=lease_token)
            outcomes = [
                FindingRecorded(o.finding, report.status) if isinstance(o, FindingRecorded) else o
                for o in outcomes
            ]
    if rejected:
        # Rejections are steps too, logged outside the findings' transaction so the log keeps them.
        report_tool_call_record(report_id=report_id, call=rejected, lease_token=lease_token)
    return outcomes


def _ms(started: float) -> float:
    return (perf_counter() - started) * 1000


def _finding_validate(
    report: ResearchReport, item: FindingInput, *, pending: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    if report.status not in (ReportStatus.RUNNING, ReportStatus.CANCELLING):
        raise FindingRejected(f"the run is {report.status.lower()}; no more findings", code="run_not_active")
    claim = " ".join((item.claim or "").split()) if isinstance(item.claim, str) else ""
    if not claim or len(claim) > CLAIM_MAX_CHARS:
        raise FindingRejected(f"a claim is 1 to {CLAIM_MAX_CHARS} characters", field="claim")
    quote = item.quote if isinstance(item.quote, str) else ""
    if len(quote.strip()) < QUOTE_MIN_CHARS or len(quote) > QUOTE_MAX_CHARS:
        raise FindingRejected(
            f"a quote is {QUOTE_MIN_CHARS} to {QUOTE_MAX_CHARS} characters copied exactly from one passage",
            field="quote",
        )
    try:
        ids = list(dict.fromkeys(int(i) for i in item.passage_ids))
    except (TypeError, ValueError) as exc:
        raise FindingRejected(
            "passage_ids must be integers from search results", field="passage_ids"
        ) from exc
    if not ids:
        raise FindingRejected("cite at least one passage id from search results", field="passage_ids")
    retrieved = set(report.retrieved_passage_ids)
    unretrieved = [i for i in ids if i not in retrieved]
    if unretrieved:
        raise FindingRejected(
            f"passages {unretrieved} were not returned by a search in this run; cite only passage ids "
            "that a search or context tool returned",
            code="passage_not_retrieved",
            field="passage_ids",
        )
    passages = citable_passages(corpus_id=report.corpus_id, passage_ids=ids)
    recorded = [*report.findings, *pending]
    for pid in ids:
        passage = passages.get(pid)
        span = quote_locate(passage.text, quote) if passage else None
        if span is None:
            continue
        exact = passage.text[span[0] : span[1]]
        if any(f["passage_id"] == pid and f["quote"] == exact for f in recorded):
            raise FindingRejected(
                "this quote from this passage is already recorded; look for new evidence",
                code="finding_duplicate",
            )
        finding = {
            "id": len(recorded) + 1,
            "claim": claim,
            "quote": exact,
            "passage_id": pid,
            "passage_ids": ids,
            "document_id": passage.document_id,
            "start": passage.start + span[0],
            "end": passage.start + span[1],
            "section": " ".join((item.section or "").split())[:SECTION_MAX_CHARS] or None,
            "recorded_at": timezone.now().isoformat(),
        }
        if item.question is not None:
            finding["question"] = int(item.question)
        if item.position:
            finding["position"] = " ".join(item.position.split())[:SECTION_MAX_CHARS]
        if item.origin:
            finding["origin"] = item.origin
        return finding
    raise FindingRejected(
        f"the quote is not verbatim in passages {ids}; copy the exact words of one passage",
        code="quote_not_verbatim",
        field="quote",
    )


def report_usage_record(*, report_id: int, usage: dict[str, Any]) -> None:
    ResearchReport.objects.filter(pk=report_id).update(model_usage=usage)


def report_retry_count_bump(*, report_id: int) -> None:
    ResearchReport.objects.filter(pk=report_id).update(retry_count=F("retry_count") + 1)


# --- Finalize -------------------------------------------------------------------------------
class Outcome:
    COMPLETED = "completed"  # the agent finalized its report
    SALVAGED = "salvaged"  # a budget or the time limit ran out: the findings become the report
    CANCELLED = "cancelled"
    FAILED = "failed"


def report_finalize(
    *,
    report_id: int,
    outcome: str,
    draft: str | None = None,
    budget: str | None = None,
    error: str | None = None,
    usage: dict[str, Any] | None = None,
    expect: str | None = None,
    lease_token: str | None = None,
    run_warnings: Sequence[str] = (),
) -> ResearchReport:
    """Render and store the report, move it to its terminal status, notify the creator and the
    originating conversation — all in one transaction, exactly once: a second call (a task
    delivered twice, a cancel racing the end of the run) finds it finalized and changes nothing."""
    with transaction.atomic():
        report = ResearchReport.objects.select_for_update().select_related("corpus").get(pk=report_id)
        if report.finalized_at is not None or report.is_terminal:
            return report
        if expect is not None and report.status != expect:
            raise TransitionLost(f"report {report_id} is no longer {expect.lower()}")
        _check_lease(report, lease_token)
        status, warnings, error_text, draft = _final_state(report, outcome, draft, budget, error)
        rendered = _render(report, draft)
        cited = {(c["passage_id"], c["quote"]) for c in rendered.citations}
        aside = findings_set_aside(report.findings, report.engine_state)
        uncited = [
            f for f in report.findings if (f["passage_id"], f["quote"]) not in cited and f["id"] not in aside
        ]
        if uncited:
            rendered = _render(report, _with_findings_section(draft, uncited))
        report = report_transition(
            report=report,
            to=status,
            content=rendered.content,
            citations=rendered.citations,
            warnings=[*report.warnings, *run_warnings, *warnings, *rendered.warnings],
            error=error_text[:ERROR_MAX_CHARS],
            model_usage=usage if usage is not None else report.model_usage,
            finalized_at=timezone.now(),
            lease_token="",
            lease_expires_at=None,
            progress={**report.progress, "phase": status.lower(), "updated_at": timezone.now().isoformat()},
        )
        report.cited_passages.set(rendered.passage_ids)
        report.cited_documents.set(rendered.document_ids)
        notification_create_for_report(report=report)
        if report.conversation_id is not None:
            _announce_in_conversation(report)
    return report


def _render(report: ResearchReport, draft: str):
    known = {*report.retrieved_passage_ids, *draft_passage_ids(draft)}
    return citations_render(
        draft=draft,
        passages=citable_passages(corpus_id=report.corpus_id, passage_ids=known),
        retrieved_ids=report.retrieved_passage_ids,
        findings=report.findings,
        require_findings=True,
    )


def _with_findings_section(draft: str, missing: list[dict[str, Any]]) -> str:
    """Every recorded finding reaches the report: those the draft does not cite (a run resumed
    after a crash, a model that left some out) are listed after it, each cited to its quote.
    Findings the sweep's judge overruled (research.drafts.findings_set_aside) are not: the
    report's Gaps name their documents, and they stay recorded with the run."""
    lines = [draft.rstrip(), "", "## Additional findings", ""]
    lines += [f'- <cite findings="{f["id"]}">{" ".join(f["claim"].split())}</cite>' for f in missing]
    return "\n".join(lines) + "\n"


def _final_state(
    report: ResearchReport, outcome: str, draft: str | None, budget: str | None, error: str | None
) -> tuple[str, list[str], str, str]:
    """(status, warnings, error, draft) for how the run ended. A completed run's own draft is
    used as it is; every other ending is composed from the findings."""
    cancelling = report.status in (ReportStatus.CANCELLING, ReportStatus.QUEUED) or report.cancel_requested
    if outcome == Outcome.CANCELLED or (cancelling and outcome != Outcome.FAILED):
        return ReportStatus.CANCELLED, [], "", _draft_of_cut_short_run(report, "was cancelled", "resume it")
    if outcome == Outcome.COMPLETED:
        if draft and draft.strip():
            return ReportStatus.COMPLETED, [], "", draft
        warning = f"{WARNING_DRAFT_MISSING}:composed_from_findings"
        return ReportStatus.COMPLETED, [warning], "", _draft_from_findings(report)
    if outcome == Outcome.SALVAGED:
        warning = f"{WARNING_BUDGET_EXHAUSTED}:{budget or 'steps'}"
        if report.findings:
            return ReportStatus.COMPLETED, [warning], "", _draft_from_findings(report)
        return (
            ReportStatus.FAILED,
            [warning],
            f"The research budget ({budget or 'steps'}) ran out before any finding was recorded.",
            _draft_of_cut_short_run(
                report, f"ran out of its budget ({budget or 'steps'})", "resume it with a larger budget"
            ),
        )
    error = error or "The research run failed."
    return ReportStatus.FAILED, [], error, _draft_of_failed_run(report, error)


def _draft_of_failed_run(report: ResearchReport, error: str) -> str:
    """A failed run's body says that it failed and why: never, for want of findings, that the
    corpus has no answer (the model or its provider failing says nothing of the corpus)."""
    why = " ".join(markdown_literal(error).split())[:FAILURE_NOTE_MAX_CHARS]
    if report.findings:
        return _draft_from_findings(
            report,
            note=f"The research run failed before it finished ({why}): this is only what it recorded "
            "before; a question without findings here was not fully researched, not found unanswered.",
            unfinished=True,
        )
    return (
        f"# {' '.join(report.title.split())}\n\n"
        f"The research run failed before it recorded any finding: {why}\n\n"
        "This says nothing of whether the corpus answers the question: run it again once the "
        "failure is resolved.\n"
    )


def _draft_of_cut_short_run(report: ResearchReport, ended: str, advice: str) -> str:
    """A run cancelled or out of budget before it finished: its findings, said to be only what
    it recorded; with none, that it recorded none, never that the corpus has no answer."""
    if report.findings:
        return _draft_from_findings(
            report,
            note=f"The research run {ended} before it finished: this is what it recorded before; a "
            "question without findings here was not fully researched, not found unanswered.",
            unfinished=True,
        )
    return (
        f"# {' '.join(report.title.split())}\n\n"
        f"The research run {ended} before it recorded any finding.\n\n"
        f"This says nothing of whether the corpus answers the question: {advice} to research it.\n"
    )


def _draft_from_findings(
    report: ResearchReport,
    *,
    note: str = "Composed from the findings recorded before the run ended.",
    unfinished: bool = False,
) -> str:
    """The findings composed as the offline writer composes them (positions grouped by their
    quotes' words: no model is called inside the finalize transaction)."""
    judged = {
        int(d) for entry in (report.engine_state.get("sweep") or {}).values() for d in entry.get("judged", [])
    }
    not_judged = {int(d) for d in report.engine_state.get("not_judged") or []}
    documents = judged | not_judged | {f["document_id"] for f in report.findings}
    return compose_from_findings(
        title=report.title,
        plan=report.plan,
        engine_state=report.engine_state,
        findings=report.findings,
        titles=dict(Document.objects.filter(pk__in=documents).values_list("pk", "title")),
        note=note,
        unfinished=unfinished,
    )


def _announce_in_conversation(report: ResearchReport) -> None:
    url = reverse("research:report-detail", kwargs={"slug": report.slug})
    verb = {
        ReportStatus.COMPLETED: "is ready",
        ReportStatus.FAILED: "failed",
        ReportStatus.CANCELLED: "was cancelled",
    }[report.status]
    findings = len(report.findings)
    plural = "s" if findings != 1 else ""
    chat_message_append(
        conversation=report.conversation,
        role=MessageRole.SYSTEM,
        content=(
            f"Deep research {verb}: [{markdown_literal(report.title)}]({url}) ({findings} finding{plural})."
        ),
        data={"report_id": report.pk, "slug": report.slug, "status": report.status, "url": url},
    )


# --- Stalled runs ---------------------------------------------------------------------------
def reports_reap_stalled() -> dict[str, int]:
    """The beat job's work: RUNNING runs with no progress for RESEARCH_STALL_SECONDS (their
    worker died) go back to the queue to resume, counting a retry, or end FAILED with their
    findings once the retries are spent; stalled CANCELLING runs end CANCELLED; QUEUED runs
    whose message was lost (a broker restart) are enqueued again."""
    now = timezone.now()
    stalled_before = now - timedelta(seconds=settings.RESEARCH_STALL_SECONDS)
    counts = {"resumed": 0, "failed": 0, "cancelled": 0, "requeued": 0}
    stalled = ResearchReport.objects.filter(
        status__in=[ReportStatus.RUNNING, ReportStatus.CANCELLING], last_progress_at__lt=stalled_before
    ).values_list("pk", "status")
    for report_id, status in stalled:
        if status == ReportStatus.CANCELLING:
            report_finalize(report_id=report_id, outcome=Outcome.CANCELLED)
            counts["cancelled"] += 1
        elif report_requeue(report_id=report_id, lease_token=None, reason="stalled", delay_seconds=0):
            counts["resumed"] += 1
        else:
            report_finalize(
                report_id=report_id,
                outcome=Outcome.FAILED,
                error="The run stalled (its worker stopped) and its retries are spent.",
            )
            counts["failed"] += 1
    waiting = ResearchReport.objects.filter(status=ReportStatus.QUEUED, updated__lt=stalled_before).filter(
        Q(not_before__isnull=True) | Q(not_before__lt=stalled_before)
    )
    for report in waiting:
        # Touch it so the next sweep waits a full stall period before trying again.
        ResearchReport.objects.filter(pk=report.pk, status=ReportStatus.QUEUED).update(updated=now)
        transaction.on_commit(lambda report=report: _enqueue(report))
        counts["requeued"] += 1
    return counts
