"""The pages a request the server could not read (Django's handler400) or may not carry out
(handler403) gets: what was wrong, in words and with a code, rather than a bare "Bad Request
(400)" or "403 Forbidden". Django raises the first while reading the body (for the CSRF check or
a view), before any view can answer with its own page; a view raises the second (a corpus shared
with the user, which only its creator may manage)."""

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFilesSent
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


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = str(exception) if isinstance(exception, PermissionDenied) and str(exception) else ""
    message = message[:1].upper() + message[1:] if message else "You may not do that."
    return render(request, "403.html", {"code": "permission_denied", "message": message}, status=403)


class ForbiddenWithoutTraceback(logging.Filter):
    """django.request logs a refused request (403) with the PermissionDenied's traceback: a
    user's everyday "not yours to manage", not an error. The line is kept, the traceback not."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info, record.exc_text = None, None
        return True
