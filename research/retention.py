"""Retention: old finished reports (with their findings, citations and tool-call logs, which
live in the report's row, and their notifications) and old read notifications are deleted when
REPORT_RETENTION_DAYS is set. A run that is queued, running or being cancelled is never touched:
each batch locks its rows and deletes only those still finished, so a report resumed between
the selection and the delete stays. Batches keep every transaction short. Chat messages that
linked to a deleted report keep their text; the link then answers 404. Cited passages and
documents stay: only the report's links to them go."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from notifications.models import Notification
from research.exceptions import RetentionInvalid
from research.models import TERMINAL_STATUSES, ResearchReport
from research.selectors import JSONArrayLength

DEFAULT_BATCH_SIZE = 500
# What a report's row holds besides itself, counted by the database (JSON lists).
REPORT_CONTENTS = {"findings": "findings", "citations": "citations", "tool_calls": "tool_call_log"}


@dataclass
class PurgeResult:
    cutoff: datetime
    reports: list[tuple[str, str]] = field(default_factory=list)  # (slug, title) of each
    # In the purged reports' rows: findings, citations, tool-call log entries.
    contents: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REPORT_CONTENTS, 0))
    report_notifications: int = 0  # the purged reports' own notifications, read or not
    read_notifications: int = 0  # other notifications read before the cutoff


@dataclass(frozen=True)
class BatchDeleted:
    reports: list[tuple[str, str]]
    contents: dict[str, int]
    notifications: int


def retention_cutoff(*, days: int) -> datetime:
    return timezone.now() - timedelta(days=days)


def reports_expired(*, cutoff: datetime) -> QuerySet[ResearchReport]:
    """Finished reports that ended (or, never started, were created) before `cutoff`."""
    return (
        ResearchReport.objects.filter(status__in=TERMINAL_STATUSES)
        .annotate(ended=Coalesce(F("completed_at"), F("created")))
        .filter(ended__lt=cutoff)
        .order_by("pk")
    )


def notifications_expired(*, cutoff: datetime) -> QuerySet[Notification]:
    """Notifications read before `cutoff` (unread ones stay until read, or until their report
    goes)."""
    return Notification.objects.filter(read_at__lt=cutoff).order_by("pk")


def reports_purge(*, days: int, batch_size: int = DEFAULT_BATCH_SIZE, dry_run: bool = False) -> PurgeResult:
    """Delete what retention lets go, `batch_size` rows per transaction; with `dry_run`, only
    say what would go."""
    if days <= 0:
        raise RetentionInvalid("the number of days to keep must be positive", field="days")
    if batch_size <= 0:
        raise RetentionInvalid("the batch size must be positive", field="batch_size")
    cutoff = retention_cutoff(days=days)
    if dry_run:
        return _purge_preview(cutoff=cutoff)
    result = PurgeResult(cutoff=cutoff)
    last_pk = 0
    while batch := list(
        reports_expired(cutoff=cutoff).filter(pk__gt=last_pk).values_list("pk", flat=True)[:batch_size]
    ):
        last_pk = batch[-1]
        deleted = reports_delete_finished(report_ids=batch)
        result.reports.extend(deleted.reports)
        result.contents = {kind: result.contents[kind] + deleted.contents[kind] for kind in REPORT_CONTENTS}
        result.report_notifications += deleted.notifications
    while batch := list(notifications_expired(cutoff=cutoff).values_list("pk", flat=True)[:batch_size]):
        deleted_count, _ = Notification.objects.filter(pk__in=batch, read_at__lt=cutoff).delete()
        result.read_notifications += deleted_count
    return result


@transaction.atomic
def reports_delete_finished(*, report_ids: list[int]) -> BatchDeleted:
    """Delete those of `report_ids` that are finished now, with their notifications. The rows
    are locked and their status checked again: one resumed since it was selected is active and
    stays (and, locked, cannot be resumed until this transaction ends)."""
    finished = ResearchReport.objects.filter(pk__in=report_ids, status__in=TERMINAL_STATUSES)
    rows = list(finished.select_for_update().order_by("pk").values_list("pk", "slug", "title"))
    going = ResearchReport.objects.filter(pk__in=[pk for pk, _, _ in rows], status__in=TERMINAL_STATUSES)
    contents = report_contents_count(going)
    _, per_model = going.delete()
    return BatchDeleted(
        reports=[(slug, title) for _, slug, title in rows],
        contents=contents,
        notifications=per_model.get(Notification._meta.label, 0),
    )


def report_contents_count(reports: QuerySet[ResearchReport]) -> dict[str, int]:
    """How many findings, citations and tool-call log entries `reports` hold between them."""
    totals = reports.order_by().aggregate(
        **{kind: Coalesce(Sum(JSONArrayLength(column)), 0) for kind, column in REPORT_CONTENTS.items()}
    )
    return {kind: int(totals[kind]) for kind in REPORT_CONTENTS}


def _purge_preview(*, cutoff: datetime) -> PurgeResult:
    expired = reports_expired(cutoff=cutoff)
    on_reports = Notification.objects.filter(report__in=expired.values("pk"))
    return PurgeResult(
        cutoff=cutoff,
        reports=list(expired.values_list("slug", "title")),
        contents=report_contents_count(expired),
        report_notifications=on_reports.count(),
        read_notifications=notifications_expired(cutoff=cutoff)
        .exclude(report__in=expired.values("pk"))
        .count(),
    )
