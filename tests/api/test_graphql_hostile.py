"""The classes of hostile input an independent probe found answering 500 or internal_error, each
answered with a typed error: nesting a thousand deep, bodies past the upload limit, a session's
multipart POST, lone surrogates in text; and every error in one shape with a code."""

import json

import pytest
from django.test import Client

from research.models import ResearchReport
from tests.api.conftest import gid

START = "mutation($c: ID!, $p: String!) { startResearchReport(corpusId: $c, prompt: $p) { errors { code } } }"
CHAT = "mutation($c: ID!, $t: String!) { sendChatMessage(corpusId: $c, content: $t) { errors { code } } }"
TOKEN = "mutation($n: String!) { createApiToken(name: $n) { errors { code } } }"
SLUG = "query($s: String!) { researchReportBySlug(slug: $s) { id } }"


def post(
    client: Client, body: bytes | str, *, content_type: str = "application/json", token: str | None = None
):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.generic("POST", "/graphql", data=body, content_type=content_type, **headers)


def codes(response) -> list[str]:
    return [error["extensions"]["code"] for error in response.json()["errors"]]


@pytest.mark.parametrize("depth", [1_000, 5_000])
def test_json_nested_a_thousand_deep_is_an_invalid_body(gql, depth):
    response = post(gql.client, "[" * depth + "]" * depth, token=gql.token)
    assert (response.status_code, codes(response)) == (400, ["invalid_body"])


def test_variables_nested_deeply_are_invalid_input(gql, corpus):
    nested: list = []
    value = nested
    for _ in range(900):
        value.append([])
        value = value[0]
    body = json.dumps({"query": START, "variables": {"c": gid("Corpus", corpus.pk), "p": nested}})
    response = post(gql.client, body, token=gql.token)
    assert (response.status_code, codes(response)) == (400, ["invalid_input"])
    assert ResearchReport.objects.count() == 0


def test_a_body_past_the_upload_limit_is_request_too_large_before_it_is_read(gql, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    body = json.dumps({"query": "{ corpora { edges { node { id } } } }", "pad": "x" * 5_000})
    response = post(gql.client, body, token=gql.token)
    assert (response.status_code, codes(response)) == (413, ["request_too_large"])


def test_a_signed_in_sessions_multipart_post_is_answered_not_a_500(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/accounts/login/")  # a page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    query = "{ corpora { edges { node { id } } } }"
    response = client.post("/graphql", {"query": query, "csrfmiddlewaretoken": token})
    assert response.status_code == 200, response.content
    assert response.json() == {"data": {"corpora": {"edges": []}}}


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (START, {"p": "liability \udfff clause"}),
        (CHAT, {"t": "hello \ud800"}),
        (TOKEN, {"n": "laptop \udfff"}),
        (SLUG, {"s": "a-\udfff"}),
    ],
    ids=["prompt", "chat", "token-name", "slug"],
)
def test_a_lone_surrogate_in_text_is_invalid_input(gql, corpus, query, variables):
    body = json.dumps({"query": query, "variables": {"c": gid("Corpus", corpus.pk), **variables}})
    response = post(gql.client, body, token=gql.token)
    assert (response.status_code, codes(response)) == (400, ["invalid_input"])
    assert "lone surrogates" in response.json()["errors"][0]["message"]


def test_a_lone_surrogate_in_a_query_literal_is_an_invalid_query(gql):
    # the GraphQL lexer itself refuses the escape
    query = '{ researchReportBySlug(slug: "a-\\udfff") { id } }'
    response = post(gql.client, json.dumps({"query": query}), token=gql.token)
    assert (response.status_code, codes(response)) == (400, ["invalid_query"])


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        ('{"query": "{ corpora { edges { node { idd } } } }"}', "application/json", 400),
        ('{"query": "{ corpora "}', "application/json", 400),
        ("not json", "application/json", 400),
        ('["a list"]', "application/json", 400),
    ],
    ids=["unknown-field", "syntax", "not-json", "not-an-object"],
)
def test_every_error_has_a_code(gql, body, content_type, status):
    response = post(gql.client, body, content_type=content_type, token=gql.token)
    assert response.status_code == status
    errors = response.json()["errors"]
    assert errors and all(error["extensions"]["code"] for error in errors)
