"""The dense leg searched inside PostgreSQL with pgvector: no process holds a corpus's matrix
(768 MB per million passages in float16), and a search reads the HNSW graph around its query.

Design. The vectors live in a side table, not in a column of corpora_passage:

    corpora_passagevector(passage_id PK -> corpora_passage ON DELETE CASCADE,
                          corpus_id, document_id, model, embedding halfvec)

- It exists only where the extension does (migration 0003 and `manage.py vector_store_sync`
  create it in SQL), so corpora_passage and its migrations stay the same on SQLite and on a
  PostgreSQL without pgvector (Django's state knows the plain columns only, as PassageVector,
  so that a flush truncates the table with corpora_passage). Passage.embedding (float32
  bytes) stays the source of truth that the in-memory backend reads and the table is rebuilt
  from; embedding batches write both in one transaction (vector_store.vectors_save).
- Deleting passages (a document, a corpus) deletes their vectors by the foreign key's cascade,
  whoever deletes them. corpus_id and document_id are copied so that a search filters on this
  table alone (b-tree indexes on both).
- `embedding` is a `halfvec` without a dimension, and each model gets its own partial HNSW
  index over `embedding::halfvec(<dim>)` with halfvec_cosine_ops, `WHERE model = '<model>'`:
  pgvector's documented way to index vectors of several dimensions in one column. The bundled
  MiniLM's 384 dimensions, an OpenAI-compatible endpoint's 1536 and a test server's 64 live side
  by side, and a change of model needs no migration; a search names its model and dimension,
  so its ORDER BY matches its model's index. halfvec halves the index and the table (776 bytes
  a row at 384 dimensions) at float16's precision, the same as the in-memory matrix's.
- A search sets `hnsw.iterative_scan = relaxed_order` (pgvector 0.8) for its transaction, so
  that a corpus or document filter keeps the index walking until k rows pass it, and re-sorts
  the relaxed order; `hnsw.ef_search` is at least the rows asked for. Should the walk still
  stop short (`hnsw.max_scan_tuples`, or an older pgvector), the same query runs exactly
  (index scans off: the b-tree indexes and the filter do the work, and a short result means a
  small scope). Per-document scores (passage_search_by_document) are computed exactly for the
  candidate documents' passages, as the in-memory backend computes them.
- SEARCH_PGVECTOR_HNSW=false leaves the HNSW indexes out: every search is exact in SQL (fine
  for small corpora, and for a pgvector build whose index code the CPU cannot run)."""

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from corpora.constants import PGVECTOR_EF_SEARCH_MAX, VECTOR_SYNC_BATCH
from corpora.embedding import vectors_from_bytes

logger = logging.getLogger(__name__)

TABLE = "corpora_passagevector"
EXTENSION = "vector"

INSTALL = [
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        passage_id bigint PRIMARY KEY REFERENCES corpora_passage (id) ON DELETE CASCADE,
        corpus_id bigint NOT NULL,
        document_id bigint NOT NULL,
        model varchar(200) NOT NULL,
        embedding halfvec NOT NULL
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_corpus_model ON {TABLE} (corpus_id, model)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_document ON {TABLE} (document_id)",
]
UNINSTALL = [f"DROP TABLE IF EXISTS {TABLE}"]  # the extension stays: others may use it

# Serialises the creation of a model's HNSW index between transactions (pg_advisory_xact_lock).
_INDEX_LOCK_KEY = 0x6465_6570_7665_63  # "deepvec"


# --- Schema ---------------------------------------------------------------------------------
def extension_available(connection: BaseDatabaseWrapper) -> bool:
    """The server can CREATE EXTENSION vector (or has)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", [EXTENSION])
        return cursor.fetchone() is not None


def installed(connection: BaseDatabaseWrapper) -> bool:
    """The vector table exists (and so the extension)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        return bool(cursor.fetchone()[0])


def install(connection: BaseDatabaseWrapper) -> bool:
    """Create the extension and the table where the server has pgvector; False (and nothing
    changed) where it has not, or where this role may not create the extension."""
    if not extension_available(connection):
        return False
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
    except Exception:
        logger.warning(
            "pgvector is available but CREATE EXTENSION %s failed (a superuser can run it); "
            "dense search stays in memory",
            EXTENSION,
            exc_info=True,
        )
        return False
    with connection.cursor() as cursor:
        for statement in INSTALL:
            cursor.execute(statement)
    return True


