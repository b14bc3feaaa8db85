"""/healthz: is the database reachable, and the broker when one is configured. JSON, no secrets."""

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

BROKER_TIMEOUT_SECONDS = 2


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database(), "broker": _broker()}
    healthy = all(state in ("ok", "not_configured") for state in checks.values())
    return JsonResponse({"status": "ok" if healthy else "error", **checks}, status=200 if healthy else 503)


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
