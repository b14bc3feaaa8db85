"""Background embedding of new passages. With a broker, a Celery task; without one, a single
in-process worker thread, so ingestion never waits for the model either way."""

import logging
import queue
import threading

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connection

from corpora.embedding import get_embedder
from corpora.models import Corpus, Passage
from corpora.services import passage_embed_pending

logger = logging.getLogger(__name__)


@shared_task(name="corpora.embed_corpus", acks_late=True, ignore_result=True)
def embed_corpus(corpus_id: int) -> int:
    corpus = Corpus.objects.filter(pk=corpus_id).first()
    if corpus is None:
        return 0
    return passage_embed_pending(corpus=corpus)


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
                embed_corpus(corpus_id)
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
