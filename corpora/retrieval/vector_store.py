"""Where the dense leg of a search finds its vectors: one interface, two backends, chosen by
SEARCH_VECTOR_BACKEND.

- "memory": each process holds a per-corpus float16 matrix (corpora.retrieval.dense); any
  database, nothing to install, and the fastest for the corpora one process can hold.
- "pgvector": the vectors in PostgreSQL, an HNSW index per model, searched in SQL
  (corpora.retrieval.pgvector); nothing held per process, for large corpora and many processes.
- "auto" (the default): pgvector where the database is PostgreSQL and its vector table exists
  (the extension was available when migrating, or `manage.py vector_store_sync` made it),
  memory otherwise.

Searches (corpora.selectors) ask vector_store().dense(...) for a corpus's DenseVectors and use
only its methods; the embedding writes call vectors_save(), which mirrors the vectors into the
database table wherever that exists, whichever backend searches, so that a deployment can
switch backends by the setting alone."""

import functools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from corpora.exceptions import VectorBackendUnavailable
from corpora.retrieval import pgvector
from corpora.retrieval.dense import dense_indexes

MEMORY = "memory"
PGVECTOR = "pgvector"
AUTO = "auto"
BACKENDS = (AUTO, MEMORY, PGVECTOR)  # corpora.checks keeps a copy (it must not import torch)


class DenseVectors(Protocol):
    """One corpus's vectors of one model, as of one index version."""

    @property
    def is_empty(self) -> bool: ...

    def prepare(self, vector: np.ndarray) -> Any:
        """What the rankings below take for a query vector; runs on the thread that computed
        the vector (memory: every passage's score; pgvector: the vector as SQL takes it)."""

    def top(
        self, prepared: Any, *, limit: int, document_ids: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """[(passage_id, cosine similarity)], best first, at most `limit`, only passages of
        `document_ids` when given."""

    def by_document(
        self, prepared: Any, *, document_ids: Sequence[int], scope: Sequence[int] | None
    ) -> tuple[dict[int, list[tuple[int, float]]], float | None]:
        """({document id: [(passage id, similarity)] for every embedded passage of it}, the
        best similarity over `scope`'s documents (None: the corpus), None without vectors)."""


class MemoryVectorStore:
    name = MEMORY

    def dense(self, *, corpus_id: int, model: str, version: int) -> DenseVectors:
        return dense_indexes.get(corpus_id=corpus_id, model=model, version=version)


class PgvectorVectorStore:
    name = PGVECTOR

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self.alias = alias

    def dense(self, *, corpus_id: int, model: str, version: int) -> DenseVectors:
        # No cache keyed by `version`: one indexed row tells whether the corpus has vectors.
        return pgvector.index_for(corpus_id=corpus_id, model=model, alias=self.alias)


VectorStore = MemoryVectorStore | PgvectorVectorStore


def vector_store() -> VectorStore:
    """The configured backend (the database is asked once per process and setting)."""
    return _store_for(settings.SEARCH_VECTOR_BACKEND, _database_key())


def _database_key() -> tuple[str, str]:
    db = connections[DEFAULT_DB_ALIAS]
    return db.vendor, str(db.settings_dict.get("NAME"))


@functools.lru_cache(maxsize=8)
def _store_for(backend: str, database: tuple[str, str]) -> VectorStore:
    backend = (backend or AUTO).strip().lower()
    if backend == MEMORY:
        return MemoryVectorStore()
    if backend not in BACKENDS:
        raise VectorBackendUnavailable(
            f"unknown SEARCH_VECTOR_BACKEND {backend!r}; use one of {', '.join(BACKENDS)}"
        )
    if pgvector.installed(connections[DEFAULT_DB_ALIAS]):
        return PgvectorVectorStore()
    if backend == PGVECTOR:
        raise VectorBackendUnavailable(pgvector.unavailable_reason(connections[DEFAULT_DB_ALIAS]))
    return MemoryVectorStore()


def forget() -> None:
    """Ask the database again on the next search (after the table was created or dropped)."""
    _store_for.cache_clear()


def vectors_save(*, model: str, ids: Sequence[int], matrix: np.ndarray) -> None:
    """The embedding writes' hook, inside their transaction: mirrors the vectors into the
    database's vector table where it exists (a no-op on SQLite and without pgvector)."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor == "postgresql" and pgvector.installed(connection):
        pgvector.save(connection, model=model, ids=ids, matrix=matrix)
