import json

import pytest
from django.test import Client
from graphql_relay import to_global_id

from accounts.services import api_token_create
from corpora.models import Document
from research.engine.run import report_run
from research.models import ResearchReport
from research.services import report_start
from tests.factories import ingest_samples


class GraphQL:
    """Posts to /graphql like a client would; returns (status, body)."""

    def __init__(self, client: Client, token: str | None = None) -> None:
        self.client = client
        self.token = token

    def __call__(self, query: str, variables: dict | None = None) -> tuple[int, dict]:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"} if self.token else {}
        response = self.client.post(
            "/graphql",
            data=json.dumps({"query": query, "variables": variables or {}}),
            content_type="application/json",
            **headers,
        )
        return response.status_code, response.json()

    def data(self, query: str, variables: dict | None = None) -> dict:
        status, body = self(query, variables)
        assert status == 200 and "errors" not in body, body
        return body["data"]


@pytest.fixture
def gql(user) -> GraphQL:
    return GraphQL(Client(), token=api_token_create(user=user, name="tests").secret)


@pytest.fixture
def other_gql(other_user) -> GraphQL:
    return GraphQL(Client(), token=api_token_create(user=other_user, name="tests").secret)


@pytest.fixture
def anonymous_gql(db) -> GraphQL:
    return GraphQL(Client())


def gid(type_name: str, pk: int) -> str:
    """A relay global id, as a client would hold one."""
    return to_global_id(type_name, pk)


@pytest.fixture
def samples(corpus) -> list[Document]:
    return [result.document for result in ingest_samples(corpus)]


@pytest.fixture
def completed_report(user, corpus, samples) -> ResearchReport:
    """A report run to completion by the offline engine."""
    report = report_start(
        user=user,
        corpus=corpus,
        prompt="What limits the liability of the supplier?\nWhen can the licence agreement be terminated?",
    )
    return report_run(report_id=report.pk)


def without_locations(response: tuple[int, dict]) -> tuple[int, dict]:
    """The response with error locations (columns in the query text) left out."""
    status, body = response
    errors = [{k: v for k, v in e.items() if k != "locations"} for e in body.get("errors", [])]
    return status, {**body, "errors": errors} if errors else body
