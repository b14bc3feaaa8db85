"""/healthz: is the database reachable, and the broker when one is configured; and whether
research runs are being taken. JSON, no secrets."""

from django.conf import settings
from django.db import connection
from django.db.models import Min, Q
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

BROKER_TIMEOUT_SECONDS = 2


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database(), "broker": _broker()}
    healthy = all(state in ("ok", "not_configured") for state in checks.values())
    body = {"status": "ok" if healthy else "error", **checks}
    if checks["database"] == "ok":
        # Whether the workers take the runs: informational, never a 503 (a web container is not
        # restarted because the workers are down); a monitor alerts on "stalled".
        body["research_queue"] = _research_queue()
    return JsonResponse(body, status=200 if healthy else 503)


def _research_queue() -> dict[str, object]:
    """The research runs waiting to start and how long the oldest has: "stalled" once it has
    waited RESEARCH_STALL_SECONDS (no worker takes runs), else "ok"."""
    from research.models import ReportStatus, ResearchReport

    now = timezone.now()
    waiting = ResearchReport.objects.filter(status=ReportStatus.QUEUED).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=now)
    )
    # A run resumed after a stop keeps its creation time: the age of those never started says
    # whether workers take new runs.
    oldest = waiting.filter(started_at__isnull=True).aggregate(oldest=Min("created"))["oldest"]
    seconds = int((now - oldest).total_seconds()) if oldest else 0
    state = "stalled" if seconds >= settings.RESEARCH_STALL_SECONDS else "ok"
    return {"state": state, "waiting": waiting.count(), "oldest_seconds": seconds}


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return "error"
    return "ok"


def _broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "not_configured"
    from config.celery_app import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception:
        return "error"
    return "ok"
