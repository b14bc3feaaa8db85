"""Who an API request is, for /graphql and the upload endpoint alike: a bearer API token, or a
browser session whose POSTs carry the CSRF token; and whether its body may be read at all, from
its declared length. Refusals are typed errors with an HTTP status; each endpoint answers them
in its own JSON shape."""

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from accounts.services import api_token_check
from config.exceptions import ApplicationError
from config.ratelimit import client_address, rate, rate_limit_hit


class ApiRefused(ApplicationError):
    code = "api_refused"
    status = 400


class InvalidToken(ApiRefused):
    code = "invalid_token"
    status = 401


class CsrfFailed(ApiRefused):
    code = "csrf_failed"
    status = 403


class TokenReadOnly(ApiRefused):
    code = "token_read_only"
    status = 403


class LengthRequired(ApiRefused):
    code = "length_required"
    status = 411


class InvalidBody(ApiRefused):
    code = "invalid_body"
    status = 400


class RequestTooLarge(ApiRefused):
    code = "request_too_large"
    status = 413


def request_declared_length(request: HttpRequest, *, limit: int, required: bool) -> int:
    """The body's Content-Length, checked before a byte of the body is read: a chunked body
    (Django reads bodies by their Content-Length only, so it would parse as empty) and, when
    `required`, a missing length raise LengthRequired; a length that is not a number raises
    InvalidBody; one over `limit` raises RequestTooLarge. A missing length is 0 otherwise."""
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        raise LengthRequired("send the body with a Content-Length")
    declared = request.META.get("CONTENT_LENGTH") or ""
    if not declared:
        if required:
            raise LengthRequired("send the body with a Content-Length")
        return 0
    if not declared.isascii() or not declared.isdigit():
        raise InvalidBody("the Content-Length header is not a number")
    if int(declared) > limit:
        raise RequestTooLarge(f"the request body is over {limit} bytes")
    return int(declared)


def request_authenticate(request: HttpRequest) -> None:
    """Set request.user (and request.api_token: the bearer token, or None). A bad bearer token
    raises InvalidToken, or RateLimited once its address has guessed past RATE_LIMIT_TOKEN_FAILURES;
    a signed-in session's POST without the CSRF token raises CsrfFailed. The view calling this
    must be csrf_exempt: bearer-token clients are not browsers."""
    request.api_token = None
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, secret = header.partition(" ")
        token = api_token_check(secret=secret.strip()) if scheme.lower() == "bearer" else None
        if token is None:
            # Guessing tokens is counted per address; past the limit the answer is 429.
            rate_limit_hit(
                scope="token_failures", key=client_address(request) or "unknown", rate=rate("token_failures")
            )
            raise InvalidToken("the API token is missing, unknown, expired or revoked")
        request.user = token.user
        request.api_token = token
        return
    if not getattr(request, "user", None):
        request.user = AnonymousUser()
    if request.method == "POST" and request.user.is_authenticated:
        refusal = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
        if refusal is not None:
            raise CsrfFailed("CSRF check failed")


def request_may_write(request: HttpRequest, *, what: str) -> None:
    """A read-only API token reads but never writes: TokenReadOnly names what it cannot do."""
    token = getattr(request, "api_token", None)
    if token is not None and token.read_only:
        raise TokenReadOnly(f"this API token is read-only: it cannot {what}")
