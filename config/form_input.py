"""What a page accepts as a request body, checked before its view runs. A body larger than an
upload may be, or sent chunked (no length to check), is refused with a 413 page from its
headers, before the CSRF check reads it: that check reads the whole form, files spooled to disk,
for anyone holding a CSRF cookie, which anyone can set. Form fields or a query string holding a
NUL are refused with a 400: no text column can store one (PostgreSQL raises DataError, a 500).
The GraphQL view and the upload API check their own input and answer JSON. A multipart body is
read here only where the CSRF check has read it already (a view that is not csrf_exempt), so a
view that refuses a body from its Content-Length before reading it still can."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

_OWN_CHECKS = ("/graphql", "/api/")
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _holds_nul(data: QueryDict) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists())


class RefuseOversizedBodyMiddleware:
    """Comes before CsrfViewMiddleware, whose process_view reads the body (after every
    middleware's request phase: the page has its user)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        if request.path.startswith(_OWN_CHECKS) or request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        declared = request.META.get("CONTENT_LENGTH") or "0"
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked or not declared.isascii() or not declared.isdigit():
            message = "Send the form with a Content-Length."
            return _refused(request, "length_required", message, status=411)
        if int(declared) > settings.UPLOAD_MAX_BYTES:
            limit = settings.UPLOAD_MAX_BYTES / (1024 * 1024)
            message = f"An upload is at most {limit:g} MB in all."
            return _refused(request, "request_too_large", message, status=413)
        return None


def _refused(request: HttpRequest, code: str, message: str, *, status: int) -> HttpResponse:
    response = render(request, "400.html", {"code": code, "message": message}, status=status)
    # The body was not read: the connection cannot carry another request after it.
    response["Connection"] = "close"
    return response


class RefuseNulMiddleware:
    """Comes after CsrfViewMiddleware, whose process_view reads the form first."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        if request.path.startswith(_OWN_CHECKS):
            return None
        form = request.method == "POST" and (
            request.content_type == _FORMS[0]
            or (request.content_type == _FORMS[1] and not getattr(view_func, "csrf_exempt", False))
        )
        if _holds_nul(request.GET) or (form and _holds_nul(request.POST)):
            message = "Text must not contain NUL characters."
            return render(request, "400.html", {"code": "invalid_input", "message": message}, status=400)
        return None
