"""Which model an agent talks to, from a model spec: any PydanticAI model string such as
`openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, or `openai-compatible:<model>` for
Ollama, vLLM and other OpenAI-compatible servers at `LLM_BASE_URL` (or at its own URL:
`openai-compatible:<model>@http://host:8000/v1`). A comma-separated spec is a fallback chain
(PydanticAI's FallbackModel): a transient failure of one moves on to the next. `offline` names
the built-in minds, which the agents' own modules provide; this module only builds provider
models."""

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from asgiref.sync import async_to_sync
from django.conf import settings
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from config.exceptions import ApplicationError
from llms.errors import is_transient_model_error
from llms.openai_client import ChatCompletionsClient, openai_client
from llms.retrying import RetryingModel

OFFLINE = "offline"
OPENAI_COMPATIBLE = "openai-compatible:"


# A URL's user:password@ (its userinfo) and its ?query: where endpoints carry credentials.
_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s,]*@", re.IGNORECASE)
_QUERY = re.compile(r"\?[^\s,]*")


def masked_spec(spec: str) -> str:
    """A model spec as it may be stored and shown (model usage, errors, the API): the URLs'
    credentials (userinfo, query string) replaced by `***`."""
    return _QUERY.sub("?***", _USERINFO.sub(r"\g<scheme>***@", spec or ""))


class Engine(StrEnum):
    OFFLINE = "offline-extractive"
    LLM = "llm"


class ModelConfigurationError(ApplicationError):
    code = "model_not_configured"


@dataclass(frozen=True)
class ChosenModel:
    model: Model
    name: str
    engine: str  # an Engine
    # Closes the model's HTTP client; await it on the event loop the run used.
    aclose: Callable[[], Awaitable[None]] | None = None


def configured_model(spec: str, *, shared_client: bool = False) -> ChosenModel:
    """A provider model for `spec` (one model or a comma-separated fallback chain). With
    shared_client (a run on the process's run loop), each endpoint's HTTP client and connection
    pool are the loop's, shared by every run it carries; otherwise the model gets clients of its
    own, closed with ChosenModel.aclose. Transient failures are retried in line (RetryingModel),
    after the chain has moved through its models."""
    members = [m.strip() for m in spec.split(",") if m.strip()]
    if not members:
        raise ModelConfigurationError("no model named")
    built = [_provider_model(m, shared_client=shared_client) for m in members]
    closers = [close for _, close in built if close is not None]
    model: Model = built[0][0]
    if len(built) > 1:
        model = FallbackModel(*(m for m, _ in built), fallback_on=is_transient_model_error)

    async def aclose() -> None:
        for close in closers:
            await close()

    chosen = RetryingModel(model, settings=request_settings())
    return ChosenModel(chosen, spec, Engine.LLM, aclose=aclose if closers else None)


def request_settings() -> ModelSettings:
    """What every provider request carries: a deadline over the request and its in-line retries
    (PydanticAI's request_timeout; a hung endpoint fails as a transient error instead of holding
    a run for the SDK's ten minutes), a cap on the tokens one reply may generate, and no retries
    of the SDK's own (RetryingModel retries, and counts them)."""
    chosen = ModelSettings(max_retries=0)
    if settings.LLM_REQUEST_TIMEOUT_SECONDS > 0:
        chosen["request_timeout"] = settings.LLM_REQUEST_TIMEOUT_SECONDS
    if settings.LLM_MAX_OUTPUT_TOKENS > 0:
        chosen["max_tokens"] = settings.LLM_MAX_OUTPUT_TOKENS
    return chosen


def _provider_model(spec: str, *, shared_client: bool) -> tuple[Model, Callable[[], Awaitable[None]] | None]:
    if spec.startswith(OPENAI_COMPATIBLE):
        name, _, own_url = spec.removeprefix(OPENAI_COMPATIBLE).partition("@")
        base_url = own_url or settings.LLM_BASE_URL
        if not base_url or not name:
            raise ModelConfigurationError(
                f"{masked_spec(spec)!r} needs a model name and LLM_BASE_URL (or @URL)"
            )
        api_key = settings.LLM_API_KEY or "not-needed"
        if shared_client:
            client, aclose = _loop_client(asyncio.get_running_loop(), base_url, api_key), None
        else:
            client = openai_client(base_url, api_key)
            aclose = client.close
        return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client)), aclose
    try:
        return infer_model(spec), None
    except Exception as exc:  # unknown provider prefix, missing API key, missing extra
        raise ModelConfigurationError(
            f"cannot use model {masked_spec(spec)!r}: {_first_sentence(exc)}"
        ) from exc


def _first_sentence(exc: Exception) -> str:
    """What a provider library's error says first ("Set the `OPENAI_API_KEY` environment variable
    ..."), without the tips and documentation links it goes on with."""
    text = " ".join(str(exc).split())
    end = re.search(r"[.!?](?=\s)", text)
    return text[: end.end()] if end else text


def model_check(spec: str) -> None:
    """Raise ModelConfigurationError if `spec` (one model or a fallback chain) cannot be used as
    configured: an unknown provider, a missing API key or base URL. No request is made."""
    for member in (m.strip() for m in spec.split(",")):
        if member and member != OFFLINE:
            _model, aclose = _provider_model(member, shared_client=False)
            if aclose is not None:
                async_to_sync(aclose)()


@functools.lru_cache(maxsize=8)
def _loop_client(loop: asyncio.AbstractEventLoop, base_url: str, api_key: str) -> ChatCompletionsClient:
    """One client per event loop and endpoint: its keep-alive connections serve every run on the
    loop (an httpx client belongs to the loop its connections were opened on). Each run in
    flight holds a connection; they stay open between its requests rather than being re-dialled."""
    return openai_client(base_url, api_key, keep_alive=1000)
