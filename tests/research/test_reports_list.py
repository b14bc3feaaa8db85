"""The reports list `/reports/`: one's own reports only (superusers too), newest first, with
their corpus, status, depth, dates and findings count, paginated, filtered by status; an
unknown filter is a clear 400, never a 500; signed-in only."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from corpora.services import corpus_create
from research.models import ReportStatus, ResearchReport
from research.views import REPORTS_PER_PAGE
from tests.factories import queued_report

STATUS_FILTER_INVALID = (
    "Unknown status filter; choose one of: all, running, completed, failed, cancelled."
    " (status_filter_invalid)"
)


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def _report(user, corpus, title: str, status: str, *, minutes_ago: int = 0, findings: int = 0, **fields):
    report = queued_report(
        user,
        corpus,
        title=title,
        status=status,
        findings=[{"finding_id": n} for n in range(findings)],
        **fields,
    )
    created = timezone.now() - timedelta(minutes=minutes_ago)
    ResearchReport.objects.filter(pk=report.pk).update(created=created)
    return report


def _titles(response) -> list[str]:
    return [report.title for report in response.context["page"].object_list]


def _one_of_each_status(user) -> None:
    """A report in every status: the active ones each on a corpus of their own (one active run
    per creator and corpus)."""
    for minutes_ago, status in enumerate(ReportStatus.values):
        corpus = corpus_create(creator=user, name=f"Corpus {status}")
        _report(user, corpus, f"{status.lower()} report", status, minutes_ago=minutes_ago)


def test_the_reports_list_needs_a_sign_in(db):
    response = Client().get("/reports/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/reports/"


def test_the_list_shows_ones_reports_newest_first_with_their_columns(browser, user, corpus):
    finished = timezone.now() - timedelta(minutes=5)
    old = _report(user, corpus, "Older question", ReportStatus.COMPLETED, minutes_ago=60, findings=3)
    ResearchReport.objects.filter(pk=old.pk).update(completed_at=finished, depth="deep")
    new = _report(user, corpus, "Newer question", ReportStatus.FAILED, minutes_ago=1)

    response = browser.get("/reports/")

    assert response.status_code == 200
    assert _titles(response) == ["Newer question", "Older question"]
    page = response.content.decode()
    old.refresh_from_db()
    assert (
        f'<tr><td><a href="/reports/{old.slug}/">Older question</a></td>\n'
        "        <td>Contracts</td>\n"
        '        <td><span class="status" data-status="COMPLETED">Completed</span></td>\n'
        "        <td>deep</td>\n"
        f"        <td>{old.created:%Y-%m-%d %H:%M}</td>\n"
        f"        <td>{finished:%Y-%m-%d %H:%M}</td>\n"
        "        <td>3</td></tr>"
    ) in page
    assert f'<a href="/reports/{new.slug}/">Newer question</a>' in page
    assert "<td></td>\n        <td>0</td></tr>" in page  # not completed, no findings
    assert page.index("Newer question") < page.index("Older question")


def test_the_list_reads_no_heavy_column_and_counts_findings_in_the_database(browser, user, corpus):
    _report(user, corpus, "With findings", ReportStatus.COMPLETED, findings=4, content="x" * 10_000)
    row = browser.get("/reports/").context["page"].object_list[0]
    assert row.findings_count == 4
    assert {"findings", "content", "tool_call_log", "engine_state", "citations"} <= row.get_deferred_fields()


@pytest.mark.parametrize(
    ("status_filter", "expected"),
    [
        ("all", ["queued", "running", "cancelling", "completed", "failed", "cancelled"]),
        ("", ["queued", "running", "cancelling", "completed", "failed", "cancelled"]),
        ("running", ["queued", "running", "cancelling"]),
        ("completed", ["completed"]),
        ("failed", ["failed"]),
        ("cancelled", ["cancelled"]),
    ],
)
def test_the_status_filter(browser, user, status_filter, expected):
    _one_of_each_status(user)
    response = browser.get("/reports/", {"status": status_filter})
    assert response.status_code == 200
    assert _titles(response) == [f"{name} report" for name in expected]
    current = status_filter or "all"
    assert (
        f'<a href="?status={current}" aria-current="page">{current.capitalize()}</a>'
        in response.content.decode()
    )


@pytest.mark.parametrize("status_filter", ["bogus", "COMPLETED", "running'><script>", "all "])
def test_an_unknown_status_filter_is_a_clear_400(browser, user, status_filter):
    _one_of_each_status(user)
    response = browser.get("/reports/", {"status": status_filter})
    assert response.status_code == 400
    page = response.content.decode()
    assert STATUS_FILTER_INVALID in page
    assert "report</a>" not in page and "<script>" not in page
    assert '<a href="?status=failed">Failed</a>' in page  # the valid choices, to pick one


def test_an_empty_filter_says_so(browser, user, corpus):
    _report(user, corpus, "Done", ReportStatus.COMPLETED)
    assert "No failed reports." in browser.get("/reports/?status=failed").content.decode()
    ResearchReport.objects.all().delete()
    assert "No reports yet" in browser.get("/reports/").content.decode()


def test_the_list_is_paginated(browser, user, corpus):
    for n in range(REPORTS_PER_PAGE + 5):
        _report(user, corpus, f"Report {n:02}", ReportStatus.COMPLETED, minutes_ago=n)

    first = browser.get("/reports/")
    assert _titles(first) == [f"Report {n:02}" for n in range(REPORTS_PER_PAGE)]
    assert '<span class="current">Page 1 of 2</span>' in first.content.decode()
    assert '<a href="?page=2" rel="next">' in first.content.decode()

    second = browser.get("/reports/?page=2")
    assert _titles(second) == [f"Report {n:02}" for n in range(REPORTS_PER_PAGE, REPORTS_PER_PAGE + 5)]
    assert '<a href="?page=1" rel="prev">' in second.content.decode()
    # A page out of range or not a number: the last or the first page, not an error.
    assert _titles(browser.get("/reports/?page=99")) == _titles(second)
    assert _titles(browser.get("/reports/?page=x")) == _titles(first)


def test_pagination_keeps_the_filter(browser, user, corpus):
    for n in range(REPORTS_PER_PAGE + 1):
        _report(user, corpus, f"Failed {n:02}", ReportStatus.FAILED, minutes_ago=n)
    _report(user, corpus, "Completed one", ReportStatus.COMPLETED, minutes_ago=100)
    first = browser.get("/reports/?status=failed")
    assert '<a href="?status=failed&amp;page=2" rel="next">' in first.content.decode()
    assert _titles(browser.get("/reports/?status=failed&page=2")) == [f"Failed {REPORTS_PER_PAGE:02}"]


def test_the_list_shows_nobody_elses_reports(browser, user, other_user, corpus):
    _report(user, corpus, "Alice's question", ReportStatus.COMPLETED)
    bobs = corpus_create(creator=other_user, name="Bob's corpus")
    _report(other_user, bobs, "Bob's secret question", ReportStatus.COMPLETED)
    _report(other_user, bobs, "Bob's running question", ReportStatus.RUNNING)
    for status_filter in ("all", "running", "completed"):
        page = browser.get("/reports/", {"status": status_filter}).content.decode()
        assert "Bob" not in page
    assert _titles(browser.get("/reports/")) == ["Alice's question"]


def test_a_superuser_sees_only_their_own_reports(user, corpus):
    _report(user, corpus, "Alice's question", ReportStatus.COMPLETED)
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    _report(admin, corpus_create(creator=admin, name="Admin corpus"), "Root's question", ReportStatus.FAILED)
    client = Client()
    client.force_login(admin)
    response = client.get("/reports/")
    assert _titles(response) == ["Root's question"]
    assert "Alice" not in response.content.decode()


def test_titles_and_corpus_names_are_escaped(browser, user):
    corpus = corpus_create(creator=user, name="<i>Corpus</i>")
    _report(user, corpus, "<script>alert(1)</script>", ReportStatus.COMPLETED)
    page = browser.get("/reports/").content.decode()
    assert "<script>alert(1)" not in page and "<i>Corpus" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;i&gt;Corpus&lt;/i&gt;" in page


def test_the_list_costs_the_same_queries_for_1_and_25_reports(
    browser, user, corpus, django_assert_num_queries
):
    _report(user, corpus, "First", ReportStatus.COMPLETED)
    # session, user, bell's unread count, page count, rows
    with django_assert_num_queries(5):
        browser.get("/reports/")
    for n in range(REPORTS_PER_PAGE - 1):
        _report(user, corpus, f"More {n}", ReportStatus.COMPLETED, findings=2)
    with django_assert_num_queries(5):
        assert len(_titles(browser.get("/reports/"))) == REPORTS_PER_PAGE


def test_home_and_the_nav_link_to_all_reports(browser):
    page = browser.get("/").content.decode()
    assert '<p><a href="/reports/">All reports</a></p>' in page  # under Recent reports
    assert '<a href="/reports/">All reports</a> ·' in page  # the nav
    assert '<a href="/reports/">All reports</a> ·' in browser.get("/accounts/tokens/").content.decode()
