"""A chat turn whose model or provider fails still answers: the user's message gets a reply
saying the model failed (with a code), never an internal error and never a message left
unanswered; a reply the model made too long or with NUL characters is stored cleaned."""

import time

import pytest
from pydantic_ai import models as pydantic_ai_models

from conversations.models import ChatMessage, MessageRole
from conversations.services import MESSAGE_MAX_CHARS
from research.models import ResearchReport
from tests.api.conftest import gid
from tests.chat_server import ChatServer, tool_results

SEND = """mutation($c: ID!, $text: String!) {
    sendChatMessage(corpusId: $c, content: $text) {
        errors { field message code }
        message { role content }
        reply { role content data }
        report { id }
    }
}"""


@pytest.fixture
def chat_endpoint(settings, monkeypatch):
    # The model is a local HTTP server started by the test, not a provider on the internet.
    monkeypatch.setattr(pydantic_ai_models, "ALLOW_MODEL_REQUESTS", True)

    def serve(script):
        server = ChatServer(script)
        settings.CHAT_MODEL = f"openai-compatible:chat@{server.url}"
        return server

    return serve


def send(gql, corpus, text: str) -> dict:
    return gql.data(SEND, {"c": gid("Corpus", corpus.pk), "text": text})["sendChatMessage"]


def test_a_provider_error_gets_a_reply_saying_the_model_failed(gql, corpus, samples, chat_endpoint):
    # given a provider that refuses every request
    with chat_endpoint(lambda body: {"status": 400}):
        # when the user asks a question
        payload = send(gql, corpus, "What limits liability?")
    # then the message is answered with the failure and its code, not an internal error
    assert payload["errors"] == []
    assert payload["message"] == {"role": "HUMAN", "content": "What limits liability?"}
    assert payload["reply"]["role"] == "ASSISTANT"
    assert payload["reply"]["content"] == (
        "The chat model failed to answer (chat_model_failed: ModelRequestRejectedError); please try again."
    )
    assert ChatMessage.objects.filter(role=MessageRole.ASSISTANT).count() == 1


def test_a_model_that_never_stops_searching_gets_a_reply_saying_the_limit(
    gql, corpus, samples, chat_endpoint
):
    # given a model that searches on and on
    with chat_endpoint(lambda body: {"tool_calls": [("search_passages", {"query": "liability"})]}):
        payload = send(gql, corpus, "What limits liability?")
    # then the turn ends at its request limit with a reply saying so
    assert payload["errors"] == []
    assert payload["reply"]["content"] == (
        "The chat model failed to answer (chat_limit_reached: UsageLimitExceeded); please try again."
    )


def test_a_failure_after_starting_research_says_the_run_was_started(gql, corpus, samples, chat_endpoint):
    # given a model that starts a research run, then its provider fails
    def script(body):
        if not tool_results(body):
            return {"tool_calls": [("start_deep_research", {"prompt": "research indemnification"})]}
        return {"status": 400}

    with chat_endpoint(script):
        payload = send(gql, corpus, "please research indemnification")
    # then the reply says the run was started, and links it
    report = ResearchReport.objects.get()
    assert payload["errors"] == []
    assert payload["report"] == {"id": gid("ResearchReport", report.pk)}
    assert payload["reply"]["data"] == {"report_id": report.pk, "slug": report.slug}
    assert payload["reply"]["content"] == (
        f"Started deep research \u201c{report.title}\u201d (standard). It runs in the background; "
        "I'll post the report here when it is ready. "
        "The chat model failed after starting it (chat_model_failed: ModelRequestRejectedError)."
    )


def test_an_over_long_reply_holding_nul_is_stored_cut_and_cleaned(gql, corpus, samples, chat_endpoint):
    # given a model whose reply holds a NUL and is longer than a message may be
    with chat_endpoint(lambda body: {"content": "A\x00B " + "x" * 30_000}):
        payload = send(gql, corpus, "What limits liability?")
    # then the user's message is answered with the reply, cleaned and cut
    assert payload["errors"] == []
    content = payload["reply"]["content"]
    assert content.startswith("AB xxx")
    assert len(content) == MESSAGE_MAX_CHARS
    assert content.endswith("[\u2026 reply cut at 20,000 characters]")


def test_a_model_slower_than_the_turn_deadline_gets_a_reply_saying_so_in_time(
    gql, corpus, samples, chat_endpoint, settings
):
    # given a chat model that takes longer to answer than a turn may (the turn holds a web worker)
    settings.CHAT_TURN_TIMEOUT_SECONDS = 0.5
    with chat_endpoint(lambda body: {"hang": 30, "content": "Too late."}):
        started = time.monotonic()
        payload = send(gql, corpus, "What limits liability?")
        elapsed = time.monotonic() - started
    # then the message is answered at the deadline, saying the model timed out
    assert elapsed < 10
    assert payload["errors"] == []
    assert payload["reply"]["content"] == (
        "The chat model failed to answer (chat_model_timeout: TimeoutError); please try again."
    )


def test_a_turn_stops_at_its_token_limit(gql, corpus, samples, chat_endpoint, settings):
    # given a turn allowed fewer tokens than two requests spend (each reports 120)
    settings.CHAT_TOKEN_LIMIT = 200
    with chat_endpoint(lambda body: {"tool_calls": [("search_passages", {"query": "liability"})]}) as server:
        payload = send(gql, corpus, "What limits liability?")
    # then it ends past the limit with a reply saying so, not at the request limit
    assert payload["reply"]["content"] == (
        "The chat model failed to answer (chat_limit_reached: UsageLimitExceeded); please try again."
    )
    assert len(server.requests) == 2


def test_every_chat_request_caps_the_tokens_of_its_reply(gql, corpus, samples, chat_endpoint, settings):
    settings.LLM_MAX_OUTPUT_TOKENS = 321
    with chat_endpoint(lambda body: {"content": "Nothing on that."}) as server:
        send(gql, corpus, "What limits liability?")
    assert server.requests[0]["body"]["max_completion_tokens"] == 321
