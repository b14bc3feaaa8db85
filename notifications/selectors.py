"""Reads of notifications: a user sees only their own."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from notifications.exceptions import NotificationNotFound, WebhookNotFound
from notifications.models import Notification, Webhook

User = AbstractBaseUser | AnonymousUser


def notification_list(*, user: User, unread_only: bool = False) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    queryset = Notification.objects.filter(recipient=user)
    if unread_only:
        queryset = queryset.filter(read_at__isnull=True)
    return queryset


def notification_unread_count(*, user: User) -> int:
    """The bell's number: one COUNT over the inbox index."""
    return notification_list(user=user, unread_only=True).count()


def notification_inbox(*, user: User) -> QuerySet[Notification]:
    """The user's notifications as the notifications page lists them, newest first, each with
    its report's slug and title (not the report's heavy columns)."""
    return (
        notification_list(user=user)
        .select_related("report")
        .only("kind", "created", "read_at", "data", "report__slug", "report__title")
        .order_by("-created", "-pk")
    )


def notification_get(*, user: User, notification_id: int) -> Notification:
    notification = notification_list(user=user).filter(pk=notification_id).first()
    if notification is None:
        raise NotificationNotFound("notification not found")
    return notification


def webhook_of(*, user: User) -> Webhook | None:
    """The user's webhook, or None (always None when signed out)."""
    if not user.is_authenticated:
        return None
    return Webhook.objects.filter(user=user).first()


def webhook_get(*, user: User) -> Webhook:
    webhook = webhook_of(user=user)
    if webhook is None:
        raise WebhookNotFound("no webhook is configured")
    return webhook
