"""What every browser test shares: where Chromium is, the test user's password, signing in."""

import os
import shutil
import threading
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PASSWORD = "a-long-browser-password"
# Every browser test: a live server whose threads see the test's rows, and Debian's chromium.
BROWSER_TEST = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)"
    ),
]


def sign_in(page, base_url: str, username: str = "alice") -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


ARTIFACTS = Path(
    os.environ.get("BROWSER_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
)


def screenshot(page, name: str) -> Path:
    """A full-page screenshot kept as a test artifact (BROWSER_ARTIFACTS, default test-artifacts/browser/)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def in_a_thread(function):
    """Run ORM work from a test while Playwright's loop owns its thread; its result."""
    results: list = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            results.append(function())
        except BaseException as error:
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    if failures:
        raise failures[0]
    assert results, "the ORM work did not finish within 30 s"
    return results[0]
