"""Refuses a page's form fields or query string holding a NUL: no text column can store one
(PostgreSQL raises DataError, a 500), so every page answers the same 400 before its view runs.
The GraphQL view and the upload API check their own input and answer JSON. A multipart body is
read here only where the CSRF check has read it already (a view that is not csrf_exempt), so a
view that refuses a body from its Content-Length before reading it still can."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

_OWN_CHECKS = ("/graphql", "/api/")
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _holds_nul(data: QueryDict) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists())


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
