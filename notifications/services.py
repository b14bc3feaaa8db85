"""Writes of notifications."""

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from notifications.models import Notification, NotificationKind
from notifications.webhooks import webhook_schedule

REPORT_KIND_BY_STATUS = {
    "COMPLETED": NotificationKind.RESEARCH_REPORT_COMPLETED,
    "FAILED": NotificationKind.RESEARCH_REPORT_FAILED,
    "CANCELLED": NotificationKind.RESEARCH_REPORT_CANCELLED,
}


def notification_create_for_report(*, report) -> Notification:
    """Tell the creator that a report reached a terminal status. Called inside the transaction
    that finalizes the report, so the two are written together or not at all."""
    webhook_schedule(user_id=report.creator_id, report_id=report.pk)  # sent once this commits
    return Notification.objects.create(
        recipient_id=report.creator_id,
        kind=REPORT_KIND_BY_STATUS[report.status],
        report=report,
        data={
            "report_id": report.pk,
            "slug": report.slug,
            "corpus_id": report.corpus_id,
            "corpus_name": report.corpus.name,
            "title": report.title,
            "status": report.status,
        },
    )


def notifications_mark_read(*, user: AbstractBaseUser, ids: Iterable[int] | None = None) -> int:
    """Mark the user's unread notifications (all, or those among `ids`) read; returns how many."""
    queryset = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if ids is not None:
        queryset = queryset.filter(pk__in=list(ids))
    return queryset.update(read_at=timezone.now())
