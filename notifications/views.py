"""The notifications pages: the signed-in user's notifications, newest first, each linking to
its report, with Mark read and Mark all read (through the service the GraphQL mutation uses);
and the tiny JSON view the nav's bell polls for its unread count. Only one's own: another
user's notification is a 404 and stays as it was."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.exceptions import ApplicationError
from notifications.exceptions import NotificationNotFound
from notifications.models import WebhookFormat
from notifications.selectors import (
    notification_get,
    notification_inbox,
    notification_unread_count,
    webhook_get,
    webhook_of,
)
from notifications.services import notifications_mark_read
from notifications.webhooks import (
    DeliveryFailed,
    delivery_attempt,
    webhook_delete,
    webhook_rotate_secret,
    webhook_set,
)

NOTIFICATIONS_PER_PAGE = 25


@login_required
@require_GET
def notification_list_page(request: HttpRequest) -> HttpResponse:
    page = Paginator(notification_inbox(user=request.user), NOTIFICATIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(request, "notifications/notification_list.html", {"page": page})


@login_required
@require_GET
def notification_unread(request: HttpRequest) -> JsonResponse:
    """What the bell polls (static/notifications/bell.js)."""
    response = JsonResponse({"unread": notification_unread_count(user=request.user)})
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def notification_read(request: HttpRequest, notification_id: int) -> HttpResponse:
    try:
        notification = notification_get(user=request.user, notification_id=notification_id)
    except NotificationNotFound as exc:
        raise Http404("notification not found") from exc
    notifications_mark_read(user=request.user, ids=[notification.pk])
    return _back_to_list(request)


@login_required
@require_POST
def notification_read_all(request: HttpRequest) -> HttpResponse:
    marked = notifications_mark_read(user=request.user)
    messages.success(request, f"{marked} notification{pluralize(marked)} marked read.")
    return _back_to_list(request)


def _back_to_list(request: HttpRequest) -> HttpResponse:
    """The page of the list the form was on (a number, or the first page)."""
    url = reverse("notifications:list")
    page = request.POST.get("page", "")
    if page.isascii() and page.isdigit() and page != "1":
        url = f"{url}?page={int(page)}"
    return redirect(url)


@login_required
@require_http_methods(["GET", "POST"])
def webhook_page(request: HttpRequest) -> HttpResponse:
    """Configure the user's webhook: URL and format (save), a test delivery, a new secret, or
    delete it. Each action answers with what happened, codes included."""
    if request.method == "POST":
        try:
            _webhook_action(request, request.POST.get("action", "save"))
        except ApplicationError as error:  # webhook_url_invalid / _private / _format_invalid / _not_found
            messages.error(request, f"{error.message} ({error.code})")
        return redirect("notifications:webhook")
    context = {"webhook": webhook_of(user=request.user), "formats": WebhookFormat.choices}
    return render(request, "notifications/webhook.html", context)


def _webhook_action(request: HttpRequest, action: str) -> None:
    if action == "save":
        webhook_set(
            user=request.user,
            url=request.POST.get("url", ""),
            payload_format=request.POST.get("format", WebhookFormat.JSON),
            enabled=request.POST.get("enabled") == "on",
        )
        messages.success(request, "Webhook saved: each finished report is announced there.")
    elif action == "test":
        _webhook_test(request)
    elif action == "rotate":
        webhook_rotate_secret(user=request.user)
        messages.success(request, "A new secret: update the receiving end to verify with it.")
    elif action == "delete":
        webhook_delete(user=request.user)
        messages.success(request, "Webhook deleted.")


def _webhook_test(request: HttpRequest) -> None:
    """One delivery of a sample payload now (no retry), its answer shown."""
    webhook = webhook_get(user=request.user)
    try:
        status = delivery_attempt(webhook.pk, None)
    except DeliveryFailed as failure:
        messages.error(request, f"The test delivery failed: {failure} (webhook_delivery_failed).")
        return
    webhook.refresh_from_db()
    if 200 <= status < 300:
        messages.success(request, f"Test delivery answered HTTP {status}.")
    else:
        messages.error(request, f"The test delivery was not accepted: {webhook.last_error}.")