def unavailable_reason(connection: BaseDatabaseWrapper) -> str:
    """Why SEARCH_VECTOR_BACKEND=pgvector cannot be served here."""
    if connection.vendor != "postgresql":
        return f"SEARCH_VECTOR_BACKEND=pgvector needs PostgreSQL; the database is {connection.vendor}"
    if not extension_available(connection):
        return "SEARCH_VECTOR_BACKEND=pgvector: this PostgreSQL server has no pgvector extension"
    return (
        "SEARCH_VECTOR_BACKEND=pgvector: the vector table is missing; run `manage.py migrate` "
        "(or `manage.py vector_store_sync`)"
    )


def migrate_install(apps, schema_editor) -> None:
    """Migration 0003: the table where pgvector is available, filled from the embeddings
    already stored; nothing on SQLite or on a PostgreSQL without it."""
    connection = schema_editor.connection
    if install(connection):
        sync(connection, passage_model=apps.get_model("corpora", "Passage"))


def migrate_uninstall(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in UNINSTALL:
                cursor.execute(statement)


def hnsw_index_name(model: str, dims: int) -> str:
    digest = hashlib.sha256(model.encode()).hexdigest()[:12]
    return f"{TABLE}_hnsw_{digest}_{dims}"


def ensure_hnsw_index(connection: BaseDatabaseWrapper, *, model: str, dims: int) -> None:
    """The model's HNSW index, created if missing (in the caller's transaction)."""
    if not settings.SEARCH_PGVECTOR_HNSW:
        return
    name = hnsw_index_name(model, dims)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        if cursor.fetchone()[0]:
            return
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_INDEX_LOCK_KEY])
        # The model name is a literal of the index predicate (a partial index cannot take a
        # parameter): quoted by the driver, and the dimension is an int.
        predicate = connection.ops.compose_sql("model = %s", [model])
        m = int(settings.SEARCH_PGVECTOR_HNSW_M)
        ef_construction = int(settings.SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION)
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {TABLE} "
            f"USING hnsw ((embedding::halfvec({int(dims)})) halfvec_cosine_ops) "
            f"WITH (m = {m}, ef_construction = {ef_construction}) WHERE {predicate}"
        )


def hnsw_indexes(connection: BaseDatabaseWrapper) -> list[str]:
    """The names of the vector table's HNSW indexes, whatever their model."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s "
            "ORDER BY indexname",
            [TABLE],
        )
        return [row[0] for row in cursor.fetchall() if row[0].startswith(f"{TABLE}_hnsw_")]


def drop_hnsw_indexes(connection: BaseDatabaseWrapper, *, keep: Iterable[str] = ()) -> list[str]:
    """Drop the HNSW indexes not named in `keep` (a model no passage uses any more, or all of
    them before a rebuild with other parameters); the names dropped."""
    keep = set(keep)
    dropped = [name for name in hnsw_indexes(connection) if name not in keep]
    with connection.cursor() as cursor:
        for name in dropped:
            cursor.execute(f"DROP INDEX IF EXISTS {connection.ops.quote_name(name)}")
    return dropped


# --- Writes ---------------------------------------------------------------------------------
def halfvec_literal(vector: np.ndarray) -> str:
    """pgvector's text form. Five significant digits name every float16 value exactly, so the
    stored halfvec equals the float16 row of the in-memory matrix."""
    values = np.asarray(vector, dtype=np.float16).astype(np.float64).tolist()
    return "[" + ",".join(["%.5g"] * len(values)) % tuple(values) + "]"


def save(connection: BaseDatabaseWrapper, *, model: str, ids: Sequence[int], matrix: np.ndarray) -> None:
    """Store the passages' unit vectors (rows of `matrix`) of `model`, replacing what those
    passages had; meant for the transaction that writes Passage.embedding."""
    if not len(ids):
        return
    ensure_hnsw_index(connection, model=model, dims=matrix.shape[1])
    _insert(connection, model=model, ids=ids, matrix=matrix)


def _insert(connection: BaseDatabaseWrapper, *, model: str, ids: Sequence[int], matrix: np.ndarray) -> int:
    """Upsert the rows; one that is already as given is left alone (no new row version, no
    index entry). The rows written."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} AS t (passage_id, corpus_id, document_id, model, embedding) "  # noqa: S608
            "SELECT p.id, p.corpus_id, p.document_id, %s, v.embedding "
            "FROM unnest(%s::bigint[], %s::halfvec[]) AS v(passage_id, embedding) "
            "JOIN corpora_passage p ON p.id = v.passage_id "
            "ON CONFLICT (passage_id) DO UPDATE SET corpus_id = EXCLUDED.corpus_id, "
            "document_id = EXCLUDED.document_id, model = EXCLUDED.model, embedding = EXCLUDED.embedding "
            "WHERE (t.corpus_id, t.document_id, t.model, t.embedding) IS DISTINCT FROM "
            "(EXCLUDED.corpus_id, EXCLUDED.document_id, EXCLUDED.model, EXCLUDED.embedding)",
            [model, [int(i) for i in ids], [halfvec_literal(row) for row in matrix]],
        )
        return cursor.rowcount


