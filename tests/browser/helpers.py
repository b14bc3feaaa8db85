"""What every browser test shares: where Chromium is, the test user's password, signing in."""

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PASSWORD = "a-long-browser-password"


def sign_in(page, base_url: str, username: str = "alice") -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")
