"""Dense ranking over the vectors stored with the passages. Each process keeps a per-corpus
matrix in memory, reloaded when the corpus's index_version moves; a dot product ranks it.
The same code serves SQLite and PostgreSQL (no vector extension is needed)."""

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from threadpoolctl import threadpool_limits

from corpora.embedding import vectors_from_bytes
from corpora.models import Passage
from corpora.retrieval.lru import ByteBoundedLRU

DEFAULT_CACHE_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class DenseIndex:
    corpus_id: int
    version: int
    model: str
    passage_ids: np.ndarray
    document_ids: np.ndarray
    matrix: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + self.passage_ids.nbytes + self.document_ids.nbytes

    def rank(
        self, vector: np.ndarray, *, limit: int, document_ids: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        if limit <= 0 or not len(self.passage_ids):
            return []
        # BLAS on one thread: 0.09 ms over 9,136 x 384 where einsum took 0.5 ms. With its
        # default threads OpenBLAS split a product this small across threads that had gone
        # to sleep during the query embedding, and afterwards they spun on the other core,
        # slowing the next searches' embedding (hybrid p50 22 ms instead of 15).
        _single_threaded_blas()
        scores = self.matrix @ np.asarray(vector, dtype=np.float32)
        if document_ids is not None:
            allowed = np.isin(self.document_ids, np.asarray(list(document_ids), dtype=np.int64))
            scores = np.where(allowed, scores, -np.inf)
        limit = min(limit, len(scores))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[np.isfinite(scores[top])]
        return list(zip(self.passage_ids[top].tolist(), scores[top].tolist(), strict=True))


@functools.cache
def _single_threaded_blas() -> None:
    """Once per process: numpy's BLAS runs on the calling thread (see DenseIndex.rank)."""
    threadpool_limits(1, user_api="blas")


class DenseIndexCache:
    """Per-corpus matrices, least recently used evicted past max_bytes; safe to share between
    threads."""

    def __init__(self, max_bytes: int) -> None:
        self._items: ByteBoundedLRU[DenseIndex] = ByteBoundedLRU(max_bytes, size=lambda i: i.nbytes)

    def get(self, *, corpus_id: int, model: str, version: int) -> DenseIndex:
        """The corpus's matrix as of `version` (its current index_version)."""
        cached = self._items.get((corpus_id, model))
        if cached is not None and cached.version == version:
            return cached
        index = _load(corpus_id, model, version)
        self._items.put((corpus_id, model), index)
        return index

    def known_empty(self, *, corpus_id: int, model: str) -> bool:
        """Whether the corpus had no vectors when last loaded, at whatever version: a search
        then need not embed its query before the current version says otherwise."""
        cached = self._items.get((corpus_id, model))
        return cached is not None and not len(cached.passage_ids)

    def clear(self) -> None:
        self._items.clear()


def _load(corpus_id: int, model: str, version: int) -> DenseIndex:
    rows = list(
        Passage.objects.filter(corpus_id=corpus_id, embedding_model=model)
        .exclude(embedding=None)
        .order_by("id")
        .values_list("id", "document_id", "embedding")
    )
    return DenseIndex(
        corpus_id=corpus_id,
        version=version,
        model=model,
        passage_ids=np.array([r[0] for r in rows], dtype=np.int64),
        document_ids=np.array([r[1] for r in rows], dtype=np.int64),
        matrix=vectors_from_bytes([r[2] for r in rows]),
    )


dense_indexes = DenseIndexCache(getattr(settings, "DENSE_INDEX_CACHE_BYTES", DEFAULT_CACHE_BYTES))