@dataclass(frozen=True)
class SyncResult:
    written: int
    removed: int
    indexes_dropped: tuple[str, ...] = ()


def sync(
    connection: BaseDatabaseWrapper,
    *,
    corpus_ids: Iterable[int] | None = None,
    passage_model=None,
    reindex: bool = False,
) -> SyncResult:
    """Make the table hold exactly the stored embeddings (Passage.embedding) of the given
    corpora (None: all): rows for passages with no vector or another model's go, and every
    stored vector the table lacks or holds otherwise is written (`written`: those rows; a
    second run writes none). Batches of VECTOR_SYNC_BATCH, each in its own transaction when
    the caller has none; a model's HNSW index is built after its vectors are in (faster than
    growing it row by row). A sync of every corpus drops the HNSW indexes of models no row
    uses any more (after a change of embedding model); `reindex` drops them all first, so
    that they are built again with SEARCH_PGVECTOR_HNSW_M / _EF_CONSTRUCTION.
    `passage_model`: the migration's historical Passage."""
    if passage_model is None:
        from corpora.models import Passage as passage_model

    corpus_ids = None if corpus_ids is None else [int(c) for c in corpus_ids]
    scope_sql, scope_params = (
        ("", []) if corpus_ids is None else (" AND v.corpus_id = ANY(%s::bigint[])", [corpus_ids])
    )
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {TABLE} v USING corpora_passage p WHERE p.id = v.passage_id "  # noqa: S608
            f"AND (p.embedding IS NULL OR p.embedding_model <> v.model){scope_sql}",
            scope_params,
        )
        removed = cursor.rowcount
    dropped: list[str] = []
    if reindex:
        with transaction.atomic(using=connection.alias):
            dropped += drop_hnsw_indexes(connection)
    passages = (
        passage_model.objects.using(connection.alias).exclude(embedding=None).exclude(embedding_model="")
    )
    if corpus_ids is not None:
        passages = passages.filter(corpus_id__in=corpus_ids)
    written, last_id, dims_of = 0, 0, {}
    while True:
        batch = list(
            passages.filter(pk__gt=last_id)
            .order_by("pk")
            .values_list("pk", "embedding_model", "embedding")[:VECTOR_SYNC_BATCH]
        )
        if not batch:
            break
        by_model: dict[str, list[tuple[int, bytes]]] = {}
        for pk, model, blob in batch:
            by_model.setdefault(model, []).append((pk, blob))
        with transaction.atomic(using=connection.alias):
            for model, rows in by_model.items():
                matrix = vectors_from_bytes([blob for _, blob in rows])
                dims_of[model] = matrix.shape[1]
                written += _insert(connection, model=model, ids=[pk for pk, _ in rows], matrix=matrix)
        last_id = batch[-1][0]
    if corpus_ids is None or reindex:
        # Every model that has rows keeps (or gets) its index, not only those written now.
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT DISTINCT model FROM {TABLE}")  # noqa: S608
            for (model,) in cursor.fetchall():
                if model not in dims_of:
                    cursor.execute(
                        f"SELECT vector_dims(embedding) FROM {TABLE} WHERE model = %s LIMIT 1",  # noqa: S608
                        [model],
                    )
                    dims_of[model] = int(cursor.fetchone()[0])
    if corpus_ids is None:
        # Committed on their own: a DROP INDEX locks the table against searches until commit.
        with transaction.atomic(using=connection.alias):
            in_use = {hnsw_index_name(model, dims) for model, dims in dims_of.items()}
            dropped += drop_hnsw_indexes(connection, keep=in_use)
    with transaction.atomic(using=connection.alias):
        for model, dims in dims_of.items():
            ensure_hnsw_index(connection, model=model, dims=dims)
    return SyncResult(written=written, removed=removed, indexes_dropped=tuple(dropped))


