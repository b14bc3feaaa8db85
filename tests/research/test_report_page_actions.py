"""The report page while a run goes on: the progress view it polls, Cancel, and Resume for a
failed or cancelled report; the creator's alone; CSRF."""

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from corpora.services import document_delete
from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tasks.research import in_process_pool
from tests.factories import ingest_agreements, ingest_samples, queued_report
from tests.research.checks import assert_closed_citation_graph


def queued(user, corpus) -> ResearchReport:
    return queued_report(
        user,
        corpus,
        "Liability caps",
        prompt="What limits the liability of the supplier?",
        progress={"phase": "planning"},
    )


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def test_a_running_report_page_follows_its_progress_and_offers_cancel(browser, user, corpus):
    report = queued(user, corpus)
    page = browser.get(reverse("research:report-detail", args=[report.slug])).content.decode()
    assert f'data-url="/reports/{report.slug}/progress.json"' in page
    assert 'src="/static/research/progress.js"' in page and finders.find("research/progress.js")
    assert f'action="/reports/{report.slug}/cancel/"' in page and "Resume" not in page
    progress = browser.get(reverse("research:report-progress", args=[report.slug]))
    assert "no-store" in progress["Cache-Control"]
    assert progress.json() | {"elapsed_seconds": None} == {
        "status": "QUEUED",
        "status_display": "Queued",
        "terminal": False,
        "phase": "planning",
        "level": None,
        "levels": None,
        "documents_swept": None,
        "documents_total": None,
        "documents_reread": None,
        "direction": None,
        "steps": 0,
        "findings": 0,
        "sources": 0,
        "elapsed_seconds": None,
    }


@pytest.mark.django_db(transaction=True)
def test_cancel_then_resume_from_the_page(user, corpus):
    ingest_samples(corpus)
    browser = Client()
    browser.force_login(user)
    report = queued(user, corpus)
    response = browser.post(reverse("research:report-cancel", args=[report.slug]), follow=True)
    report.refresh_from_db()
    assert report.status == ReportStatus.CANCELLED
    page = response.content.decode()
    assert "Cancelled." in page and f'action="/reports/{report.slug}/resume/"' in page
    assert browser.get(reverse("research:report-progress", args=[report.slug])).json()["terminal"] is True

    response = browser.post(reverse("research:report-resume", args=[report.slug]), follow=True)
    assert "Resumed from its findings." in response.content.decode()
    assert in_process_pool.wait(timeout=60)
    report.refresh_from_db()
    assert report.status == ReportStatus.COMPLETED and report.citations
    # a completed report is not cancellable: said with its code, nothing changes
    response = browser.post(reverse("research:report-cancel", args=[report.slug]), follow=True)
    assert "report_not_cancellable" in response.content.decode()
    report.refresh_from_db()
    assert report.status == ReportStatus.COMPLETED


def test_resuming_a_running_report_is_refused_with_its_code(browser, user, corpus):
    report = queued(user, corpus)
    response = browser.post(reverse("research:report-resume", args=[report.slug]), follow=True)
    assert "report_not_resumable" in response.content.decode()
    report.refresh_from_db()
    assert report.status == ReportStatus.QUEUED


def test_another_users_report_is_not_found_for_any_action(user, other_user, corpus):
    report = queued(user, corpus)
    bob = Client()
    bob.force_login(other_user)
    assert bob.get(reverse("research:report-progress", args=[report.slug])).status_code == 404
    for name in ("report-cancel", "report-resume"):
        assert bob.post(reverse(f"research:{name}", args=[report.slug])).status_code == 404
    report.refresh_from_db()
    assert report.status == ReportStatus.QUEUED
    assert Client().get(reverse("research:report-progress", args=[report.slug])).status_code == 302


def test_cancel_needs_a_post_with_the_csrf_token(user, corpus):
    report = queued(user, corpus)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(reverse("research:report-cancel", args=[report.slug])).status_code == 403
    assert client.get(reverse("research:report-cancel", args=[report.slug])).status_code == 405
    report.refresh_from_db()
    assert report.status == ReportStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_research_started_from_the_corpus_page_opens_the_report(user, corpus):
    acme, _initech = ingest_samples(corpus)
    browser = Client()
    browser.force_login(user)
    page = browser.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert f'action="/reports/new/{corpus.pk}/"' in page
    response = browser.post(
        reverse("research:report-new", args=[corpus.pk]),
        {
            "prompt": "What limits the liability of the supplier?",
            "depth": "shallow",
            "documents": [acme.document.pk],
        },
    )
    report = ResearchReport.objects.get(creator=user)
    assert response.status_code == 302 and response["Location"] == f"/reports/{report.slug}/"
    assert (report.depth, report.document_scope) == ("shallow", [acme.document.pk])
    assert in_process_pool.wait(timeout=60)
    report.refresh_from_db()
    assert report.status == ReportStatus.COMPLETED
    assert {c["document_id"] for c in report.citations} == {acme.document.pk}


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ({"prompt": "   "}, "prompt_invalid"),
        ({"prompt": "ok", "depth": "bottomless"}, "depth_invalid"),
        ({"prompt": "ok", "documents": ["1; DROP TABLE"]}, "document_ids_invalid"),
    ],
)
def test_a_bad_start_is_said_on_the_corpus_page(browser, user, corpus, data, code):
    response = browser.post(reverse("research:report-new", args=[corpus.pk]), data, follow=True)
    assert response.redirect_chain[-1][0] == f"/corpora/{corpus.pk}/"
    assert code in response.content.decode()
    assert not ResearchReport.objects.exists()


