"""The notification bell and the reports list in a real browser (headless Chromium, Playwright,
a live server): the bell counts a notification that arrives while the page is open with no
reload (its poll every 15 s, on a Playwright clock), polls nothing while the tab is hidden,
and drops as notifications are marked read on the notifications page; another user's Mark read
is a 404; the reports list's status filter narrows the list.

Chromium is Debian's (`apt-get install chromium`, as .ci/run does), never a browser download."""

from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from corpora.services import corpus_create
from notifications.models import Notification
from notifications.services import notification_create_for_report
from research.models import ReportStatus
from tests.browser.axe import serious_violations
from tests.browser.helpers import BROWSER_TEST, PASSWORD, in_a_thread, screenshot, sign_in
from tests.factories import queued_report

pytestmark = BROWSER_TEST

BELL = "#notification-bell .bell-count"
# The tab hidden or shown again, as the browser reports it when the user switches tabs.
SET_VISIBILITY = """state => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


@pytest.fixture
def world(alice):
    """Alice's corpus with a completed report (its notification unread), a failed one (no
    notification yet) and a running one; Bob. Made before Playwright starts."""
    bob = get_user_model().objects.create_user(username="bob", password=PASSWORD)
    corpus = corpus_create(creator=alice, name="Supplier contracts")
    completed = queued_report(alice, corpus, title="Supplier liability", status=ReportStatus.COMPLETED)
    failed = queued_report(alice, corpus, title="Licence termination", status=ReportStatus.FAILED)
    queued_report(alice, corpus, title="Insurance limits", status=ReportStatus.RUNNING)
    notification_create_for_report(report=completed)
    return SimpleNamespace(bob=bob, failed=failed)


def _unread_of(username: str) -> int:
    return in_a_thread(
        lambda: Notification.objects.filter(recipient__username=username, read_at__isnull=True).count()
    )


def test_the_bell_counts_new_notifications_and_drops_as_they_are_read(live_server, world, browser_page):
    page = browser_page
    page.clock.install()
    sign_in(page, live_server.url)
    assert page.inner_text(BELL) == "1"

    # A report ends while the page is open: within a poll the bell counts it, no reload.
    in_a_thread(lambda: notification_create_for_report(report=world.failed))
    page.clock.run_for(16_000)
    page.wait_for_selector(f'{BELL}[data-count="2"]')
    assert page.inner_text(BELL) == "2"
    assert page.get_attribute("#notification-bell", "aria-label") == "Notifications: 2 unread"

    # A hidden tab polls nothing; shown again, it polls at once
    polls: list[str] = []
    page.on("request", lambda request: "unread.json" in request.url and polls.append(request.url))
    page.evaluate(SET_VISIBILITY, "hidden")
    page.clock.run_for(120_000)
    assert polls == []
    # (its answer awaited: the live server's threads share one SQLite connection, so the next
    # page must not be asked for while this poll is being answered)
    with page.expect_response("**/notifications/unread.json") as poll:
        page.evaluate(SET_VISIBILITY, "visible")
    assert poll.value.json() == {"unread": 2}

    # The list: both unread, each with its report's link; Mark read on one.
    page.click("#notification-bell")
    page.wait_for_url(f"{live_server.url}/notifications/")
    assert page.locator("ul.notification-list li.unread").count() == 2
    assert page.is_visible("ul.notification-list a:has-text('Licence termination')")
    assert serious_violations(page) == []
    screenshot(page, "notifications")
    page.locator("li.unread:has-text('Licence termination') button:has-text('Mark read')").click()
    page.wait_for_selector("li.read:has-text('Licence termination')")
    assert page.inner_text(BELL) == "1"
    assert page.locator("li:has-text('Licence termination') button").count() == 0
    assert _unread_of("alice") == 1

    # Mark all read: the bell's count is gone.
    page.click("text=Mark all read")
    page.wait_for_selector("text=1 notification marked read.")
    assert page.get_attribute(BELL, "data-count") == "0"
    assert page.is_hidden(BELL)
    assert page.locator("ul.notification-list li.unread").count() == 0
    assert _unread_of("alice") == 0

    # The report link opens the report.
    page.click("ul.notification-list a:has-text('Supplier liability')")
    page.wait_for_url(f"{live_server.url}/reports/**")
    assert page.is_visible("text=Research report on")


def test_another_user_cannot_mark_alices_notification_read(live_server, world, browser_page):
    page = browser_page
    alices = in_a_thread(lambda: Notification.objects.get(recipient__username="alice").pk)
    sign_in(page, live_server.url, username="bob")
    assert page.inner_text(BELL) == "0"
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{live_server.url}/notifications/{alices}/read/",
        headers={"X-CSRFToken": csrf, "Referer": live_server.url + "/"},
    )
    assert response.status == 404
    assert _unread_of("alice") == 1
    page.goto(f"{live_server.url}/notifications/")
    assert page.is_visible("text=No notifications yet")


def test_the_reports_list_filters_by_status(live_server, world, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.click("nav.site >> text=All reports")
    page.wait_for_url(f"{live_server.url}/reports/")
    rows = page.locator("table.reports tbody tr")
    assert rows.count() == 3
    assert serious_violations(page) == []

    page.click("nav.filters >> text=Failed")
    page.wait_for_url(f"{live_server.url}/reports/?status=failed")
    assert rows.count() == 1 and "Licence termination" in rows.first.inner_text()
    assert page.get_attribute("nav.filters a[aria-current=page]", "href") == "?status=failed"

    page.click("nav.filters >> text=Running")
    page.wait_for_url(f"{live_server.url}/reports/?status=running")
    assert rows.count() == 1 and "Insurance limits" in rows.first.inner_text()

    page.click("nav.filters >> text=Cancelled")
    assert page.is_visible("text=No cancelled reports.")

    page.click("nav.filters >> text=All")
    page.wait_for_url(f"{live_server.url}/reports/?status=all")
    assert rows.count() == 3
    screenshot(page, "reports-list")
