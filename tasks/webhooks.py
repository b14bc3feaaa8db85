"""The webhook delivery task: one attempt per run of the task, retried with exponential
backoff (notifications.webhooks.retry_delay) on network errors, 429 and 5xx, at most
WEBHOOK_MAX_RETRIES times (read when it runs, so the setting wins over Celery's default of 3)."""

from celery import shared_task
from django.conf import settings

from notifications.webhooks import DeliveryFailed, delivery_attempt, retry_delay


@shared_task(name="notifications.deliver_webhook", bind=True, ignore_result=True, acks_late=True)
def deliver_webhook(self, webhook_id: int, report_id: int | None) -> int:
    try:
        return delivery_attempt(webhook_id, report_id)
    except DeliveryFailed as exc:
        retries = self.request.retries
        if retries >= settings.WEBHOOK_MAX_RETRIES:
            return 0  # given up; the webhook's last status says why
        raise self.retry(
            exc=exc, countdown=retry_delay(retries + 1), max_retries=settings.WEBHOOK_MAX_RETRIES
        ) from exc
