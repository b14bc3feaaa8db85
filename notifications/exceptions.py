"""Errors of notification reads and writes, each with a stable code."""

from config.exceptions import ApplicationError


class NotificationNotFound(ApplicationError):
    # The same error whether the notification does not exist or is someone else's.
    code = "notification_not_found"


class WebhookUrlInvalid(ApplicationError):
    code = "webhook_url_invalid"


class WebhookUrlPrivate(ApplicationError):
    # The URL's host is, or resolves to, an address webhooks may not reach (SSRF).
    code = "webhook_url_private"


class WebhookFormatInvalid(ApplicationError):
    code = "webhook_format_invalid"


class WebhookNotFound(ApplicationError):
    code = "webhook_not_found"
