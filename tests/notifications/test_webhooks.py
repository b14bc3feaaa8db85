"""Outgoing webhooks against a real local HTTP(S) server: a finished report is POSTed signed (the
test verifies the HMAC as a receiver would), retried after a 5xx, a 429 or a timeout with doubling
backoff, not after another 4xx nor through a redirect; never to a private, multicast or reserved
address (refused when saved and again when sent, the connection going to the address checked: DNS
is the one outside thing faked, to rebind a name); never holding up the run, even with its endpoint
or the broker down; the Slack/Discord format; the Celery task's retries, as many as the setting
says; the page and the GraphQL mutations, each user's own only."""

import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest
from django.test import Client

from accounts.services import api_token_create
from notifications.exceptions import WebhookFormatInvalid, WebhookUrlInvalid, WebhookUrlPrivate
from notifications.models import Webhook
from notifications.webhooks import (
    DeliveryFailed,
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
from tests.notifications.webhook_receiver import Receiver, verify


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


@pytest.mark.parametrize("statuses", [[500, 503], [429, 502]])
def test_a_5xx_or_429_is_retried_with_doubling_backoff_until_accepted(
    user, private_allowed, settings, statuses
):
    settings.WEBHOOK_RETRY_BACKOFF_SECONDS = 0.1
    with Receiver(statuses=statuses) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_with_retries(webhook.pk, None)
    assert len(receiver.requests) == 3
    first, second, third = (request["at"] for request in receiver.requests)
    assert second - first >= 0.1 and third - second >= 0.2  # slept 0.1 s, then 0.2 s
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (200, "")


@pytest.mark.parametrize("status", [400, 404, 410])
def test_a_4xx_is_not_retried(user, private_allowed, status):
    with Receiver(statuses=[status]) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_with_retries(webhook.pk, None)
    assert len(receiver.requests) == 1
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (status, f"HTTP {status}")


def test_a_redirect_is_not_followed_nor_retried(user, private_allowed):
    with Receiver(statuses=[302]) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        deliver_with_retries(webhook.pk, None)
    assert [request["path"] for request in receiver.requests] == ["/hooks/deepcite?team=1"]
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (302, "HTTP 302")


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
    webhook.refresh_from_db()
    assert webhook.last_status == 200


def test_the_celery_task_retries_as_often_as_the_setting_says_then_gives_up(user, private_allowed, settings):
    # More than Celery's default of 3 retries: the setting, not the default, caps them.
    settings.WEBHOOK_MAX_RETRIES = 4
    with Receiver(statuses=[500] * 4) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        assert deliver_webhook.apply(args=(webhook.pk, None)).successful()
    assert len(receiver.requests) == 5
    webhook.refresh_from_db()
    assert webhook.last_status == 200
    with Receiver(statuses=[503] * 10) as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        assert deliver_webhook.apply(args=(webhook.pk, None)).successful()  # given up, not raised
    assert len(receiver.requests) == 5
    webhook.refresh_from_db()
    assert (webhook.last_status, webhook.last_error) == (503, "HTTP 503")


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
        "http://100.64.0.1/hook",  # carrier-grade NAT
        "http://224.0.0.251/hook",  # multicast
        "http://[ff02::1]/hook",
        "http://240.0.0.1/hook",  # reserved
        "http://255.255.255.255/hook",
        "http://[fd00::1]/hook",  # unique local
        "http://[::ffff:127.0.0.1]/hook",  # IPv4 loopback in IPv6 forms
        "http://[64:ff9b::a00:1]/hook",
        "http://[2002:7f00:1::]/hook",
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
    assert not Webhook.objects.exists()


def test_an_unknown_format_is_refused(user):
    with pytest.raises(WebhookFormatInvalid) as refused:
        webhook_set(user=user, url="https://93.184.215.14/hook", payload_format="xml")
    assert (refused.value.code, refused.value.field) == ("webhook_format_invalid", "format")
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data", "http://168.63.129.16/"])
def test_cloud_metadata_addresses_are_refused_even_when_private_ones_are_allowed(user, private_allowed, url):
    with pytest.raises(WebhookUrlPrivate, match="cloud metadata"):
        webhook_set(user=user, url=url, payload_format="json")
    assert not Webhook.objects.exists()


def test_a_private_address_is_refused_again_when_sent(user, private_allowed, settings):
    with Receiver() as receiver:
        webhook = webhook_set(user=user, url=receiver.url, payload_format="json")
        settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
        assert delivery_attempt(webhook.pk, None) == 0
    assert receiver.requests == []
    webhook.refresh_from_db()
    assert "webhook_url_private" in webhook.last_error


class FakeDns:
    """The outside DNS for one name, answering each lookup with the next planned address (the
    last one after); IP literals resolve as usual."""

    def __init__(self, monkeypatch, name: str, answers: list[str]) -> None:
        self.name, self.answers, self.lookups = name, answers, 0
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if host != name:
                return real(host, port, *args, **kwargs)
            address = self.answers[min(self.lookups, len(self.answers) - 1)]
            self.lookups += 1
            return real(address, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_delivery_connects_to_the_address_it_checked(user, private_allowed, monkeypatch):
    with Receiver() as receiver:
        port = receiver.port
        # Rebinding after the check: a second lookup would answer an address nothing listens on.
        dns = FakeDns(monkeypatch, "hooks.example.test", ["127.0.0.1", "127.0.0.1", "127.0.0.9"])
        webhook = webhook_set(user=user, url=f"http://hooks.example.test:{port}/in", payload_format="json")
        assert delivery_attempt(webhook.pk, None) == 200
    assert dns.lookups == 2  # one when saved, one when sent: the connection reused that answer
    [request] = receiver.requests
    assert request["headers"]["Host"] == f"hooks.example.test:{port}"
    verify(webhook.secret, request)


def test_a_name_rebound_to_a_private_address_is_refused_when_sent(user, monkeypatch):
    FakeDns(monkeypatch, "hooks.example.test", ["93.184.215.14", "127.0.0.1"])
    webhook = webhook_set(user=user, url="http://hooks.example.test/in", payload_format="json")
    with Receiver() as receiver:
        assert delivery_attempt(webhook.pk, None) == 0
    assert receiver.requests == []
    webhook.refresh_from_db()
    assert webhook.last_status is None
    assert webhook.last_error == (
        "'hooks.example.test' resolves to a non-public address (127.0.0.1); "
        "webhooks go to public addresses only (webhook_url_private)"
    )


def self_signed(tmp_path, name: str) -> tuple[str, ssl.SSLContext]:
    """A certificate for `name` (made with the openssl command) and a server context serving it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a certificate with")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return str(cert), context


def test_https_goes_to_the_checked_address_and_verifies_the_certificate_for_the_name(
    user, private_allowed, monkeypatch, tmp_path
):
    cert, tls = self_signed(tmp_path, "hooks.example.test")
    monkeypatch.setenv("SSL_CERT_FILE", cert)  # the receiver's certificate is the one trusted
    dns = FakeDns(monkeypatch, "hooks.example.test", ["127.0.0.1", "127.0.0.1", "127.0.0.9"])
    with Receiver(tls=tls) as receiver:
        port = receiver.port
        webhook = webhook_set(user=user, url=f"https://hooks.example.test:{port}/in", payload_format="json")
        assert delivery_attempt(webhook.pk, None) == 200
        # The same server reached under another name: its certificate does not match, refused.
        FakeDns(monkeypatch, "other.example.test", ["127.0.0.1"])
        other = webhook_set(user=user, url=f"https://other.example.test:{port}/in", payload_format="json")
        with pytest.raises(DeliveryFailed):
            delivery_attempt(other.pk, None)
    assert dns.lookups == 2 and len(receiver.requests) == 1
    verify(webhook.secret, receiver.requests[0])
    other.refresh_from_db()
    assert other.last_status is None and other.last_error.startswith("SSLCertVerificationError")


@pytest.mark.django_db(transaction=True)
def test_a_dead_endpoint_never_holds_up_the_run(user, corpus, private_allowed, settings):
    settings.WEBHOOK_MAX_RETRIES = 2
    with Receiver() as receiver:
        url = receiver.url
    webhook = webhook_set(user=user, url=url, payload_format="json")  # nothing listens there now
    report = run_to_its_end(user, corpus)
    assert report.status == ReportStatus.COMPLETED
    join_deliveries()
    webhook.refresh_from_db()
    assert webhook.last_status is None and webhook.last_error.startswith("ConnectionRefusedError")


def test_a_broker_that_cannot_take_the_delivery_never_fails_the_run(
    user, finished, private_allowed, settings, django_capture_on_commit_callbacks
):
    from config.celery_app import app

    webhook_set(user=user, url="https://93.184.215.14/hook", payload_format="json")
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    previous = app.conf.broker_url
    app.conf.broker_url = settings.CELERY_BROKER_URL
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            report = report_run(report_id=finished.pk)
    finally:
        app.conf.broker_url = previous
    assert report.status == ReportStatus.COMPLETED and len(callbacks) >= 1
    report.refresh_from_db()
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
    rotated = bob.post("/notifications/webhook/", {"action": "rotate"}, follow=True).content.decode()
    assert "webhook_not_found" in rotated
    bob.post("/notifications/webhook/", {"action": "delete"})
    assert Webhook.objects.get(user=user).secret == webhook.secret  # Bob's actions touched nothing
    renewed = alice.post("/notifications/webhook/", {"action": "rotate"}, follow=True).content.decode()
    new_secret = Webhook.objects.get(user=user).secret
    assert "A new secret" in renewed and new_secret in renewed and new_secret != webhook.secret
    gone = alice.post("/notifications/webhook/", {"action": "delete"}, follow=True).content.decode()
    assert "Webhook deleted." in gone and not Webhook.objects.exists()


def test_the_page_wants_a_signed_in_user_and_a_csrf_token(user):
    anonymous = Client()
    assert anonymous.get("/notifications/webhook/").url.startswith("/accounts/login/")
    posted = anonymous.post(
        "/notifications/webhook/", {"url": "https://93.184.215.14/hook", "format": "json"}
    )
    assert posted.status_code == 302 and posted.url.startswith("/accounts/login/")
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(user)
    assert forged.post("/notifications/webhook/", {"url": "https://93.184.215.14/hook"}).status_code == 403
    assert not Webhook.objects.exists()


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


def test_the_api_refuses_an_unknown_format_and_a_signed_out_caller(user):
    gql = GraphQL(Client(), token=api_token_create(user=user, name="hooks").secret)
    bad_format = """mutation { setWebhook(url: "https://93.184.215.14/hook", format: "xml") {
      webhook { url } errors { code field } } }"""
    assert gql.data(bad_format)["setWebhook"] == {
        "webhook": None,
        "errors": [{"code": "webhook_format_invalid", "field": "format"}],
    }
    anonymous = GraphQL(Client())
    refused = anonymous.data(SET_WEBHOOK, {"u": "https://93.184.215.14/hook"})["setWebhook"]
    assert refused["webhook"] is None and [e["code"] for e in refused["errors"]] == ["not_authenticated"]
    assert anonymous.data("{ webhook { url } }") == {"webhook": None}
    assert not Webhook.objects.exists()


class Trickler:
    """A receiver that reads the request, then answers a byte at a time, `every` seconds apart:
    each read is quick, the answer never finishes in time."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/deepcite"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            answer = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"." * 60 + b"\r\nContent-Length: 0\r\n\r\n"
            for byte in answer:
                if self.stop.wait(self.every):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)
        self.listener.close()


def test_a_receiver_trickling_its_answer_is_cut_off_at_the_overall_timeout(user, private_allowed, settings):
    # given a receiver that would take 16 s to answer, a byte every 0.2 s, and a 1 s timeout
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    alice = Client()
    alice.force_login(user)
    with Trickler() as receiver:
        webhook_set(user=user, url=receiver.url, payload_format="json", enabled=True)
        # when the test delivery is asked for on the page
        tested = alice.post("/notifications/webhook/", {"action": "test"}, follow=True).content.decode()
    # then the attempt ends as a timeout, not with the receiver's late 200
    assert "The test delivery failed: timed out: no answer within 1 s (webhook_delivery_failed)." in tested
    webhook = Webhook.objects.get(user=user)
    assert webhook.last_status is None
    assert webhook.last_error == "TimeoutError: timed out: no answer within 1 s"
