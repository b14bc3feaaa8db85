"""Outgoing webhooks against a real local HTTP server: a finished report is POSTed signed (the
test verifies the HMAC as a receiver would), retried after a 5xx or a timeout with backoff, not
after a 4xx, never to a private address (refused when saved and again when sent), never holding
up the run; the Slack/Discord format; the Celery task's retries; the page, its own user's only."""

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest
from django.test import Client

from accounts.services import api_token_create
from notifications.models import Webhook
from notifications.webhooks import (
    DeliveryFailed,
    WebhookUrlInvalid,
    WebhookUrlPrivate,
    deliver_with_retries,
    delivery_attempt,
    webhook_set,
)
from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tasks.webhooks import deliver_webhook
from tests.api.conftest import GraphQL
from tests.factories import ingest_samples
from tests.local_server import LocalServer


class Receiver:
    """A local endpoint answering each POST with the next planned status (then 200)."""

    def __init__(self, statuses=(), delay: float = 0.0) -> None:
        self.statuses = list(statuses)
        self.delay = delay
        self.requests: list[dict] = []
        self.received = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                time.sleep(receiver.delay)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.received.set()

            def log_message(self, *args):
                pass

        self.server = LocalServer(Handler)

    def __enter__(self):
        self.server.__enter__()
        self.url = self.server.url.removesuffix("/v1") + "/hooks/deepcite?team=1"
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)


@pytest.fixture
def private_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_RETRY_BACKOFF_SECONDS = 0.01
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    settings.SITE_URL = "https://deepcite.example.org"


@pytest.fixture
def finished(user, corpus):
    ingest_samples(corpus)
    report = report_start(user=user, corpus=corpus, prompt="What limits the liability of the supplier?")
    return report


def verify(secret: str, request: dict) -> dict:
    """What a receiver does: recompute the signature over timestamp.body and compare."""
    timestamp = request["headers"]["X-Deepcite-Timestamp"]
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + request["body"], hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(request["headers"]["X-Deepcite-Signature"], f"sha256={expected}")
    assert abs(time.time() - int(timestamp)) < 60
    return json.loads(request["body"])


def join_deliveries() -> None:
    """Wait for the delivery threads (no broker here) the run's commit started."""
    for thread in threading.enumerate():
        if thread.name == "webhook":
            thread.join(timeout=30)


def run_to_its_end(user, corpus) -> ResearchReport:
    """A report started as a user starts one: with no broker, this process's pool runs it once
    the start commits (transactional tests only); waited for here."""
    ingest_samples(corpus)
    report = report_start(user=user, corpus=corpus, prompt="What limits the liability of the supplier?")
    deadline = time.monotonic() + 60
    while not report.is_terminal and time.monotonic() < deadline:
        time.sleep(0.1)
        report.refresh_from_db()
    return report


@pytest.mark.django_db(transaction=True)
def test_a_finished_report_is_posted_signed_after_the_run_commits(user, corpus, private_allowed):
    with Receiver() as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        report = run_to_its_end(user, corpus)
        assert receiver.received.wait(10)
        join_deliveries()
    [request] = receiver.requests
    payload = verify(webhook.secret, request)
    assert request["path"] == "/hooks/deepcite?team=1"
    assert request["headers"]["Content-Type"] == "application/json"
    assert payload["event"] == "research_report.finished"
    assert payload["report"] | {"created": None, "completed_at": None} == {
        "id": report.pk,
        "slug": report.slug,
        "title": report.title,
        "status": "COMPLETED",
        "url": f"https://deepcite.example.org/reports/{report.slug}/",
        "corpus": "Contracts",
        "created": None,
        "completed_at": None,
        "findings": len(report.findings),
        "sources": len(report.citations),
    }
    assert payload["excerpt"].split()[:5] == report.content.split()[:5]
    assert len(payload["excerpt"].split()) <= 501
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (200, "")


def test_a_5xx_is_retried_with_backoff_until_accepted(user, private_allowed):
    with Receiver(statuses=[500, 503]) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_with_retries(webhook.pk, None)
    assert len(receiver.requests) == 3
    webhook.refresh_from_db()
    assert webhook.last_status == 200


def test_a_4xx_is_not_retried(user, private_allowed):
    with Receiver(statuses=[400]) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_with_retries(webhook.pk, None)
    assert len(receiver.requests) == 1
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (400, "HTTP 400")


