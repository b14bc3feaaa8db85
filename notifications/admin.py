from django.contrib import admin

from notifications.models import Notification, Webhook


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("kind", "recipient", "report", "created", "read_at")
    list_filter = ("kind",)
    raw_id_fields = ("recipient", "report")
    readonly_fields = ("data", "created")


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("user", "url", "payload_format", "enabled", "last_status", "last_attempt_at")
    list_filter = ("enabled", "payload_format")
    raw_id_fields = ("user",)
    # The signing secret is its owner's; the admin neither shows nor edits it.
    exclude = ("secret",)
    readonly_fields = ("last_status", "last_error", "last_attempt_at", "created", "modified")
