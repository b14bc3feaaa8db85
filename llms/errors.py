"""Which provider failures are worth retrying: rate limits, overload, server errors, timeouts
and lost connections are transient; authentication, bad requests, unknown models and our own
configuration errors are permanent and fail a run at once."""

from django.db import InterfaceError, OperationalError
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
    ModelUnavailableError,
)

TRANSIENT_MODEL_ERRORS = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError)
RETRY_AFTER_MAX_SECONDS = 60.0


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, (*TRANSIENT_MODEL_ERRORS, OperationalError, InterfaceError, ConnectionError))


def retry_after(exc: BaseException) -> float | None:
    """The delay the provider asked for (Retry-After), capped, if it sent one."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and value >= 0:
        return min(float(value), RETRY_AFTER_MAX_SECONDS)
    return None
