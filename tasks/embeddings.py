"""Background embedding of new passages. With a broker, a Celery task; without one, a single
in-process worker thread, so ingestion never waits for the model either way."""

import logging
import queue
import threading

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection

from corpora.embedding import get_embedder
from corpora.models import Corpus, Passage
from corpora.services import passage_embed_pending

logger = logging.getLogger(__name__)

# How long a slice may hold its corpus before another task may take it (a worker that died
# mid-slice): well above a slice's minute.
SLICE_LOCK_SECONDS = 15 * 60


@shared_task(name="corpora.embed_corpus", acks_late=True, ignore_result=True)
def embed_corpus(corpus_id: int) -> int:
    """Embed the corpus's pending passages, EMBEDDING_TASK_MAX_PASSAGES of them, then queue the
    rest as a new task: a worker told to stop (a deploy) finishes a slice, not the corpus. One
    slice of a corpus runs at a time; a task that finds one running (the beat sweep re-queued
    the corpus meanwhile) leaves the rest to it."""
    corpus = Corpus.objects.filter(pk=corpus_id).first()
    if corpus is None:
        return 0
    lock = f"embedding:corpus:{corpus_id}"
    try:
        if not cache.add(lock, True, timeout=SLICE_LOCK_SECONDS):
            return 0
    except Exception:  # an unreachable cache: embed anyway (the writes are idempotent)
        logger.warning(
            "cache unavailable; corpus %s embedded without its slice lock", corpus_id, exc_info=True
        )
    limit = settings.EMBEDDING_TASK_MAX_PASSAGES or None
    try:
        done = passage_embed_pending(corpus=corpus, limit=limit)
    finally:
        try:
            cache.delete(lock)
        except Exception:  # it expires on its own
            logger.warning("cache unavailable; the slice lock of corpus %s expires on its own", corpus_id)
    if limit is not None and done >= limit:
        embed_corpus.delay(corpus_id)
    return done


@shared_task(name="corpora.embed_pending_sweep", ignore_result=True)
def embed_pending_sweep() -> int:
    """Beat job: re-queue corpora that still have passages without vectors (a worker died,
    the embedding endpoint was down, or the model changed)."""
    corpus_ids = corpora_pending_embedding()
    for corpus_id in corpus_ids:
        embed_corpus.delay(corpus_id)
    return len(corpus_ids)


def corpora_pending_embedding() -> list[int]:
    """The corpora with passages the configured embedder has not embedded."""
    embedder = get_embedder()
    if embedder is None:
        return []
    return list(
        Passage.objects.exclude(embedding_model=embedder.name)
        .order_by()
        .values_list("corpus_id", flat=True)
        .distinct()
    )


class InProcessEmbeddingWorker:
    """One daemon thread that embeds corpora queued by this process, each at most once
    in the queue at a time."""

    def __init__(self) -> None:
        self._queue: queue.Queue[int] = queue.Queue()
        self._pending: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, corpus_id: int) -> None:
        with self._lock:
            if corpus_id in self._pending:
                return
            self._pending.add(corpus_id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="deepcite-embedder", daemon=True)
                self._thread.start()
        self._queue.put(corpus_id)

    def join(self) -> None:
        """Wait until every submitted corpus is embedded (used by tests and shutdown)."""
        self._queue.join()

    def _run(self) -> None:
        while True:
            corpus_id = self._queue.get()
            with self._lock:
                self._pending.discard(corpus_id)
            try:
                close_old_connections()
                corpus = Corpus.objects.filter(pk=corpus_id).first()
                if corpus is not None:  # a daemon thread: the whole corpus, no slices
                    passage_embed_pending(corpus=corpus)
            except Exception:  # the thread must survive one bad corpus
                logger.exception("in-process embedding of corpus %s failed", corpus_id)
            finally:
                connection.close()
                self._queue.task_done()


in_process_worker = InProcessEmbeddingWorker()


def corpus_embedding_schedule(*, corpus_id: int) -> None:
    if get_embedder() is None:
        return
    if settings.CELERY_BROKER_URL:
        embed_corpus.delay(corpus_id)
    else:
        in_process_worker.submit(corpus_id)
