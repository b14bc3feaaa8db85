"""Retention: old finished reports (with their findings, citations and tool-call logs, which
live in the report's row, and their notifications) and old read notifications are deleted when
REPORT_RETENTION_DAYS is set. A run that is queued, running or being cancelled is never touched:
each batch locks its rows and deletes only those still finished, so a report resumed meanwhile
stays. Batches keep every transaction short. Chat messages that linked to a deleted report keep
their text; the link then answers 404."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from notifications.models import Notification
from research.models import TERMINAL_STATUSES, ResearchReport

DEFAULT_BATCH_SIZE = 500


@dataclass
class PurgeResult:
    cutoff: datetime
    reports: list[tuple[str, str]] = field(default_factory=list)  # (slug, title) of each
    notifications: int = 0


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
    if days <= 0 or batch_size <= 0:
        raise ValueError("days and batch_size must be positive")
    result = PurgeResult(cutoff=retention_cutoff(days=days))
    if dry_run:
        result.reports = list(reports_expired(cutoff=result.cutoff).values_list("slug", "title"))
        result.notifications = notifications_expired(cutoff=result.cutoff).count()
        return result
    last_pk = 0
    while True:
        expired = reports_expired(cutoff=result.cutoff).filter(pk__gt=last_pk)
        batch = list(expired.values_list("pk", flat=True)[:batch_size])
        if not batch:
            break
        last_pk = batch[-1]
        with transaction.atomic():
            # Locked and checked again: a report resumed since the selection is running now.
            still_finished = ResearchReport.objects.select_for_update().filter(
                pk__in=batch, status__in=TERMINAL_STATUSES
            )
            rows = list(still_finished.values_list("pk", "slug", "title"))
            ResearchReport.objects.filter(pk__in=[pk for pk, _, _ in rows]).delete()
        result.reports.extend((slug, title) for _, slug, title in rows)
    while True:
        batch = list(notifications_expired(cutoff=result.cutoff).values_list("pk", flat=True)[:batch_size])
        if not batch:
            break
        deleted, _ = Notification.objects.filter(pk__in=batch, read_at__lt=result.cutoff).delete()
        result.notifications += deleted
    return result
