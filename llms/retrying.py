"""In-line retries of a model request: a transient provider failure (429, 5xx, timeout, lost
connection, a body that is not JSON) is retried twice with a doubling backoff, or after the
provider's Retry-After. The count is kept so the run can record it; a failure that outlasts the
retries propagates and the task-level retry (resume from the checkpoint) takes over."""

import asyncio
import logging

from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from llms.errors import is_transient_model_error, retry_after

logger = logging.getLogger(__name__)

INLINE_RETRIES = 2
INLINE_BACKOFF_SECONDS = 1.0


class RetryingModel(WrapperModel):
    def __init__(
        self,
        wrapped,
        *,
        retries: int = INLINE_RETRIES,
        backoff: float = INLINE_BACKOFF_SECONDS,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.retries = retries
        self.backoff = backoff
        self.retried = 0  # in-line retries made so far, for the run's model usage
        self._own_settings = settings or {}

    @property
    def settings(self) -> ModelSettings | None:
        """The wrapped model's settings, with ours (request deadline, output cap) over them."""
        merged = {**(self.wrapped.settings or {}), **self._own_settings}
        return ModelSettings(**merged) if merged else None

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        attempt = 0
        while True:
            try:
                return await self.wrapped.request(messages, model_settings, model_request_parameters)
            except ModelAPIError as exc:
                if attempt >= self.retries or not is_transient_model_error(exc):
                    raise
                delay = retry_after(exc)
                delay = self.backoff * 2**attempt if delay is None else delay
                attempt += 1
                self.retried += 1
                logger.warning(
                    "model request failed (%s); retry %d in %.1fs", type(exc).__name__, attempt, delay
                )
                await asyncio.sleep(delay)
