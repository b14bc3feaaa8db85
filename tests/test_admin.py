from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from accounts.services import api_token_create
from research.engine.run import report_run
from research.models import ResearchReport
from research.services import report_start
from tests.factories import ingest_samples, queued_report


@pytest.fixture
def admin_client_logged_in(client, db):
    admin = get_user_model().objects.create_superuser(username="root", password="pw-root-123")
    client.force_login(admin)
    return client


def test_admin_lists_and_shows_every_model_read_only_where_it_matters(admin_client_logged_in, user, corpus):
    ingest_samples(corpus)
    report = report_start(user=user, corpus=corpus, prompt="liability")
    report_run(report_id=report.pk)
    token = api_token_create(user=user, name="ci").token
    for model, pk in [
        ("research/researchreport", report.pk),
        ("corpora/corpus", corpus.pk),
        ("corpora/document", corpus.documents.first().pk),
        ("notifications/notification", report.notifications.first().pk),
        ("accounts/apitoken", token.pk),
    ]:
        app, name = model.split("/")
        assert admin_client_logged_in.get(reverse(f"admin:{app}_{name}_changelist")).status_code == 200
        page = admin_client_logged_in.get(reverse(f"admin:{app}_{name}_change", args=[pk]))
        assert page.status_code == 200
    # reports, documents and tokens are made by the services, never by hand
    for app, name in [("research", "researchreport"), ("corpora", "document"), ("accounts", "apitoken")]:
        assert admin_client_logged_in.get(reverse(f"admin:{app}_{name}_add")).status_code == 403


def test_healthz_reports_the_database_and_an_unconfigured_broker(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "not_configured",
        "research_queue": {"state": "ok", "waiting": 0, "oldest_seconds": 0},
    }
    assert client.post("/healthz").status_code == 405


def test_healthz_says_when_queued_runs_wait_past_the_stall_time(client, user, corpus, settings):
    # given a run queued an hour ago that no worker took
    report = queued_report(user, corpus, "Liability caps")
    ResearchReport.objects.filter(pk=report.pk).update(created=timezone.now() - timedelta(hours=1))
    # then the health check still answers 200 (the web works) but says the queue is stalled
    response = client.get("/healthz")
    assert response.status_code == 200
    queue = response.json()["research_queue"]
    assert queue["state"] == "stalled" and queue["waiting"] == 1 and queue["oldest_seconds"] >= 3600
    # and a fresh one is not
    ResearchReport.objects.filter(pk=report.pk).update(created=timezone.now())
    assert client.get("/healthz").json()["research_queue"]["state"] == "ok"


def test_healthz_fails_when_the_broker_is_unreachable(client, db, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    from config.celery_app import app

    previous = app.conf.broker_url
    app.conf.broker_url = settings.CELERY_BROKER_URL
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = previous
    assert response.status_code == 503
    assert {k: response.json()[k] for k in ("status", "database", "broker")} == {
        "status": "error",
        "database": "ok",
        "broker": "error",
    }
