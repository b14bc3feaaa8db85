"""The notifications page `/notifications/`, Mark read / Mark all read, the nav's bell and the
JSON view it polls: one's own notifications only (another user's is a 404 and stays unread),
CSRF on every form, the bell one COUNT query, signed-in only."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpora.services import corpus_create
from notifications.models import Notification
from notifications.services import notification_create_for_report
from notifications.views import NOTIFICATIONS_PER_PAGE
from research.models import ReportStatus
from tests.factories import queued_report


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def _notify(user, corpus, title: str = "Supplier liability", *, status=ReportStatus.COMPLETED, minutes_ago=0):
    """A report of the user's that ended, and the notification its ending writes."""
    report = queued_report(user, corpus, title=title, status=status)
    notification = notification_create_for_report(report=report)
    Notification.objects.filter(pk=notification.pk).update(
        created=timezone.now() - timedelta(minutes=minutes_ago)
    )
    return notification


def _unread(user) -> set[int]:
    return set(Notification.objects.filter(recipient=user, read_at__isnull=True).values_list("pk", flat=True))


def _bell(count: int) -> str:
    return f'<span class="bell-count" data-count="{count}">{count}</span>'


@pytest.fixture
def bobs_notification(other_user):
    return _notify(other_user, corpus_create(creator=other_user, name="Bob's corpus"), "Bob's report")


