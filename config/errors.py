"""The page a request the server could not read gets (Django's handler400): what was wrong, in
words and with a code, rather than a bare "Bad Request (400)". Django raises these while reading
the body (for the CSRF check or a view), before any view can answer with its own page."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if isinstance(exception, TooManyFilesSent):
        code = "too_many_files"
        message = f"An upload is at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files at a time."
    elif isinstance(exception, RequestDataTooBig):
        code, message = "request_too_large", "The form's fields are too large."
    else:
        code, message = "bad_request", "The request could not be read."
    return render(request, "400.html", {"code": code, "message": message}, status=400)