def test_a_timeout_is_a_failure_retried_then_given_up(user, private_allowed, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.2
    settings.WEBHOOK_MAX_RETRIES = 1
    with Receiver(delay=0.6) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        with pytest.raises(DeliveryFailed):
            delivery_attempt(webhook.pk, None)
        deliver_with_retries(webhook.pk, None)
    assert len(receiver.requests) == 3  # the single attempt, then one try and one retry
    webhook.refresh_from_db()
    assert webhook.last_status is None and "timed out" in webhook.last_error


def test_the_celery_task_retries_a_5xx(user, private_allowed):
    with Receiver(statuses=[502]) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_webhook.apply(args=(webhook.pk, None))
    assert len(receiver.requests) == 2


def test_slack_format_is_a_text_message_with_the_link(user, finished, private_allowed):
    report = report_run(report_id=finished.pk)
    with Receiver() as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="slack")
        assert delivery_attempt(webhook.pk, report.pk) == 200
    payload = verify(webhook.secret, receiver.requests[0])
    assert set(payload) == {"text", "content"}
    assert payload["text"].startswith(f"Deep research completed: {report.title}\n")
    assert f"https://deepcite.example.org/reports/{report.slug}/" in payload["text"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://0.0.0.0/hook",
        "https://192.168.0.10/hook",
    ],
)
def test_private_addresses_are_refused_when_saved(user, url):
    with pytest.raises(WebhookUrlPrivate):
        webhook_set(user=user, url=url, payload_format="json")
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["ftp://example.org/x", "javascript:alert(1)", "http:///nohost", "https://user:pw@example.org/", ""],
)
def test_malformed_urls_are_refused(user, url):
    with pytest.raises(WebhookUrlInvalid):
        webhook_set(user=user, url=url, payload_format="json")


def test_a_private_address_is_refused_again_when_sent(user, private_allowed, settings):
    with Receiver() as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
        assert delivery_attempt(webhook.pk, None) == 0
    assert receiver.requests == []
    webhook.refresh_from_db()
    assert "webhook_url_private" in webhook.last_error


def test_a_dead_endpoint_never_holds_up_the_run(
    user, finished, private_allowed, django_capture_on_commit_callbacks
):
    with Receiver() as receiver:
        url = receiver.url
    webhook_set(user=user, url=url, payload_format="json")  # nothing listens there any more
    with django_capture_on_commit_callbacks(execute=True):
        report = report_run(report_id=finished.pk)
    assert report.status == ReportStatus.COMPLETED


def test_the_page_saves_tests_and_shows_only_ones_own_webhook(user, other_user, private_allowed):
    alice = Client()
    alice.force_login(user)
    with Receiver() as receiver:
        page = alice.post(
            "/notifications/webhook/", {"url": receiver.url, "format": "json", "enabled": "on"}, follow=True
        )
        assert "Webhook saved" in page.content.decode()
        webhook = Webhook.objects.get(user=user)
        assert webhook.secret in page.content.decode()
        tested = alice.post("/notifications/webhook/", {"action": "test"}, follow=True).content.decode()
        assert "Test delivery answered HTTP 200." in tested
    assert verify(webhook.secret, receiver.requests[0]) == {
        "event": "test",
        "message": "Deepcite test delivery: your webhook works.",
    }
    bob = Client()
    bob.force_login(other_user)
    theirs = bob.get("/notifications/webhook/").content.decode()
    assert webhook.secret not in theirs and receiver.url not in theirs
    refused = bob.post("/notifications/webhook/", {"action": "test"}, follow=True).content.decode()
    assert "webhook_not_found" in refused
    gone = alice.post("/notifications/webhook/", {"action": "delete"}, follow=True).content.decode()
    assert "Webhook deleted." in gone and not Webhook.objects.exists()


def test_the_page_says_why_a_url_is_refused(user):
    alice = Client()
    alice.force_login(user)
    page = alice.post("/notifications/webhook/", {"url": "http://127.0.0.1/x", "format": "json"}, follow=True)
    assert "webhook_url_private" in page.content.decode() and not Webhook.objects.exists()


SET_WEBHOOK = """mutation($u: String!) {
  setWebhook(url: $u, format: "slack") { webhook { url format enabled secret } errors { code field } }
}"""


def test_the_api_sets_reads_and_deletes_ones_own_webhook(user, other_user):
    gql = GraphQL(Client(), token=api_token_create(user=user, name="hooks").secret)
    other = GraphQL(Client(), token=api_token_create(user=other_user, name="hooks").secret)
    refused = gql.data(SET_WEBHOOK, {"u": "http://127.0.0.1/x"})["setWebhook"]
    assert refused == {"webhook": None, "errors": [{"code": "webhook_url_private", "field": "url"}]}
    saved = gql.data(SET_WEBHOOK, {"u": "https://93.184.215.14/hook"})["setWebhook"]
    assert saved["errors"] == [] and saved["webhook"]["format"] == "slack"
    assert len(saved["webhook"]["secret"]) == 64
    assert gql.data("{ webhook { url } }") == {"webhook": {"url": "https://93.184.215.14/hook"}}
    assert other.data("{ webhook { url } }") == {"webhook": None}
    deleted = gql.data("mutation { deleteWebhook { deleted errors { code } } }")["deleteWebhook"]
    assert deleted == {"deleted": True, "errors": []} and not Webhook.objects.exists()
