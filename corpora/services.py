"""Writes to corpora, documents and passages. Each is atomic: a document is stored (or deleted)
with all its passages and lexical index entries, or not at all. Managing a corpus (rename,
delete, share, delete a document) is its creator's alone."""

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import assign_perm, remove_perm

from config.text import name_clean
from corpora.chunking import chunk_text
from corpora.constants import CORPUS_NAME_MAX_LENGTH, DOCUMENT_TITLE_MAX_LENGTH
from corpora.embedding import Embedder, get_embedder, vector_to_bytes
from corpora.exceptions import (
    CorpusBusy,
    CorpusHasReports,
    CorpusNameInvalid,
    CorpusNameTaken,
    CorpusNotFound,
    CorpusPermissionDenied,
    DocumentNotFound,
    FileTooLarge,
    IngestError,
    ShareUserNotFound,
    ShareWithSelf,
)
from corpora.extraction import extract, file_type_for
from corpora.models import Corpus, Document, Passage
from corpora.retrieval.vector_store import vectors_save
from corpora.retrieval.versions import CHANNEL as VERSION_CHANNEL
from corpora.retrieval.versions import index_versions
from corpora.selectors import document_get_by_hash, user_get_active
from research.models import ACTIVE_STATUSES, ResearchReport

logger = logging.getLogger(__name__)

CORPUS_VIEW_PERMISSION = "view_corpus"
CORPUS_CREATOR_PERMISSIONS = (CORPUS_VIEW_PERMISSION, "change_corpus", "delete_corpus")


