"""Fixtures for the browser tests: a user to sign in as and a headless Debian Chromium page that
fails the test on any page error, console error or HTTP error response."""

import pytest
from django.contrib.auth import get_user_model

from tests.browser.helpers import CHROMIUM, PASSWORD


@pytest.fixture
def alice(transactional_db):
    # Before Playwright starts: its sync API runs an event loop in this thread, where Django's
    # ORM refuses to run.
    return get_user_model().objects.create_user(username="alice", password=PASSWORD)


@pytest.fixture
def browser_page(alice):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: message.type == "error" and errors.append(message.text))
        page.on(
            "response",
            lambda response: response.status >= 400 and errors.append(f"{response.status} {response.url}"),
        )
        page.set_default_timeout(15_000)
        yield page
        browser.close()
    assert not errors, errors
