"""Errors of notification reads and writes, each with a stable code."""

from config.exceptions import ApplicationError


class NotificationNotFound(ApplicationError):
    # The same error whether the notification does not exist or is someone else's.
    code = "notification_not_found"
