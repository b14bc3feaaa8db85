"""ChatCompletionsClient posts PydanticAI's chat-completions body without the SDK's transform:
it must put on the wire exactly what the stock AsyncOpenAI client does."""

import asyncio
import json
import re

import pytest
from openai import AsyncOpenAI
from openai._types import omit
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai import models as pydantic_ai_models
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from llms.openai_client import ChatCompletionsClient, request_body
from tests.chat_server import ChatServer, tool_results


class Clause(BaseModel):
    title: str
    page: int | None = None


def _script(body):
    if not tool_results(body):
        return {
            "tool_calls": [
                ("lookup", {"clause": {"title": "Liability", "page": 3}, "terms": ["cap", "ünïcode"]})
            ]
        }
    return {"tool_calls": [("final_result", {"answer": "capped", "sources": [1, 2]})]}


class Answer(BaseModel):
    answer: str
    sources: list[int]


def _bodies(client_class: type[AsyncOpenAI]) -> list[dict]:
    agent = Agent(
        instructions="Answer from the contract.",
        output_type=Answer,
        model_settings={"temperature": 0.2, "max_tokens": 300, "seed": 7},
    )

    @agent.tool_plain
    def lookup(clause: Clause, terms: list[str]) -> dict:
        """Find a clause."""
        return {"found": clause.title, "terms": terms, "text": "Liability is capped at the fees paid."}

    async def run(url: str) -> None:
        client = client_class(base_url=url, api_key="sk-test", max_retries=0)
        model = OpenAIChatModel("local-model", provider=OpenAIProvider(openai_client=client))
        try:
            result = await agent.run('What caps "liability"?\r\nTab\there.', model=model)
        finally:
            await client.close()
        assert result.output == Answer(answer="capped", sources=[1, 2])

    with ChatServer(_script) as server:
        asyncio.run(run(server.url))
    # The stand-in server names each tool call at random; the rest must be equal (key order
    # aside, which JSON does not give a meaning).
    return [
        (r["path"], r["auth"], json.loads(re.sub(r"call_[0-9a-f]+", "call_N", json.dumps(r["body"]))))
        for r in server.requests
    ]


@pytest.fixture
def allow_local_model(monkeypatch):
    monkeypatch.setattr(pydantic_ai_models, "ALLOW_MODEL_REQUESTS", True)


def test_the_wire_body_is_the_stock_clients(allow_local_model):
    stock = _bodies(AsyncOpenAI)
    lean = _bodies(ChatCompletionsClient)
    assert len(stock) == 2
    assert lean == stock
    assert stock[1][2]["messages"][-1]["role"] == "tool"


def test_request_body_equals_the_sdk_transform_and_drops_omitted_values_at_every_level():
    params = {
        "model": "m",
        "stream": False,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": omit}}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": omit,
        "stream_options": omit,
        "max_completion_tokens": 100,
        "temperature": omit,
    }
    sdk = asyncio.run(
        async_maybe_transform(params, completion_create_params.CompletionCreateParamsNonStreaming)
    )
    assert request_body(params) == sdk
    assert "strict" not in request_body(params)["tools"][0]["function"]
    assert "temperature" not in request_body(params)