def cli_user_ensure(*, username: str) -> AbstractBaseUser:
    """The account that owns what the command line creates; made on first use, no password."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def corpus_create(*, creator: AbstractBaseUser, name: str, description: str = "") -> Corpus:
    name = _corpus_name_clean(name)
    if Corpus.objects.filter(creator=creator, name=name).exists():
        raise CorpusNameTaken(f"you already have a corpus named {name!r}", field="name")
    try:
        with transaction.atomic():
            corpus = Corpus.objects.create(creator=creator, name=name, description=description)
    except IntegrityError as exc:  # a concurrent create won the race
        raise CorpusNameTaken(f"you already have a corpus named {name!r}", field="name") from exc
    for permission in CORPUS_CREATOR_PERMISSIONS:
        assign_perm(permission, creator, corpus)
    return corpus


def _corpus_name_clean(name: str | None) -> str:
    """One line of printable text (config.text.name_clean); 1 to CORPUS_NAME_MAX_LENGTH characters."""
    # A NUL is refused, as at the API's door; other controls are dropped.
    refused = "\x00" in (name or "")
    name = name_clean(name)
    if refused or not name or len(name) > CORPUS_NAME_MAX_LENGTH:
        raise CorpusNameInvalid(f"a corpus name is 1 to {CORPUS_NAME_MAX_LENGTH} characters", field="name")
    return name


@transaction.atomic
def corpus_rename(*, user: AbstractBaseUser, corpus: Corpus, name: str) -> Corpus:
    """The creator renames the corpus; names stay unique per creator."""
    name = _corpus_name_clean(name)
    corpus = _corpus_lock_for_creator(user=user, corpus_id=corpus.pk)
    if corpus.name == name:
        return corpus
    if Corpus.objects.filter(creator=user, name=name).exclude(pk=corpus.pk).exists():
        raise CorpusNameTaken(f"you already have a corpus named {name!r}", field="name")
    corpus.name = name
    try:
        with transaction.atomic():
            corpus.save(update_fields=["name", "modified"])
    except IntegrityError as exc:  # a concurrent create or rename took the name
        raise CorpusNameTaken(f"you already have a corpus named {name!r}", field="name") from exc
    return corpus


@dataclass(frozen=True)
class CorpusDeleted:
    corpus_id: int
    documents: int
    reports: int


@transaction.atomic
def corpus_delete(*, user: AbstractBaseUser, corpus: Corpus, delete_reports: bool = False) -> CorpusDeleted:
    """The creator deletes the corpus with its documents, passages, conversations and sharing.
    Its research reports (every user's: they cite its passages) go with it only when
    `delete_reports` says so; otherwise a corpus with reports is refused, as is one a run is
    using."""
    corpus = _corpus_lock_for_creator(user=user, corpus_id=corpus.pk)
    _corpus_not_busy(corpus)
    reports = ResearchReport.objects.filter(corpus=corpus)
    report_count = reports.count()
    if report_count and not delete_reports:
        raise CorpusHasReports(
            f"this corpus has {report_count} research report(s) that cite its passages; "
            "delete them with it (deleteReports: true) or keep the corpus",
            field="delete_reports",
        )
    documents = Document.objects.filter(corpus=corpus).count()
    reports.delete()
    # Object permissions point at the corpus by a generic key, which no cascade follows.
    content_type = ContentType.objects.get_for_model(Corpus)
    for permission_model in (UserObjectPermission, GroupObjectPermission):
        permission_model.objects.filter(content_type=content_type, object_pk=str(corpus.pk)).delete()
    # Other processes drop what they keep for it (the NOTIFY goes out with the commit).
    corpus_bump_index_version(corpus_id=corpus.pk)
    corpus_id = corpus.pk
    corpus.delete()
    return CorpusDeleted(corpus_id=corpus_id, documents=documents, reports=report_count)


@transaction.atomic
def document_delete(*, user: AbstractBaseUser, document: Document) -> Corpus:
    """The corpus's creator deletes one document with its passages and their lexical index
    rows (the SQLite trigger / PostgreSQL's generated column go with the rows); the version
    bump makes every process rebuild its in-memory indexes without them. Reports that cited
    it keep their content and quotes; their citations' passages read as deleted."""
    corpus = _corpus_lock_for_creator(user=user, corpus_id=document.corpus_id)
    _corpus_not_busy(corpus)
    deleted, _ = Document.objects.filter(pk=document.pk, corpus=corpus).delete()
    if not deleted:  # a concurrent delete got there first
        raise DocumentNotFound("document not found", field="id")
    corpus_bump_index_version(corpus_id=corpus.pk)
    corpus.refresh_from_db()
    return corpus


def corpus_share(*, user: AbstractBaseUser, corpus: Corpus, username: str) -> AbstractBaseUser:
    """The creator lets another user read, search and research the corpus (view_corpus);
    managing it stays the creator's. Sharing twice changes nothing."""
    grantee = _share_target(user=user, corpus=corpus, username=username)
    assign_perm(CORPUS_VIEW_PERMISSION, grantee, corpus)
    return grantee


def corpus_unshare(*, user: AbstractBaseUser, corpus: Corpus, username: str) -> AbstractBaseUser:
    """Takes back what corpus_share granted. The user's own reports on the corpus stay theirs;
    a run of theirs already under way finishes, a queued one fails at its start."""
    grantee = _share_target(user=user, corpus=corpus, username=username)
    remove_perm(CORPUS_VIEW_PERMISSION, grantee, corpus)
    return grantee


def _share_target(*, user: AbstractBaseUser, corpus: Corpus, username: str) -> AbstractBaseUser:
    _corpus_check_creator(user=user, corpus=corpus)
    name = (username or "").strip()
    grantee = user_get_active(username=name)
    if grantee is None:
        # The name as typed, so that a typo shows ("no user named 'bbo'").
        said = f"no user named {name[:150]!r}" if name else "give the username of the user"
        raise ShareUserNotFound(said, field="username")
    if grantee.pk == corpus.creator_id:
        raise ShareWithSelf("you cannot share a corpus with yourself", field="username")
    return grantee


def _corpus_check_creator(*, user: AbstractBaseUser, corpus: Corpus) -> None:
    if not user.is_authenticated or corpus.creator_id != user.pk:
        raise CorpusPermissionDenied("only the corpus's creator can do that", field="id")


def _corpus_lock_for_creator(*, user: AbstractBaseUser, corpus_id: int) -> Corpus:
    """The corpus row, locked until the transaction ends: a research start or an ingest on it
    (whose inserts check the corpus key) waits for this transaction, and one already under way
    is waited for."""
    corpus = Corpus.objects.select_for_update().filter(pk=corpus_id).first()
    if corpus is None:
        raise CorpusNotFound("corpus not found", field="id")
    _corpus_check_creator(user=user, corpus=corpus)
    return corpus


def _corpus_not_busy(corpus: Corpus) -> None:
    if ResearchReport.objects.filter(corpus=corpus, status__in=ACTIVE_STATUSES).exists():
        raise CorpusBusy(
            "a research run on this corpus is in progress; wait for it to end or cancel it", field="id"
        )


def corpus_bump_index_version(*, corpus_id: int) -> None:
    """Searches in every process see the corpus's passages and documents anew. On PostgreSQL
    the bump NOTIFYs the processes' version listeners when its transaction commits
    (corpora.retrieval.versions)."""
    Corpus.objects.filter(pk=corpus_id).update(index_version=F("index_version") + 1)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [VERSION_CHANNEL, str(corpus_id)])
    index_versions.forget(corpus_id)


@dataclass(frozen=True)
class IngestResult:
    document: Document
    created: bool
    passages: int
    message: str


def document_ingest(
    *,
    corpus: Corpus,
    path: str | Path | None = None,
    content: bytes | None = None,
    filename: str | None = None,
    title: str | None = None,
    schedule_embedding: bool = True,
) -> IngestResult:
    """Store one file as a Document with its Passages. The same bytes twice is a no-op."""
    if (path is None) == (content is None):
        raise IngestError("give either a path or the content bytes", code="invalid_arguments")
    if path is not None:
        path = Path(path)
        filename = filename or path.name
        try:
            size = path.stat().st_size
            if size > settings.INGEST_MAX_FILE_BYTES:
                raise FileTooLarge(_too_large(filename, size))
            content = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"{str(path)!r}: {exc.strerror or exc}", code="unreadable_file") from exc
    if not filename:
        raise IngestError("a filename is needed to know the file type", code="filename_required")
    file_type = file_type_for(filename)
    if len(content) > settings.INGEST_MAX_FILE_BYTES:
        raise FileTooLarge(_too_large(filename, len(content)))

    content_hash = hashlib.sha256(content).hexdigest()
    existing = document_get_by_hash(corpus=corpus, content_hash=content_hash)
    if existing is not None:
        return _already_ingested(existing)

    extracted = extract(content, file_type, filename=filename)
    spans = chunk_text(extracted.text, pages=extracted.pages, headings=extracted.headings)
    text = extracted.text
    try:
        with transaction.atomic():
            # The corpus row first, as deletes and embedding batches lock it: the passages'
            # lexeme counts (PostgreSQL) are then updated by one writer of the corpus at a time.
            corpus_bump_index_version(corpus_id=corpus.pk)
            document = Document.objects.create(
                corpus=corpus,
                title=(title or Path(filename).stem or filename)[:DOCUMENT_TITLE_MAX_LENGTH],
                source_name=Path(filename).name[:DOCUMENT_TITLE_MAX_LENGTH],
                file_type=file_type,
                text=text,
                page_count=len(extracted.pages) if extracted.pages is not None else None,
                content_hash=content_hash,
                byte_size=len(content),
            )
            Passage.objects.bulk_create(
                [
                    Passage(
                        corpus=corpus,
                        document=document,
                        ordinal=ordinal,
                        text=text[span.start : span.end],
                        start=span.start,
                        end=span.end,
                        page=span.page,
                        heading_path=list(span.heading_path),
                        is_heading=span.is_heading,
                        word_count=span.word_count,
                    )
                    for ordinal, span in enumerate(spans)
                ],
                batch_size=500,
            )
            if schedule_embedding:
                transaction.on_commit(lambda: _schedule_embedding(corpus.pk))
    except IntegrityError:
        # The same bytes were ingested concurrently; theirs stands.
        existing = document_get_by_hash(corpus=corpus, content_hash=content_hash)
        if existing is None:
            raise
        return _already_ingested(existing)
    noun = "passage" if len(spans) == 1 else "passages"
    return IngestResult(document, True, len(spans), f"ingested {filename!r}: {len(spans)} {noun}")


