"""POST /api/corpora/<corpus>/documents: files uploaded into a corpus (multipart/form-data, field
`files`), each ingested as `manage.py ingest` does, with one result per file. Authenticated as
/graphql is (an API token, or a session with its CSRF token); the corpus's creator only. Every
answer is JSON, a refusal `{"errors": [{"code", "message"}]}`, never an error page."""

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFilesSent
from django.http import HttpRequest, JsonResponse, UnreadablePostError
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt

from config.api_auth import ApiRefused, request_authenticate, request_declared_length, request_may_write
from config.graphql.ids import PK_MAX, InvalidId, decode_id, encode_id
from config.ratelimit import RateLimited, rate, rate_limit_hit
from corpora.constants import UPLOAD_FIELD
from corpora.exceptions import CorpusNotFound, CorpusPermissionDenied
from corpora.models import Corpus
from corpora.selectors import corpus_get_for_creator
from corpora.uploads import UploadOutcome, documents_upload

logger = logging.getLogger(__name__)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after

    def response(self) -> JsonResponse:
        error = {"code": self.code, "message": self.message}
        if self.retry_after is not None:
            error["retry_after"] = self.retry_after
        response = JsonResponse({"errors": [error]}, status=self.status)
        if self.retry_after is not None:
            response["Retry-After"] = str(self.retry_after)
        if self.status == 405:
            response["Allow"] = "POST"
        return response


@csrf_exempt  # request_authenticate checks CSRF for sessions; bearer-token clients are not browsers
def document_upload(request: HttpRequest, corpus_ref: str) -> JsonResponse:
    try:
        return _upload(request, corpus_ref)
    except _Refused as refused:
        return refused.response()
    # From the door (Content-Length, token, CSRF, a read-only token) or the uploads rate.
    except RateLimited as limited:
        return _Refused(429, limited.code, limited.message, retry_after=limited.retry_after).response()
    except ApiRefused as refused:
        return _Refused(refused.status, refused.code, refused.message).response()
    except RequestDataTooBig:
        return _Refused(413, "request_too_large", "the request's form fields are too large").response()
    except TooManyFilesSent:
        return _Refused(
            400, "too_many_files", f"at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files per request"
        ).response()
    except (MultiPartParserError, SuspiciousOperation, UnreadablePostError):
        return _Refused(
            400, "invalid_body", "the request body could not be read as multipart/form-data"
        ).response()
    except Exception:  # never a traceback to the client
        logger.exception("unhandled error in the upload endpoint")
        return _Refused(500, "internal_error", "internal error").response()


def _upload(request: HttpRequest, corpus_ref: str) -> JsonResponse:
    # What the request is, from its headers alone; then who sends it; then the corpus; only
    # then is the body read.
    if request.method != "POST":
        raise _Refused(405, "method_not_allowed", "POST the files as multipart/form-data")
    # Refuse an oversized body from its Content-Length, before a byte of it is read.
    request_declared_length(request, limit=settings.UPLOAD_MAX_BYTES, required=True)
    if request.content_type != "multipart/form-data":
        raise _Refused(415, "unsupported_media_type", "send the files as multipart/form-data")
    _authenticate(request)
    corpus = _corpus(request, corpus_ref)
    uploads = request.FILES.getlist(UPLOAD_FIELD)
    if not uploads:
        raise _Refused(400, "no_files", f"send one or more files in the {UPLOAD_FIELD!r} field")
    rate_limit_hit(scope="uploads", key=f"user:{request.user.pk}", rate=rate("uploads"), amount=len(uploads))
    outcomes = documents_upload(corpus=corpus, uploads=uploads)
    return JsonResponse(
        {"corpus_id": encode_id("Corpus", corpus.pk), "documents": [_outcome(o) for o in outcomes]}
    )


def _authenticate(request: HttpRequest) -> None:
    request_authenticate(request)
    if not request.user.is_authenticated:
        raise _Refused(401, "not_authenticated", "sign in or send an API token")
    request_may_write(request, what="upload documents")


def _corpus(request: HttpRequest, corpus_ref: str) -> Corpus:
    """The corpus named by its global id or its number, if this user created it: 404 alike for
    a malformed reference, a missing corpus and one the user cannot see; 403 for a user it is
    shared with (they know it exists)."""
    try:
        if corpus_ref.isascii() and corpus_ref.isdigit() and len(corpus_ref) <= len(str(PK_MAX)):
            corpus_id = int(corpus_ref)
        else:
            corpus_id = decode_id(corpus_ref, "Corpus")
        if not 0 < corpus_id <= PK_MAX:
            raise CorpusNotFound("corpus not found")
        return corpus_get_for_creator(user=request.user, corpus_id=corpus_id)
    except (InvalidId, CorpusNotFound) as exc:
        raise _Refused(404, "corpus_not_found", "corpus not found") from exc
    except CorpusPermissionDenied as exc:
        raise _Refused(403, exc.code, "only the corpus's creator can upload documents to it") from exc


def _outcome(outcome: UploadOutcome) -> dict:
    return {
        "filename": outcome.filename,
        "status": outcome.status,
        "code": outcome.code,
        "message": outcome.message,
        "document_id": encode_id("Document", outcome.document.pk) if outcome.document else None,
        "passages": outcome.passages,
    }
