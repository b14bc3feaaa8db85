"""Outgoing webhooks: when a user's research report ends, a signed JSON POST to the URL they
configured (a summary, or a Slack/Discord-compatible message), sent after the run's transaction
commits, by the worker (or a thread of this process without a broker), retried with backoff on
network errors, 429 and 5xx, never followed through a redirect, never blocking or failing the
run. URLs whose host resolves to a private, loopback, link-local, multicast, reserved or otherwise
non-public address are refused when saved and again at each delivery (the connection goes to the
address checked, so a name that changes its answer cannot slip through), unless
WEBHOOK_ALLOW_PRIVATE_ADDRESSES; cloud metadata addresses always. The address rule is PydanticAI's
SSRF guard (pydantic_ai._ssrf, what its web_fetch common tool uses: it also decodes IPv4 hidden
in IPv6 transition forms), joined with the standard library's is_global; the guard is a private
module, so tests/notifications/test_webhooks.py pins its verdicts.

Verifying a delivery: HMAC-SHA256, keyed with the webhook's secret, of
`<X-Deepcite-Timestamp>.<raw body>`, hex, equals `X-Deepcite-Signature` after `sha256=`; refuse
timestamps more than a few minutes old."""

import contextlib
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from pydantic_ai._ssrf import is_cloud_metadata_ip, is_private_ip

from notifications.exceptions import WebhookFormatInvalid, WebhookUrlInvalid, WebhookUrlPrivate
from notifications.models import Webhook, WebhookFormat
from notifications.selectors import webhook_get

logger = logging.getLogger(__name__)

EXCERPT_WORDS = 500
USER_AGENT = "Deepcite-Webhook/1"


class DeliveryFailed(Exception):
    """A delivery that may succeed if tried again (network error, timeout, 429, 5xx)."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    address: str  # the IP the connection goes to


# --- Configuration --------------------------------------------------------------------------
def webhook_set(*, user: AbstractBaseUser, url: str, payload_format: str, enabled: bool = True) -> Webhook:
    """Create or change the user's webhook; its secret is made once and kept."""
    url = (url or "").strip()
    if payload_format not in WebhookFormat.values:
        raise WebhookFormatInvalid(f"format must be one of {', '.join(WebhookFormat.values)}", field="format")
    resolve_target(url)
    webhook, _ = Webhook.objects.update_or_create(
        user=user,
        defaults={"url": url, "payload_format": payload_format, "enabled": enabled},
        create_defaults={
            "url": url,
            "payload_format": payload_format,
            "enabled": enabled,
            "secret": secrets.token_hex(32),
        },
    )
    return webhook


def webhook_rotate_secret(*, user: AbstractBaseUser) -> Webhook:
    webhook = webhook_get(user=user)
    webhook.secret = secrets.token_hex(32)
    webhook.save(update_fields=["secret", "modified"])
    return webhook


def webhook_delete(*, user: AbstractBaseUser) -> None:
    Webhook.objects.filter(user=user).delete()


def resolve_target(url: str) -> Target:
    """The URL's parts and the public address to connect to, or a typed refusal."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > 2000:
        raise WebhookUrlInvalid("a webhook URL is an http:// or https:// URL with a host", field="url")
    if parts.username or parts.password:
        raise WebhookUrlInvalid("a webhook URL carries no user name or password", field="url")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError) as exc:
        raise WebhookUrlInvalid(f"cannot resolve {parts.hostname!r}", field="url") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:  # every answer: the connection may go to any of them
        if refused := address_refusal(address):
            raise WebhookUrlPrivate(
                f"{parts.hostname!r} resolves to {refused} ({address}); webhooks go to public addresses only",
                field="url",
            )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])


def address_refusal(address: str) -> str | None:
    """Why a webhook may not connect to this IP address, or None when it may."""
    if is_cloud_metadata_ip(address):
        return "a cloud metadata address"  # even when private addresses are allowed
    if settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES:
        return None
    if is_private_ip(address) or not ipaddress.ip_address(address.split("%", 1)[0]).is_global:
        return "a non-public address"
    return None


# --- What is sent ---------------------------------------------------------------------------
def report_payload(report, *, payload_format: str) -> dict[str, Any]:
    url = settings.SITE_URL.rstrip("/") + reverse("research:report-detail", args=[report.slug])
    words = report.content.split()
    excerpt = " ".join(words[:EXCERPT_WORDS]) + (" …" if len(words) > EXCERPT_WORDS else "")
    if payload_format == WebhookFormat.SLACK:
        text = f"Deep research {report.status.lower()}: {report.title}\n{url}\n\n{excerpt}"
        return {"text": text, "content": text[:2000]}  # Slack reads text, Discord content
    return {
        "event": "research_report.finished",
        "report": {
            "id": report.pk,
            "slug": report.slug,
            "title": report.title,
            "status": report.status,
            "url": url,
            "corpus": report.corpus.name,
            "created": report.created.isoformat(),
            "completed_at": report.completed_at.isoformat() if report.completed_at else None,
            "findings": len(report.findings),
            "sources": len(report.citations),
        },
        "excerpt": excerpt,
    }


def sample_payload(*, payload_format: str) -> dict[str, Any]:
    if payload_format == WebhookFormat.SLACK:
        text = "Deepcite test delivery: your webhook works."
        return {"text": text, "content": text}
    return {"event": "test", "message": "Deepcite test delivery: your webhook works."}


def signature_headers(secret: str, body: bytes, timestamp: int) -> dict[str, str]:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Deepcite-Timestamp": str(timestamp), "X-Deepcite-Signature": f"sha256={digest}"}


# --- Delivery -------------------------------------------------------------------------------
def deliver(webhook: Webhook, payload: dict[str, Any]) -> int:
    """One attempt: POST the payload, record the outcome on the webhook; the HTTP status, or
    DeliveryFailed when trying again may help."""
    body = json.dumps(payload, ensure_ascii=False).encode()
    try:
        status = _post(webhook, body)
    except (WebhookUrlInvalid, WebhookUrlPrivate) as exc:
        _record(webhook, None, f"{exc.message} ({exc.code})")
        return 0  # refused: no retry
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        _record(webhook, None, f"{type(exc).__name__}: {exc}"[:500])
        raise DeliveryFailed(str(exc)) from exc
    _record(webhook, status, "" if 200 <= status < 300 else f"HTTP {status}")
    if status == 429 or status >= 500:
        raise DeliveryFailed(f"HTTP {status}")
    return status


class _Cuttable:
    """The TCP socket under the connection (under TLS too), kept to be shut from another thread."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._cut = False
        self.raw: socket.socket | None = None

    def _connected(self, sock: socket.socket) -> None:
        with self._lock:
            self.raw = sock
            if self._cut:
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            if self.raw is not None:
                with contextlib.suppress(OSError):  # closed already
                    self.raw.shutdown(socket.SHUT_RDWR)


