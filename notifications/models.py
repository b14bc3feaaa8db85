"""In-app notifications: what a user is told when something they started ends."""

from django.conf import settings
from django.db import models


class NotificationKind(models.TextChoices):
    RESEARCH_REPORT_COMPLETED = "RESEARCH_REPORT_COMPLETED", "Research report completed"
    RESEARCH_REPORT_FAILED = "RESEARCH_REPORT_FAILED", "Research report failed"
    RESEARCH_REPORT_CANCELLED = "RESEARCH_REPORT_CANCELLED", "Research report cancelled"


class Notification(models.Model):
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=64, choices=NotificationKind.choices)
    report = models.ForeignKey(
        "research.ResearchReport",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notifications",
    )
    # What the client shows without another query: report id, slug, corpus, title, status.
    data = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["recipient", "read_at", "-created"], name="notification_inbox")]

    def __str__(self) -> str:
        return f"{self.kind} for {self.recipient_id}"
