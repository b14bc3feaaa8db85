"""A user changes their own password on the site (no administrator, no manage.py): the old one
asked for, the validators applied, the new one signing in, this browser kept signed in."""

import pytest
from django.test import Client
from django.urls import reverse

PAGE = "/accounts/password/"


def signs_in(password: str) -> bool:
    """Whether the sign-in page takes alice's `password`, from a browser of its own."""
    response = Client().post(reverse("login"), {"username": "alice", "password": password}, follow=True)
    return bool(response.redirect_chain) and response.redirect_chain[-1][0] == "/"


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def test_a_user_changes_their_password_and_signs_in_with_the_new_one(browser, user):
    # given the page, linked from every page's nav
    assert f'href="{PAGE}"' in browser.get(reverse("home")).content.decode()
    # when the old password and a new one twice are given
    response = browser.post(
        PAGE,
        {
            "old_password": "pw-alice-123",
            "new_password1": "a much longer pass 42",
            "new_password2": "a much longer pass 42",
        },
        follow=True,
    )
    # then it is changed, this browser stays signed in, and the new one signs in elsewhere
    assert "<h1>Password changed</h1>" in response.content.decode()
    assert browser.get(reverse("home")).status_code == 200
    assert signs_in("a much longer pass 42")
    assert not signs_in("pw-alice-123")


def test_a_wrong_old_password_or_a_weak_new_one_changes_nothing(browser, user):
    wrong = browser.post(
        PAGE,
        {
            "old_password": "nope",
            "new_password1": "a much longer pass 42",
            "new_password2": "a much longer pass 42",
        },
    )
    weak = browser.post(
        PAGE, {"old_password": "pw-alice-123", "new_password1": "12345678", "new_password2": "12345678"}
    )
    assert wrong.status_code == weak.status_code == 200
    assert "Your old password was entered incorrectly" in wrong.content.decode()
    assert "This password is too common" in weak.content.decode()
    assert signs_in("pw-alice-123")


def test_the_page_needs_a_sign_in(db):
    response = Client().get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
