"""Which provider failures are worth retrying: rate limits, overload, server errors, timeouts
(the SDK's and our own request deadline) and lost connections are transient; authentication,
bad requests, unknown models and our own configuration errors are permanent and fail a run at
once. A 200 whose body is not JSON (a proxy's HTML error page) is transient too: PydanticAI
raises a plain ModelAPIError for it (or, served as text/html, a ModelInvalidResponseError
"expected JSON data")."""

from django.db import InterfaceError, OperationalError
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelInvalidResponseError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
)

TRANSIENT_MODEL_ERRORS = (
    ModelRateLimitError,
    ModelUnavailableError,
    ModelServerError,
    ModelConnectionError,
    ModelRequestTimeout,  # our LLM_REQUEST_TIMEOUT_SECONDS ran out
)
RETRY_AFTER_MAX_SECONDS = 60.0


# The messages of PydanticAI's ModelAPIError for a body the SDK could not read as JSON.
UNDECODABLE_BODY = ("Failed to decode response as JSON", "Expected a JSON response")


def is_transient_model_error(exc: BaseException) -> bool:
    """A provider failure worth sending the request again (or to the next model of a chain)."""
    if isinstance(exc, TRANSIENT_MODEL_ERRORS):
        return True
    if isinstance(exc, ModelInvalidResponseError):  # a body served as text/html, not JSON
        return "expected JSON data" in exc.message
    return type(exc) is ModelAPIError and str(exc.message).startswith(UNDECODABLE_BODY)


def is_transient(exc: BaseException) -> bool:
    return is_transient_model_error(exc) or isinstance(
        exc, (OperationalError, InterfaceError, ConnectionError)
    )


def retry_after(exc: BaseException) -> float | None:
    """The delay the provider asked for (Retry-After), capped, if it sent one."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and value >= 0:
        return min(float(value), RETRY_AFTER_MAX_SECONDS)
    return None