def test_a_start_refused_by_its_checks_spends_no_research_rate(browser, user, corpus, settings):
    # given a research rate of one a minute
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "research": "1/m"}
    # when three starts are refused for their blank prompt
    for _ in range(3):
        response = browser.post(
            reverse("research:report-new", args=[corpus.pk]), {"prompt": " "}, follow=True
        )
        assert "prompt_invalid" in response.content.decode()
    # then a valid start still goes through, and the next is limited
    browser.post(reverse("research:report-new", args=[corpus.pk]), {"prompt": "What law governs?"})
    assert ResearchReport.objects.count() == 1
    response = browser.post(
        reverse("research:report-new", args=[corpus.pk]), {"prompt": "Again?"}, follow=True
    )
    assert "rate_limited" in response.content.decode()


def test_a_refused_start_fills_the_form_in_again_with_what_was_typed(browser, user, corpus):
    # given a corpus with documents, and a start whose rubric is too long
    acme, _initech = ingest_samples(corpus)
    data = {
        "prompt": "What limits the liability of <the supplier>?",
        "depth": "deep",
        "rubric": "x" * 9_000,
        "documents": [acme.document.pk],
    }
    # when it is refused
    response = browser.post(reverse("research:report-new", args=[corpus.pk]), data, follow=True)
    # then the corpus page says why and holds the prompt, rubric, depth and documents as typed
    page = response.content.decode()
    assert "rubric_invalid" in page and not ResearchReport.objects.exists()
    assert ">What limits the liability of &lt;the supplier&gt;?</textarea>" in page
    assert f">{'x' * 9_000}</textarea>" in page
    assert '<option value="deep" selected>' in page
    assert f'value="{acme.document.pk}" checked>' in page
    # and once only: the page read again has an empty form
    again = browser.get(reverse("corpora:detail", args=[corpus.pk])).content.decode()
    assert "What limits the liability" not in again and '<option value="standard" selected>' in again


def test_research_on_someone_elses_corpus_is_not_found(other_user, corpus):
    bob = Client()
    bob.force_login(other_user)
    assert bob.post(reverse("research:report-new", args=[corpus.pk]), {"prompt": "x"}).status_code == 404
    assert not ResearchReport.objects.exists()


def test_warnings_are_shown_plainly_and_escaped(browser, user, corpus):
    report = queued_report(
        user,
        corpus,
        "Liability caps",
        status=ReportStatus.COMPLETED,
        warnings=["the time limit ended the sweep after 40 of 61 documents", "<b>quote</b> removed"],
    )
    page = browser.get(reverse("research:report-detail", args=[report.slug])).content.decode()
    section = page.split('<section class="warnings"', 1)[1].split("</section>", 1)[0]
    assert "2 warnings" in section and "<details" not in section
    assert "<li>the time limit ended the sweep after 40 of 61 documents</li>" in section
    assert "&lt;b&gt;quote&lt;/b&gt; removed" in section


def test_a_source_whose_document_was_deleted_shows_the_quote_the_report_kept(browser, user, corpus):
    # given a completed report on the agreements, one of whose cited documents is then deleted
    ingest_agreements(corpus, 4, insured=2)
    report = report_start(user=user, corpus=corpus, prompt="Which agreements require insurance?")
    report_run(report_id=report.pk)
    report.refresh_from_db()
    assert_closed_citation_graph(report)
    cited = report.citations[0]
    document_delete(user=user, document=corpus.documents.get(pk=cited["document_id"]))
    # when the page is read
    page = browser.get(reverse("research:report-detail", args=[report.slug])).content.decode()
    # then that source's panel holds the kept quote, saying the document is gone
    source = page.split(f'id="source-{cited["footnote"]}"', 1)[1].split("</li>", 1)[0]
    assert f"<mark>{cited['quote']}</mark>" in source
    # and it names the passage as the Markdown and the exports do: its place, then its id
    assert f"passage {cited['passage_number']} (id {cited['passage_id']})" in source
    assert "The document has been deleted since" in source
    # (the suite-wide check reads each cited passage from the database: this one is gone by design)
    report.delete()
