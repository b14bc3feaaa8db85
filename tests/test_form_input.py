"""A NUL in a page's form field or query string: refused by every page with the 400 page and
`invalid_input` before a view runs (PostgreSQL cannot store one: it was a 500 there), and
nothing is written. SQLite stores NULs, so these assert the refusal itself."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from conversations.models import Conversation
from corpora.selectors import corpus_shared_with
from corpora.services import corpus_share
from notifications.models import Webhook

FORM = "application/x-www-form-urlencoded"
REFUSAL = "Text must not contain NUL characters. (invalid_input)"


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/corpora/{corpus}/share/", {"username": "bob\x00"}),
        ("/corpora/{corpus}/share/", {"action": "unshare", "username": "bob\x00"}),
        ("/corpora/{corpus}/chat/", {"content": "What is the liability cap?\x00"}),
        (
            "/notifications/webhook/",
            {"url": "https://hooks.example.com/\x00", "format": "json", "enabled": "on"},
        ),
        ("/notifications/webhook/", {"url\x00": "https://hooks.example.com/", "format": "json"}),
    ],
)
def test_a_nul_in_a_form_field_is_refused_and_nothing_is_written(browser, corpus, other_user, path, data):
    # given a corpus shared with bob
    corpus_share(user=corpus.creator, corpus=corpus, username=other_user.username)
    # when
    # when, as a browser posts a form (urlencoded) and as a script may (multipart)
    encoded = browser.post(path.format(corpus=corpus.pk), urlencode(data), content_type=FORM)
    response = browser.post(path.format(corpus=corpus.pk), data)
    # then
    assert (encoded.status_code, response.status_code) == (400, 400)
    assert REFUSAL in encoded.content.decode()
    assert REFUSAL in response.content.decode()
    assert corpus_shared_with(corpus=corpus) == ["bob"]
    assert not Conversation.objects.exists()
    assert not Webhook.objects.exists()


def test_a_nul_in_the_sign_in_form_or_a_query_string_is_refused(browser, corpus):
    # when
    credentials = urlencode({"username": "alice\x00", "password": "pw-alice-123"})
    signing_in = Client().post("/accounts/login/", credentials, content_type=FORM)
    searching = browser.get(f"/corpora/{corpus.pk}/", {"q": "cap\x00"})
    # then
    assert (signing_in.status_code, searching.status_code) == (400, 400)
    assert REFUSAL in signing_in.content.decode()
    assert REFUSAL in searching.content.decode()


def test_the_graphql_view_keeps_its_own_json_refusal(user):
    # when a form-encoded GraphQL request carries a NUL
    query = urlencode({"query": "{ me { username } }\x00"})
    response = Client().post("/graphql", query, content_type=FORM)
    # then it is not answered with the page's 400
    assert REFUSAL not in response.content.decode()
