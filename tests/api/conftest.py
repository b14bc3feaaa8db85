import json

import pytest
from django.test import Client

from accounts.services import api_token_create


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
