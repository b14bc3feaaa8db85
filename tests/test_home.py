"""The home page a sign-in lands on: one's corpora (own and shared), recent reports with their
status, unread notifications; nothing of another user's; escaped; signed-in only."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from corpora.services import corpus_create, corpus_share
from notifications.models import Notification
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tasks.research import in_process_pool
from tests.factories import ingest_samples, queued_report


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def test_signing_in_lands_on_home(user):
    response = Client().post(reverse("login"), {"username": "alice", "password": "pw-alice-123"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    page = response.content.decode()
    assert "Your corpora" in page and "Recent reports" in page
    assert 'href="/accounts/tokens/"' in page  # the nav


def test_home_needs_a_sign_in(db):
    response = Client().get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_new_users_home_names_them_in_the_command_that_adds_documents_for_them(browser, user):
    # the ingest command acts as --user (default deepcite): without it, the corpus is not theirs
    page = browser.get("/").content.decode()
    assert "<code>manage.py ingest FOLDER --corpus NAME --user alice</code>" in page


def test_home_lists_own_and_shared_corpora_and_not_anyone_elses(browser, user, other_user):
    mine = corpus_create(creator=user, name="Supplier contracts")
    ingest_samples(mine)
    theirs = corpus_create(creator=other_user, name="Bob's shared NDAs")
    corpus_share(user=other_user, corpus=theirs, username="alice")
    corpus_create(creator=other_user, name="Bob's private board minutes")
    page = browser.get("/").content.decode()
    assert f'<a href="/corpora/{mine.pk}/">Supplier contracts</a></td><td>2</td>' in page
    shared_row = f'<a href="/corpora/{theirs.pk}/">Bob&#x27;s shared NDAs</a></td><td>0</td>\n'
    assert shared_row + "        <td>shared with you" in page
    assert "board minutes" not in page


@pytest.mark.django_db(transaction=True)
def test_home_shows_ones_reports_and_unread_notifications(user, other_user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    report = report_start(user=user, corpus=corpus, prompt="What limits the liability of the supplier?")
    bobs = corpus_create(creator=other_user, name="Bob's")
    ingest_samples(bobs)
    report_start(user=other_user, corpus=bobs, prompt="Bob's question about <b>termination</b>")
    assert in_process_pool.wait(timeout=60)
    report.refresh_from_db()
    assert report.status == ReportStatus.COMPLETED

    client = Client()
    client.force_login(user)
    page = client.get("/").content.decode()
    assert f'<a href="/reports/{report.slug}/">{report.title}</a>' in page
    assert 'data-status="COMPLETED"' in page
    assert "(1 unread)" in page and "Research report completed" in page
    assert "Bob" not in page

    Notification.objects.filter(recipient=user).update(read_at=report.completed_at)
    assert "No unread notifications." in client.get("/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_superusers_home_shows_only_their_own_reports(user):
    corpus = corpus_create(creator=user, name="Contracts")
    ingest_samples(corpus)
    report_start(user=user, corpus=corpus, prompt="What limits the liability of the supplier?")
    assert in_process_pool.wait(timeout=60)
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client = Client()
    client.force_login(admin)
    page = client.get("/").content.decode()
    assert "No reports yet" in page
    assert ResearchReport.objects.count() == 1


def test_titles_are_escaped(browser, user):
    corpus_create(creator=user, name="<img src=x onerror=alert(1)>")
    page = browser.get("/").content.decode()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_home_reads_no_reports_heavy_columns(browser, user, corpus):
    queued_report(user, corpus, "Light", status=ReportStatus.COMPLETED)
    Notification.objects.create(
        recipient=user, kind="RESEARCH_REPORT_COMPLETED", report=ResearchReport.objects.get()
    )
    context = browser.get(reverse("home")).context
    [report] = context["reports"]
    assert {"content", "findings", "tool_call_log", "citations"} <= report.get_deferred_fields()
    [notification] = context["notifications"]
    assert {"content", "findings"} <= notification.report.get_deferred_fields()


def test_a_corpus_the_form_could_not_create_is_said_under_the_form(browser, user):
    # given a corpus of that name already
    corpus_create(creator=user, name="Contracts")
    # when the form asks for another of the same name
    page = browser.post(reverse("corpora:new"), {"name": "Contracts"}, follow=True).content.decode()
    # then the refusal shows right under the form, not above it below the notifications
    form_end = page.index("Create corpus</button>\n  </form>")
    refusal = page.index("(corpus_name_taken)")
    assert page.index("<h2>Notifications") < form_end < refusal < page.index('<table class="list">')