@pytest.mark.parametrize("path", ["/notifications/", "/notifications/unread.json"])
def test_the_pages_need_a_sign_in(db, path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"] == f"/accounts/login/?next={path}"


@pytest.mark.parametrize("path", ["/notifications/read-all/", "/notifications/1/read/"])
def test_marking_read_needs_a_sign_in(user, corpus, path):
    _notify(user, corpus)
    response = Client().post(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert len(_unread(user)) == 1


def test_the_list_shows_ones_notifications_newest_first_unread_marked(
    browser, user, corpus, bobs_notification
):
    older = _notify(user, corpus, "Older report", status=ReportStatus.FAILED, minutes_ago=30)
    newer = _notify(user, corpus, "Newer <b>report</b>", minutes_ago=1)
    Notification.objects.filter(pk=older.pk).update(read_at=timezone.now())

    response = browser.get("/notifications/")

    assert response.status_code == 200
    assert [n.pk for n in response.context["page"].object_list] == [newer.pk, older.pk]
    page = response.content.decode()
    assert f'<li id="notification-{newer.pk}" class="unread">' in page
    assert f'<li id="notification-{older.pk}" class="read">' in page
    assert (
        f'<strong class="new">New</strong> Research report completed:\n'
        f'    <a href="/reports/{newer.report.slug}/">Newer &lt;b&gt;report&lt;/b&gt;</a>\n'
        '    <span class="corpus">on Contracts</span>'
    ) in page
    assert f'Research report failed:\n    <a href="/reports/{older.report.slug}/">Older report</a>' in page
    # A Mark read button for the unread one only.
    assert f'action="/notifications/{newer.pk}/read/"' in page
    assert f'action="/notifications/{older.pk}/read/"' not in page
    assert 'action="/notifications/read-all/"' in page
    assert "Bob" not in page


def test_the_list_is_paginated(browser, user, corpus):
    made = [_notify(user, corpus, f"Report {n:02}", minutes_ago=n) for n in range(NOTIFICATIONS_PER_PAGE + 2)]
    first = browser.get("/notifications/")
    assert [n.pk for n in first.context["page"].object_list] == [n.pk for n in made[:NOTIFICATIONS_PER_PAGE]]
    assert '<a href="?page=2" rel="next">' in first.content.decode()
    second = browser.get("/notifications/?page=2")
    assert [n.pk for n in second.context["page"].object_list] == [n.pk for n in made[NOTIFICATIONS_PER_PAGE:]]


def test_an_empty_list_says_so(browser):
    page = browser.get("/notifications/").content.decode()
    assert "No notifications yet" in page and "Mark all read" not in page


def test_mark_read_marks_that_one_only(browser, user, corpus):
    first = _notify(user, corpus, "First")
    second = _notify(user, corpus, "Second")
    response = browser.post(f"/notifications/{first.pk}/read/", {"page": "2"})
    assert response.status_code == 302 and response["Location"] == "/notifications/?page=2"
    assert _unread(user) == {second.pk}
    first.refresh_from_db()
    assert first.read_at is not None
    # Marking it again changes nothing and is no error.
    read_at = first.read_at
    assert browser.post(f"/notifications/{first.pk}/read/")["Location"] == "/notifications/"
    first.refresh_from_db()
    assert first.read_at == read_at


@pytest.mark.parametrize("page", ["", "1", "x", "-1", "²"])
def test_mark_read_returns_to_the_first_page_unless_told_a_page_number(browser, user, corpus, page):
    notification = _notify(user, corpus)
    response = browser.post(f"/notifications/{notification.pk}/read/", {"page": page})
    assert response["Location"] == "/notifications/"


def test_marking_another_users_notification_read_is_a_404_and_changes_nothing(
    browser, user, corpus, other_user, bobs_notification
):
    mine = _notify(user, corpus)
    response = browser.post(f"/notifications/{bobs_notification.pk}/read/")
    assert response.status_code == 404
    assert _unread(other_user) == {bobs_notification.pk}
    assert _unread(user) == {mine.pk}
    assert browser.post("/notifications/999999/read/").status_code == 404


def test_mark_all_read_marks_only_ones_own(browser, user, corpus, other_user, bobs_notification):
    _notify(user, corpus, "First")
    _notify(user, corpus, "Second")
    response = browser.post("/notifications/read-all/", follow=True)
    assert response.redirect_chain == [("/notifications/", 302)]
    assert "2 notifications marked read." in response.content.decode()
    assert _unread(user) == set()
    assert _unread(other_user) == {bobs_notification.pk}
    assert _bell(0) in response.content.decode()


@pytest.mark.parametrize("path", ["/notifications/read-all/", "/notifications/{pk}/read/"])
def test_marking_read_needs_a_post_with_a_csrf_token(user, corpus, path):
    notification = _notify(user, corpus)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = path.format(pk=notification.pk)
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403
    assert _unread(user) == {notification.pk}


def test_the_unread_json_counts_ones_own_unread(browser, user, corpus, bobs_notification):
    first = _notify(user, corpus, "First")
    _notify(user, corpus, "Second")
    response = browser.get("/notifications/unread.json")
    assert response.status_code == 200
    assert response.json() == {"unread": 2}
    assert "no-cache" in response["Cache-Control"]
    browser.post(f"/notifications/{first.pk}/read/")
    assert browser.get("/notifications/unread.json").json() == {"unread": 1}
    assert browser.post("/notifications/unread.json").status_code == 405


def test_the_nav_bell_shows_the_unread_count_on_every_signed_in_page(
    browser, user, corpus, bobs_notification
):
    _notify(user, corpus, "First")
    _notify(user, corpus, "Second")
    for path in ("/", "/reports/", "/notifications/", "/accounts/tokens/", f"/corpora/{corpus.pk}/"):
        page = browser.get(path).content.decode()
        assert (
            '<a href="/notifications/" id="notification-bell" class="bell" '
            'data-url="/notifications/unread.json" aria-label="Notifications: 2 unread">'
        ) in page, path
        assert _bell(2) in page, path
        assert '<script src="/static/notifications/bell.js" defer></script>' in page, path
    assert "notification-bell" not in Client().get("/accounts/login/").content.decode()


def test_the_bell_is_one_count_query_however_many_notifications(
    browser, user, corpus, django_assert_max_num_queries
):
    _notify(user, corpus)
    # session, user, the tokens page's list, the bell's count
    with django_assert_max_num_queries(4):
        browser.get("/accounts/tokens/")
    for n in range(30):
        _notify(user, corpus, f"Report {n}")
    with django_assert_max_num_queries(4), CaptureQueriesContext(connection) as queries:
        page = browser.get("/accounts/tokens/").content.decode()
    assert _bell(31) in page
    touching = [q["sql"] for q in queries.captured_queries if "notifications_notification" in q["sql"]]
    assert len(touching) == 1 and touching[0].startswith("SELECT COUNT(*)")


def test_the_list_costs_the_same_queries_for_1_and_25_notifications(
    browser, user, corpus, django_assert_num_queries
):
    _notify(user, corpus)
    # session, user, the bell's count, the page's count, the rows with their reports' titles
    with django_assert_num_queries(5):
        browser.get("/notifications/")
    for n in range(NOTIFICATIONS_PER_PAGE - 1):
        _notify(user, corpus, f"Report {n}")
    with django_assert_num_queries(5):
        assert len(browser.get("/notifications/").context["page"].object_list) == NOTIFICATIONS_PER_PAGE
