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


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON summary"
    SLACK = "slack", "Slack / Discord message"


class Webhook(models.Model):
    """Where a user's finished reports are announced: a URL that gets a signed POST."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField(max_length=2000)
    payload_format = models.CharField(max_length=8, choices=WebhookFormat.choices, default=WebhookFormat.JSON)
    # Shown to its owner, who verifies deliveries with it (HMAC-SHA256 of timestamp.body).
    secret = models.CharField(max_length=64, editable=False)
    enabled = models.BooleanField(default=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    modified = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.url}"