# --- Searches -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PgvectorIndex:
    """One corpus's vectors of one model in the database (corpora.retrieval.vector_store's
    DenseVectors). `dims` is None while the corpus has none."""

    corpus_id: int
    model: str
    dims: int | None
    alias: str = DEFAULT_DB_ALIAS

    @property
    def is_empty(self) -> bool:
        return self.dims is None

    def prepare(self, vector: np.ndarray) -> str:
        """The query vector as SQL takes it (formatted on the thread that embedded it)."""
        return halfvec_literal(vector)

    def top(
        self, prepared: str, *, limit: int, document_ids: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """[(passage_id, cosine similarity)], best first, ties by passage id."""
        if limit <= 0 or self.dims is None:
            return []
        if document_ids is not None:
            document_ids = [int(d) for d in document_ids]
            if not document_ids:
                return []
        connection = connections[self.alias]
        hnsw = settings.SEARCH_PGVECTOR_HNSW
        with transaction.atomic(using=self.alias), connection.cursor() as cursor:
            if hnsw:
                ef_search = min(PGVECTOR_EF_SEARCH_MAX, max(settings.SEARCH_PGVECTOR_EF_SEARCH, limit))
                cursor.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true), "
                    "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                    [str(ef_search)],
                )
            rows = self._nearest(cursor, prepared, limit=limit, document_ids=document_ids)
            if hnsw and len(rows) < limit:
                # The walk stopped short of k rows that pass the filter: ask exactly.
                cursor.execute("SELECT set_config('enable_indexscan', 'off', true)")
                rows = self._nearest(cursor, prepared, limit=limit, document_ids=document_ids)
        return [(int(pid), float(score)) for pid, score in rows]

    def nearest_sql(self, *, filtered: bool) -> str:
        """The statement top() runs (its parameters: vector, model, corpus, [documents], limit).
        Relaxed order comes back re-sorted; `+ 0` keeps PostgreSQL 17+ from taking the outer
        sort for the inner one."""
        cast = f"halfvec({int(self.dims)})"
        documents = " AND document_id = ANY(%s::bigint[])" if filtered else ""
        return (
            "WITH nearest AS MATERIALIZED ("  # noqa: S608
            f"SELECT passage_id, embedding::{cast} <=> %s::{cast} AS distance FROM {TABLE} "
            f"WHERE model = %s AND corpus_id = %s{documents} ORDER BY distance LIMIT %s) "
            "SELECT passage_id, 1 - distance FROM nearest ORDER BY distance + 0, passage_id"
        )

    def nearest_params(self, prepared: str, *, limit: int, document_ids: list[int] | None) -> list:
        documents = [] if document_ids is None else [document_ids]
        return [prepared, self.model, self.corpus_id, *documents, limit]

    def _nearest(self, cursor, prepared: str, *, limit: int, document_ids: list[int] | None) -> list:
        cursor.execute(
            self.nearest_sql(filtered=document_ids is not None),
            self.nearest_params(prepared, limit=limit, document_ids=document_ids),
        )
        return cursor.fetchall()

    def by_document(
        self, prepared: str, *, document_ids: Sequence[int], scope: Sequence[int] | None
    ) -> tuple[dict[int, list[tuple[int, float]]], float | None]:
        """({document id: [(passage id, similarity)] for every passage of it}, the best
        similarity over `scope` (None: the corpus)); exact for the documents' passages."""
        if self.dims is None:
            return {}, None
        wanted = [int(d) for d in document_ids]
        cast = f"halfvec({int(self.dims)})"
        grouped: dict[int, list[tuple[int, float]]] = {}
        with connections[self.alias].cursor() as cursor:
            cursor.execute(
                f"SELECT passage_id, document_id, 1 - (embedding::{cast} <=> %s::{cast}) "  # noqa: S608
                f"FROM {TABLE} WHERE model = %s AND corpus_id = %s AND document_id = ANY(%s::bigint[]) "
                "ORDER BY passage_id",
                [prepared, self.model, self.corpus_id, wanted],
            )
            for pid, document, score in cursor.fetchall():
                grouped.setdefault(int(document), []).append((int(pid), float(score)))
        in_scope = set(wanted) if scope is None else set(wanted) & {int(d) for d in scope}
        known = [s for d in in_scope for _, s in grouped.get(d, [])]
        best_elsewhere = self.top(prepared, limit=1, document_ids=scope)
        candidates = known + [score for _, score in best_elsewhere]
        return grouped, (max(candidates) if candidates else None)


def index_for(*, corpus_id: int, model: str, alias: str = DEFAULT_DB_ALIAS) -> PgvectorIndex:
    """The corpus's vectors of `model`, with their dimension read from one row."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            f"SELECT vector_dims(embedding) FROM {TABLE} WHERE corpus_id = %s AND model = %s LIMIT 1",  # noqa: S608
            [corpus_id, model],
        )
        row = cursor.fetchone()
    return PgvectorIndex(corpus_id=corpus_id, model=model, dims=int(row[0]) if row else None, alias=alias)