class _PinnedHTTPConnection(_Cuttable, http.client.HTTPConnection):
    """Connects to the address checked, not to what the host name resolves to by now; the name
    still makes the Host header."""

    address = ""

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self._connected(self.sock)


class _PinnedHTTPSConnection(_Cuttable, http.client.HTTPSConnection):
    """The same over TLS: the certificate is verified for the host name (and SNI sent for it)."""

    address = ""

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        try:
            self._connected(sock)
            self.sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def _post(webhook: Webhook, body: bytes) -> int:
    """The receiver's status, within WEBHOOK_TIMEOUT_SECONDS for the whole attempt: a socket's
    timeout is per read, so a receiver sending a byte every few seconds would hold the attempt
    (and the test delivery's page) for ever. At the deadline a timer shuts the socket, which
    ends whatever read is waiting. Only the status line and headers are read, never the body."""
    target = resolve_target(webhook.url)  # checked again: the name may answer differently now
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = kind(target.host, target.port, timeout=timeout)
    connection.address = target.address
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        connection.cut()

    deadline = threading.Timer(timeout, cut)
    deadline.daemon = True
    deadline.start()
    try:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **signature_headers(webhook.secret, body, int(time.time())),
        }
        try:
            connection.request("POST", target.path, body=body, headers=headers)
            status = connection.getresponse().status  # a redirect is an answer, never followed
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set():
                raise TimeoutError(f"timed out: no answer within {timeout:g} s") from exc
            raise
        if expired.is_set():
            raise TimeoutError(f"timed out: no answer within {timeout:g} s")
        return status
    finally:
        deadline.cancel()
        connection.close()


def _record(webhook: Webhook, status: int | None, error: str) -> None:
    Webhook.objects.filter(pk=webhook.pk).update(
        last_status=status, last_error=error[:500], last_attempt_at=timezone.now()
    )


def retry_delay(attempt: int) -> float:
    """Seconds before retry `attempt` (1, 2, ...): exponential from WEBHOOK_RETRY_BACKOFF_SECONDS."""
    return settings.WEBHOOK_RETRY_BACKOFF_SECONDS * 2 ** (attempt - 1)


def deliver_with_retries(webhook_id: int, report_id: int | None) -> None:
    """Without a broker: every attempt in this thread, sleeping between them."""
    for attempt in range(settings.WEBHOOK_MAX_RETRIES + 1):
        try:
            delivery_attempt(webhook_id, report_id)
            return
        except DeliveryFailed:
            if attempt == settings.WEBHOOK_MAX_RETRIES:
                logger.warning("webhook %s: report %s not delivered after retries", webhook_id, report_id)
                return
            time.sleep(retry_delay(attempt + 1))


def delivery_attempt(webhook_id: int, report_id: int | None) -> int:
    """One attempt for a report's end (or a test delivery when report_id is None)."""
    from research.models import ResearchReport  # research imports notifications

    webhook = Webhook.objects.filter(pk=webhook_id, enabled=True).first()
    if webhook is None:
        return 0
    if report_id is None:
        return deliver(webhook, sample_payload(payload_format=webhook.payload_format))
    report = ResearchReport.objects.select_related("corpus").filter(pk=report_id).first()
    if report is None:
        return 0
    return deliver(webhook, report_payload(report, payload_format=webhook.payload_format))


def webhook_schedule(*, user_id: int, report_id: int | None) -> bool:
    """Send the user's webhook after the current transaction commits, off this thread; False
    when the user has none enabled."""
    webhook = Webhook.objects.filter(user_id=user_id, enabled=True).only("pk").first()
    if webhook is None:
        return False

    def send() -> None:
        if settings.CELERY_BROKER_URL:
            from tasks.webhooks import deliver_webhook  # tasks imports the apps, not the reverse

            deliver_webhook.delay(webhook.pk, report_id)
        else:
            thread = threading.Thread(
                target=deliver_with_retries, args=(webhook.pk, report_id), name="webhook", daemon=True
            )
            thread.start()

    # robust: a broker that cannot take the task is logged; the run that just committed stands.
    transaction.on_commit(send, robust=True)
    return True
