"""Reads of notifications: a user sees only their own."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from notifications.models import Notification


def notification_list(
    *, user: AbstractBaseUser | AnonymousUser, unread_only: bool = False
) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    queryset = Notification.objects.filter(recipient=user)
    if unread_only:
        queryset = queryset.filter(read_at__isnull=True)
    return queryset