def _too_large(filename: str, size: int) -> str:
    return f"{filename!r} is {size} bytes; the limit is {settings.INGEST_MAX_FILE_BYTES}"


def _already_ingested(document: Document) -> IngestResult:
    return IngestResult(
        document,
        False,
        document.passages.count(),
        f"skipped: same content already ingested as document {document.pk} ({document.source_name!r})",
    )


def _schedule_embedding(corpus_id: int) -> None:
    from tasks.embeddings import corpus_embedding_schedule

    corpus_embedding_schedule(corpus_id=corpus_id)


def passage_embedding_input(*, text: str, heading_path: list[str]) -> str:
    """What the embedder sees: the section path gives a passage the context it lacks alone."""
    if heading_path:
        return " > ".join(heading_path) + "\n" + text
    return text


def passage_embed_pending(
    *,
    corpus: Corpus,
    embedder: Embedder | None = None,
    batch_size: int | None = None,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed the corpus's passages that have no vector from the current model, in batches,
    each written in its own transaction so that dense search improves as it goes. A passage
    holding another model's vector (the model or EMBEDDING_MINILM_RUNTIME changed) counts as
    not embedded: it is re-embedded, its vector replaced in the same transaction in the
    passage row and the vector store. Until then dense search, which compares only vectors
    of the current model, does not see it (hybrid still finds it lexically), and corpus_stats
    says the embedding is incomplete."""
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    batch_size = batch_size or settings.EMBEDDING_BATCH_SIZE
    done, last_id = 0, 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        batch = list(
            Passage.objects.filter(corpus=corpus, pk__gt=last_id)
            .exclude(embedding_model=embedder.name)
            .order_by("pk")
            .values_list("pk", "text", "heading_path")[:size]
        )
        if not batch:
            break
        vectors = embedder.embed_documents(
            [passage_embedding_input(text=text, heading_path=path) for _, text, path in batch]
        )
        with transaction.atomic():
            # The corpus row first, then its passages: the order corpus_delete and
            # document_delete lock them in, so a batch and a delete wait for each other
            # instead of deadlocking.
            corpus_bump_index_version(corpus_id=corpus.pk)
            for (pk, _, _), vector in zip(batch, vectors, strict=True):
                Passage.objects.filter(pk=pk).update(
                    embedding=vector_to_bytes(vector), embedding_model=embedder.name
                )
            vectors_save(model=embedder.name, ids=[pk for pk, _, _ in batch], matrix=vectors)
        done += len(batch)
        last_id = batch[-1][0]
        if progress is not None:
            progress(done)
    return done
