from django.contrib import admin

from notifications.models import Notification


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("kind", "recipient", "report", "created", "read_at")
    list_filter = ("kind",)
    raw_id_fields = ("recipient", "report")
    readonly_fields = ("data", "created")
