"""The webhook page in a real browser (headless Chromium, Playwright, a live server, a local
receiver): reached from the notifications page, a URL saved shows the signing secret, a test
delivery arrives signed with it and its answer shows on the page, a private address is refused
with its code, and Bob's page shows none of Alice's webhook.

Chromium is Debian's (`apt-get install chromium`, as .ci/run does), never a browser download."""

import pytest
from django.contrib.auth import get_user_model

from notifications.models import Webhook
from tests.browser.axe import serious_violations
from tests.browser.helpers import BROWSER_TEST, PASSWORD, in_a_thread, screenshot, sign_in
from tests.notifications.webhook_receiver import Receiver, verify

pytestmark = BROWSER_TEST


@pytest.fixture
def bob(alice):
    return get_user_model().objects.create_user(username="bob", password=PASSWORD)


def test_a_webhook_is_saved_tested_and_refused_for_a_private_address(
    live_server, bob, browser_page, settings
):
    page = browser_page
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True  # the receiver listens on 127.0.0.1
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/notifications/")
    page.click("text=Webhook")
    page.wait_for_url(f"{live_server.url}/notifications/webhook/")
    assert not page.is_visible("text=Signing secret")

    with Receiver() as receiver:
        page.fill("input[name=url]", receiver.url)
        page.select_option("select[name=format]", "slack")
        page.click("button:has-text('Save')")
        page.wait_for_selector("text=Webhook saved")
        secret = page.inner_text("code.secret")
        assert secret == in_a_thread(lambda: Webhook.objects.get(user__username="alice").secret)
        assert serious_violations(page) == []

        page.click("button:has-text('Send a test delivery')")
        page.wait_for_selector("text=Test delivery answered HTTP 200.")
    assert verify(secret, receiver.requests[0]) == {
        "text": "Deepcite test delivery: your webhook works.",
        "content": "Deepcite test delivery: your webhook works.",
    }
    assert page.is_visible("text=Last attempt:") and page.is_visible("text=HTTP 200")
    screenshot(page, "webhook")

    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    page.fill("input[name=url]", "http://10.0.0.7/hook")
    page.click("button:has-text('Save')")
    page.wait_for_selector("p.notice.error:has-text('(webhook_url_private)')")
    saved = in_a_thread(lambda: Webhook.objects.get(user__username="alice"))
    assert (saved.url, saved.payload_format) == (receiver.url, "slack")

    # Bob, signed in instead, sees an empty form: nothing of Alice's.
    page.context.clear_cookies()
    sign_in(page, live_server.url, username="bob")
    page.goto(f"{live_server.url}/notifications/webhook/")
    assert secret not in page.content() and receiver.url not in page.content()
    assert page.input_value("input[name=url]") == ""
    assert not page.is_visible("text=Signing secret")
