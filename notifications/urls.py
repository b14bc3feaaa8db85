from django.urls import path

from notifications.views import (
    notification_list_page,
    notification_read,
    notification_read_all,
    notification_unread,
    webhook_page,
)

app_name = "notifications"
urlpatterns = [
    path("", notification_list_page, name="list"),
    path("unread.json", notification_unread, name="unread"),
    path("read-all/", notification_read_all, name="read-all"),
    path("webhook/", webhook_page, name="webhook"),
    path("<int:notification_id>/read/", notification_read, name="read"),
]
