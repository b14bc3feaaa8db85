"""The OpenAI-compatible HTTP client the research and chat agents use.

The SDK's `chat.completions.create` runs every request body through a type-directed transform
(aliases, date and file formats) before posting it. A chat-completions body has none of those:
it is plain JSON that PydanticAI has already built, and walking its typing annotations costs
about 2 ms of CPU per request, the largest single cost of a research step in a worker that
carries a hundred runs on one interpreter. `ChatCompletionsClient` posts the body as built,
less the SDK's omit markers; everything else (auth, errors, streaming, response parsing) is the
SDK's own. tests/llms/test_openai_client.py checks that the body equals the SDK's transform."""

import functools
import ssl
from functools import cached_property
from typing import Any

import httpx2
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from openai._base_client import make_request_options
from openai._streaming import AsyncStream
from openai._types import NotGiven, Omit, not_given
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionChunk


def request_body(params: dict[str, Any]) -> dict[str, Any]:
    """A create() call's keyword arguments as the JSON body: omitted values dropped at every level."""
    return _without_omitted(params)


def _without_omitted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_omitted(v) for k, v in value.items() if not isinstance(v, (Omit, NotGiven))}
    if isinstance(value, (list, tuple)):
        return [_without_omitted(v) for v in value]
    return value


class _Completions(AsyncCompletions):
    async def create(  # type: ignore[override]  # the same keywords, taken as they come
        self,
        *,
        extra_headers: Any = None,
        extra_query: Any = None,
        extra_body: Any = None,
        timeout: Any = not_given,
        **params: Any,
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        body = request_body(params)
        return await self._post(
            "/chat/completions",
            body=body,
            options=make_request_options(
                extra_headers=extra_headers,
                extra_query=extra_query,
                extra_body=extra_body,
                timeout=timeout,
                security={"bearer_auth": True},
            ),
            cast_to=ChatCompletion,
            stream=bool(body.get("stream")),
            stream_cls=AsyncStream[ChatCompletionChunk],
        )


class _Chat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:
        return _Completions(self._client)


class ChatCompletionsClient(AsyncOpenAI):
    """AsyncOpenAI whose chat completions skip the request-body transform (see the module)."""

    @cached_property
    def chat(self) -> AsyncChat:
        return _Chat(self)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One per process: loading the CA bundle costs ~20 ms of CPU, and a worker starts many runs."""
    return ssl.create_default_context()


def openai_client(base_url: str, api_key: str, *, keep_alive: int = 20) -> ChatCompletionsClient:
    # The SDK's own retries are off: RetryingModel retries, honours Retry-After and counts.
    limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=keep_alive)
    return ChatCompletionsClient(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=_ssl_context(), limits=limits),
    )
