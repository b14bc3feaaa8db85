"""The account page's API tokens, as a signed-in user uses them in a browser: created with the
secret shown once (and working against the API), read-only and expiring ones, revoked; only
one's own; bad input answered on the form; CSRF enforced."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import TOKENS_PER_USER_MAX, api_token_create

PAGE = "/accounts/tokens/"
QUERY = {"query": "{ corpora { edges { node { id } } } }"}
MUTATION = {"query": 'mutation { createApiToken(name: "x") { errors { code } } }'}


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


def graphql(secret: str, body: dict):
    return Client().post(
        "/graphql", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )


def secret_on(page: bytes) -> str:
    found = re.search(rb'<code id="secret">(dc_[\w-]+)</code>', page)
    assert found, page.decode()[:2000]
    return found.group(1).decode()


def test_the_account_page_is_in_the_nav_after_sign_in(user):
    client = Client()
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-alice-123"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert f'href="{PAGE}"'.encode() in response.content
    assert b"<h1>API tokens</h1>" in client.get(PAGE).content


def test_the_page_needs_a_sign_in(db):
    response = Client().get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_token_created_on_the_page_is_shown_once_and_works_against_the_api(browser, user):
    response = browser.post(PAGE, {"name": "laptop CLI"})
    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    secret = secret_on(response.content)
    token = ApiToken.objects.get(user=user)
    assert (token.name, token.read_only, token.expires_at) == ("laptop CLI", False, None)
    assert secret.encode() not in browser.get(PAGE).content  # listed by its prefix only
    answer = graphql(secret, QUERY)
    assert answer.status_code == 200 and "errors" not in answer.json()


def test_a_read_only_expiring_token_queries_but_cannot_mutate(browser, user):
    secret = secret_on(
        browser.post(PAGE, {"name": "dashboard", "expires_in_days": "30", "read_only": "on"}).content
    )
    token = ApiToken.objects.get(user=user)
    assert token.read_only
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert graphql(secret, QUERY).status_code == 200
    refused = graphql(secret, MUTATION)
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["extensions"]["code"] == "token_read_only"


def test_revoking_on_the_page_stops_the_token(browser, user):
    issued = api_token_create(user=user, name="old")
    response = browser.post(reverse("account-token-revoke", args=[issued.token.pk]), follow=True)
    assert response.status_code == 200 and "Revoked “old”" in response.content.decode()
    assert graphql(issued.secret, QUERY).status_code == 401


def test_another_users_token_cannot_be_revoked_or_seen(browser, other_user):
    theirs = api_token_create(user=other_user, name="bob's secret project")
    response = browser.post(reverse("account-token-revoke", args=[theirs.token.pk]))
    assert response.status_code == 404
    theirs.token.refresh_from_db()
    assert theirs.token.revoked_at is None
    assert b"bob&#x27;s secret project" not in browser.get(PAGE).content
    assert b"bob's secret project" not in browser.get(PAGE).content


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"name": ""}, "This field is required."),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"name": "ok", "expires_in_days": "0"}, "greater than or equal to 1"),
        ({"name": "ok", "expires_in_days": "99999"}, "less than or equal to 3650"),
        ({"name": "ok", "expires_in_days": "soon"}, "Enter a whole number."),
        ({"name": "\x00"}, "Text must not contain NUL characters. (invalid_input)"),
        ({"name": "   "}, "This field is required."),
    ],
)
def test_bad_input_is_answered_on_the_form_and_creates_nothing(browser, data, error):
    response = browser.post(PAGE, data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_token_limit_is_said_with_its_code(browser, user):
    for n in range(TOKENS_PER_USER_MAX):
        api_token_create(user=user, name=f"t{n}")
    response = browser.post(PAGE, {"name": "one more"})
    assert response.status_code == 400
    assert "token_limit_reached" in response.content.decode()
    assert ApiToken.objects.filter(user=user).count() == TOKENS_PER_USER_MAX


def test_a_token_name_is_escaped_on_the_page(browser, user):
    browser.post(PAGE, {"name": "<script>alert(1)</script>"})
    page = browser.get(PAGE).content
    assert b"<script>alert(1)</script>" not in page
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_forms_without_the_csrf_token_are_refused(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(PAGE, {"name": "forged"}).status_code == 403
    issued = api_token_create(user=user, name="kept")
    assert client.post(reverse("account-token-revoke", args=[issued.token.pk])).status_code == 403
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None and ApiToken.objects.count() == 1


def test_revoking_needs_a_post(browser, user):
    issued = api_token_create(user=user, name="kept")
    assert browser.get(reverse("account-token-revoke", args=[issued.token.pk])).status_code == 405
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


def test_signing_out_is_a_post_from_the_page(browser):
    assert b'action="/accounts/logout/"' in browser.get(PAGE).content
    response = browser.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert browser.get(PAGE).status_code == 302
