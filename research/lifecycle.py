"""The only place a report's status changes: a table of allowed transitions, applied by
compare-and-set so that two writers can never both move a report out of the same status."""

from typing import Any

from django.utils import timezone

from research.exceptions import TransitionLost, TransitionNotAllowed
from research.models import ReportStatus, ResearchReport

S = ReportStatus
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.RUNNING, S.CANCELLED, S.FAILED}),
    # RUNNING -> CANCELLED happens when a run is cut short and finalizes with a pending cancel;
    # RUNNING -> QUEUED when a transient failure or a stall sends the run back to resume.
    S.RUNNING: frozenset({S.QUEUED, S.CANCELLING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.CANCELLING: frozenset({S.CANCELLED, S.FAILED}),
    S.COMPLETED: frozenset(),
    # A failed or cancelled report can be resumed on request, keeping its id and findings.
    S.FAILED: frozenset({S.QUEUED}),
    S.CANCELLED: frozenset({S.QUEUED}),
}


def transition_allowed(from_: str, to: str) -> bool:
    return to in ALLOWED_TRANSITIONS.get(from_, frozenset())


def report_transition(*, report: ResearchReport, to: str, **fields: Any) -> ResearchReport:
    """Move `report` from the status it was loaded with to `to`, writing `fields` in the same
    UPDATE. Raises TransitionNotAllowed for an edge not in the table, TransitionLost when the
    row no longer has the status the caller saw."""
    from_ = report.status
    if not transition_allowed(from_, to):
        raise TransitionNotAllowed(f"a {from_.lower()} report cannot become {to.lower()}", field="status")
    now = timezone.now()
    fields.setdefault("updated", now)
    if to == S.RUNNING:
        fields.setdefault("started_at", now)
        fields.setdefault("last_progress_at", now)
    if to in (S.COMPLETED, S.FAILED, S.CANCELLED):
        fields.setdefault("completed_at", now)
    changed = ResearchReport.objects.filter(pk=report.pk, status=from_).update(status=to, **fields)
    if not changed:
        raise TransitionLost(f"report {report.pk} is no longer {from_.lower()}", field="status")
    report.status = to
    for name, value in fields.items():
        setattr(report, name, value)
    return report
