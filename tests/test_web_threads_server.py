"""A chat turn is answered inside its web request, waiting on the chat model for up to
CHAT_TURN_TIMEOUT_SECONDS. The image's gunicorn runs threads in each worker process, so one
user's slow chat model does not hold up every other request: checked on a real gunicorn with
the production settings and a slow OpenAI-compatible chat endpoint."""

import json
import threading
import time
import urllib.request

import pytest

from tests.chat_server import ChatServer
from tests.production_server import get, production_server

SLOW_SECONDS = 4.0
SEND = """mutation($c: ID!) {
    sendChatMessage(corpusId: $c, content: "What limits liability?") { reply { content } }
}"""


def graphql(server, query: str, variables: dict) -> dict:
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(  # noqa: S310 -- the local test server
        f"{server.base}/graphql",
        data=body,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        return json.loads(response.read())


@pytest.fixture(scope="module")
def slow_chat():
    with ChatServer(lambda body: {"hang": SLOW_SECONDS, "content": "Nothing on that."}) as chat:
        yield chat


@pytest.fixture(scope="module")
def server(tmp_path_factory, slow_chat):
    workdir = tmp_path_factory.mktemp("threads")
    with production_server(workdir, CHAT_MODEL=f"openai-compatible:slow@{slow_chat.url}") as running:
        running.manage("createuser", "tess", "--password-env", "PW", env={"PW": "a long enough password 7"})
        running.token = running.manage("createapitoken", "tess").stdout.strip()
        yield running


def test_a_slow_chat_turn_does_not_hold_up_other_requests(server, slow_chat):
    # given a corpus, and a chat turn under way whose model takes seconds to answer
    created = graphql(server, 'mutation { createCorpus(name: "Notes") { corpus { id } } }', {})
    corpus = created["data"]["createCorpus"]["corpus"]["id"]
    answers = []
    turn = threading.Thread(target=lambda: answers.append(graphql(server, SEND, {"c": corpus})))
    turn.start()
    deadline = time.monotonic() + 10
    while not slow_chat.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slow_chat.requests, "the chat turn never reached its model"

    # when another request comes in meanwhile (one gunicorn worker process, as in the tests)
    started = time.monotonic()
    status, _body, _headers = get(server.base + "/healthz")
    waited = time.monotonic() - started

    # then it is answered at once, not after the chat model
    assert status == 200
    assert waited < SLOW_SECONDS / 2, f"/healthz waited {waited:.1f} s behind the chat turn"
    turn.join(timeout=30)
    assert answers[0]["data"]["sendChatMessage"]["reply"]["content"] == "Nothing on that."
