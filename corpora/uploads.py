"""Files uploaded into a corpus: untrusted names made safe, size and type checked before a file
is read, then the ingestion `manage.py ingest` uses, with one outcome per file (a bad file is
reported with its code and never stops the others)."""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from config.exceptions import ApplicationError
from corpora.constants import UPLOAD_FILENAME_MAX_CHARS
from corpora.exceptions import FileTooLarge, IngestError
from corpora.extraction import file_type_for
from corpora.models import Corpus, Document
from corpora.services import document_ingest
from tasks.embeddings import corpus_embedding_schedule

logger = logging.getLogger(__name__)

STATUS_INGESTED = "ingested"
STATUS_DUPLICATE = "duplicate"
STATUS_FAILED = "failed"
# The code of a file whose bytes the corpus already holds (the same as `manage.py ingest` skips).
DUPLICATE_CODE = "duplicate_document"
# Longest suffix kept when a name is cut: ".markdown" is the longest the ingestion knows.
_SUFFIX_MAX_CHARS = 16


@dataclass(frozen=True)
class UploadOutcome:
    filename: str
    status: str
    code: str | None
    message: str
    document: Document | None = None
    passages: int = 0


def upload_filename_clean(name: str | None) -> str:
    """The last path component, without control characters (NUL, line breaks) or runs of
    whitespace, cut to UPLOAD_FILENAME_MAX_CHARS with its suffix kept; empty if nothing is left."""
    name = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = " ".join("".join(ch for ch in name if ch.isprintable()).split())
    if name in {".", ".."}:
        return ""
    if len(name) > UPLOAD_FILENAME_MAX_CHARS:
        suffix = PurePosixPath(name).suffix
        suffix = suffix if len(suffix) <= _SUFFIX_MAX_CHARS else ""
        name = name[: UPLOAD_FILENAME_MAX_CHARS - len(suffix)] + suffix
    return name


def documents_upload(*, corpus: Corpus, uploads: Iterable[UploadedFile]) -> list[UploadOutcome]:
    """Ingest each uploaded file into `corpus` (each document atomic, as `manage.py ingest`
    stores them) and queue the embedding of what was added once, for the worker."""
    outcomes = [_upload_one(corpus=corpus, upload=upload) for upload in uploads]
    if any(outcome.status == STATUS_INGESTED for outcome in outcomes):
        corpus_embedding_schedule(corpus_id=corpus.pk)
    return outcomes


def _upload_one(*, corpus: Corpus, upload: UploadedFile) -> UploadOutcome:
    filename = upload_filename_clean(upload.name)
    try:
        if not filename:
            raise IngestError("the file has no usable name", code="filename_required")
        file_type_for(filename)  # an unsupported type is refused before its bytes are read
        if upload.size is not None and upload.size > settings.INGEST_MAX_FILE_BYTES:
            raise FileTooLarge(
                f"{filename!r} is {upload.size} bytes; the limit is {settings.INGEST_MAX_FILE_BYTES}"
            )
        result = document_ingest(
            corpus=corpus, content=upload.read(), filename=filename, schedule_embedding=False
        )
    except ApplicationError as error:
        return UploadOutcome(filename, STATUS_FAILED, error.code, error.message)
    except Exception:  # one bad file never fails the others; its write rolled back
        logger.exception("uploading %r into corpus %s failed", filename, corpus.pk)
        return UploadOutcome(
            filename, STATUS_FAILED, "ingest_failed", "the file could not be stored; nothing of it was kept"
        )
    if not result.created:
        return UploadOutcome(filename, STATUS_DUPLICATE, DUPLICATE_CODE, result.message, result.document)
    return UploadOutcome(filename, STATUS_INGESTED, None, result.message, result.document, result.passages)
