"""Which model an agent talks to, from settings: `offline` (the built-in extractive engines,
the default when no provider is configured), any PydanticAI model string such as
`openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, or `openai-compatible:<model>` with
`LLM_BASE_URL` for Ollama, vLLM and other OpenAI-compatible servers."""

import functools
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from django.conf import settings
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from config.exceptions import ApplicationError
from llms.offline import OFFLINE_MODEL_NAME, offline_model
from llms.offline_chat import OFFLINE_CHAT_MODEL_NAME, offline_chat_model
from llms.retrying import RetryingModel

OFFLINE = "offline"
OPENAI_COMPATIBLE = "openai-compatible:"
ENGINE_OFFLINE = "offline-extractive"
ENGINE_LLM = "llm"


class ModelConfigurationError(ApplicationError):
    code = "model_not_configured"


@dataclass(frozen=True)
class ChosenModel:
    model: Model
    name: str
    engine: str  # ENGINE_OFFLINE or ENGINE_LLM
    # Closes the model's HTTP client; await it on the event loop the run used.
    aclose: Callable[[], Awaitable[None]] | None = None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One per process: loading the CA bundle costs ~20 ms of CPU, and a worker starts many runs."""
    return ssl.create_default_context()


def research_model(*, breadth: int, search_top_k: int, depth: str) -> ChosenModel:
    spec = (settings.RESEARCH_MODEL or OFFLINE).strip()
    if spec == OFFLINE:
        model = offline_model(breadth=breadth, search_top_k=search_top_k, depth=depth)
        return ChosenModel(model, OFFLINE_MODEL_NAME, ENGINE_OFFLINE)
    return _configured(spec)


def chat_model() -> ChosenModel:
    """The chat agent's model: CHAT_MODEL, else RESEARCH_MODEL's, else the offline chat engine."""
    spec = (settings.CHAT_MODEL or settings.RESEARCH_MODEL or OFFLINE).strip()
    if spec == OFFLINE:
        return ChosenModel(offline_chat_model(), OFFLINE_CHAT_MODEL_NAME, ENGINE_OFFLINE)
    return _configured(spec)


def _configured(spec: str) -> ChosenModel:
    if spec.startswith(OPENAI_COMPATIBLE):
        name = spec.removeprefix(OPENAI_COMPATIBLE)
        if not settings.LLM_BASE_URL or not name:
            raise ModelConfigurationError(f"{spec!r} needs LLM_BASE_URL and a model name")
        # The SDK's own retries are off: RetryingModel retries, honours Retry-After and counts.
        client = AsyncOpenAI(
            base_url=settings.LLM_BASE_URL,
            api_key=settings.LLM_API_KEY or "not-needed",
            max_retries=0,
            http_client=DefaultAsyncHttpxClient(verify=_ssl_context()),
        )
        model = OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))
        return ChosenModel(RetryingModel(model), spec, ENGINE_LLM, aclose=client.close)
    try:
        return ChosenModel(RetryingModel(infer_model(spec)), spec, ENGINE_LLM)
    except Exception as exc:  # unknown provider prefix, missing API key, missing extra
        raise ModelConfigurationError(f"cannot use model {spec!r}: {exc}") from exc
