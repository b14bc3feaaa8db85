"""Which model a research run talks to, from settings: `offline` (the built-in extractive
engine, the default when no provider is configured), any PydanticAI model string such as
`openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, or `openai-compatible:<model>` with
`LLM_BASE_URL` for Ollama, vLLM and other OpenAI-compatible servers."""

from dataclasses import dataclass

from django.conf import settings
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from config.exceptions import ApplicationError
from llms.offline import OFFLINE_MODEL_NAME, offline_model

OFFLINE = "offline"
OPENAI_COMPATIBLE = "openai-compatible:"


class ModelConfigurationError(ApplicationError):
    code = "model_not_configured"


@dataclass(frozen=True)
class ResearchModel:
    model: Model
    name: str
    engine: str  # "offline-extractive" or "llm"


def research_model(*, breadth: int, search_top_k: int) -> ResearchModel:
    spec = (settings.RESEARCH_MODEL or OFFLINE).strip()
    if spec == OFFLINE:
        return ResearchModel(
            offline_model(breadth=breadth, search_top_k=search_top_k),
            OFFLINE_MODEL_NAME,
            "offline-extractive",
        )
    if spec.startswith(OPENAI_COMPATIBLE):
        name = spec.removeprefix(OPENAI_COMPATIBLE)
        if not settings.LLM_BASE_URL or not name:
            raise ModelConfigurationError(f"{spec!r} needs LLM_BASE_URL and a model name")
        provider = OpenAIProvider(
            base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY or "not-needed"
        )
        return ResearchModel(OpenAIChatModel(name, provider=provider), spec, "llm")
    try:
        return ResearchModel(infer_model(spec), spec, "llm")
    except Exception as exc:  # unknown provider prefix, missing API key, missing extra
        raise ModelConfigurationError(f"cannot use RESEARCH_MODEL={spec!r}: {exc}") from exc
