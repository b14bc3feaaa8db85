"""Which model an agent talks to, from a model spec: any PydanticAI model string such as
`openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, or `openai-compatible:<model>` with
`LLM_BASE_URL` for Ollama, vLLM and other OpenAI-compatible servers. `offline` names the
built-in minds, which the agents' own modules provide; this module only builds provider models."""

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from config.exceptions import ApplicationError
from llms.openai_client import ChatCompletionsClient, openai_client
from llms.retrying import RetryingModel

OFFLINE = "offline"
OPENAI_COMPATIBLE = "openai-compatible:"


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
    """A provider model for `spec`. With shared_client (a run on the process's run loop), the
    HTTP client and its connection pool are the loop's, shared by every run it carries;
    otherwise the model gets a client of its own, closed with ChosenModel.aclose."""
    if spec.startswith(OPENAI_COMPATIBLE):
        name = spec.removeprefix(OPENAI_COMPATIBLE)
        if not settings.LLM_BASE_URL or not name:
            raise ModelConfigurationError(f"{spec!r} needs LLM_BASE_URL and a model name")
        base_url, api_key = settings.LLM_BASE_URL, settings.LLM_API_KEY or "not-needed"
        if shared_client:
            client, aclose = _loop_client(asyncio.get_running_loop(), base_url, api_key), None
        else:
            client = openai_client(base_url, api_key)
            aclose = client.close
        # A model per run (RetryingModel counts the run's retries); only the client is shared.
        model = OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))
        return ChosenModel(RetryingModel(model), spec, Engine.LLM, aclose=aclose)
    try:
        return ChosenModel(RetryingModel(infer_model(spec)), spec, Engine.LLM)
    except Exception as exc:  # unknown provider prefix, missing API key, missing extra
        raise ModelConfigurationError(f"cannot use model {spec!r}: {exc}") from exc


@functools.lru_cache(maxsize=8)
def _loop_client(loop: asyncio.AbstractEventLoop, base_url: str, api_key: str) -> ChatCompletionsClient:
    """One client per event loop and endpoint: its keep-alive connections serve every run on the
    loop (an httpx client belongs to the loop its connections were opened on). Each run in
    flight holds a connection; they stay open between its requests rather than being re-dialled."""
    return openai_client(base_url, api_key, keep_alive=1000)
