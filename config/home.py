"""The home page a sign-in lands on: the user's corpora (own and shared with them), their most
recent reports with status, and their unread notifications. Every list is the signed-in user's
own, through the selectors the API uses."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from corpora.selectors import corpus_list
from notifications.selectors import notification_inbox
from research.selectors import report_list_rows

RECENT_REPORTS = 20
NOTIFICATIONS_SHOWN = 10


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    corpora = corpus_list(user=user).annotate(document_count=Count("documents")).order_by("name")
    # The rows' own columns only: a report's findings, logs and content stay unread here.
    reports = report_list_rows(user=user)[:RECENT_REPORTS]
    unread = notification_inbox(user=user).filter(read_at__isnull=True)
    context = {
        "corpora": corpora,
        "reports": reports,
        "notifications": unread[:NOTIFICATIONS_SHOWN],
        "unread_count": unread.count(),
    }
    return render(request, "home.html", context)
