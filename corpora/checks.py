"""System checks for the retrieval settings: a SEARCH_VECTOR_BACKEND the database cannot serve
stops `manage.py check --database default` and `migrate` (compose's migrate service) with a
clear message, rather than failing searches later."""

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.db import DEFAULT_DB_ALIAS, connections

from corpora.constants import PGVECTOR_EF_SEARCH_MAX
from corpora.retrieval import pgvector

# corpora.retrieval.vector_store's names, without importing it (and torch) at every startup.
BACKENDS = ("auto", "memory", "pgvector")
PGVECTOR = "pgvector"


@register()
def vector_backend_setting(app_configs, **kwargs) -> list[Error]:
    backend = (settings.SEARCH_VECTOR_BACKEND or "").strip().lower()
    if backend not in BACKENDS:
        return [
            Error(
                f"SEARCH_VECTOR_BACKEND={settings.SEARCH_VECTOR_BACKEND!r} is not a vector backend",
                hint=f"use one of {', '.join(BACKENDS)}",
                id="corpora.E001",
            )
        ]
    connection = connections[DEFAULT_DB_ALIAS]
    if backend == PGVECTOR and connection.vendor != "postgresql":
        return [_unavailable(pgvector.unavailable_reason(connection))]
    return []


# pgvector's bounds for an HNSW index's build parameters (hnsw.h).
HNSW_M_RANGE = (2, 100)
HNSW_EF_CONSTRUCTION_MAX = 1000


@register()
def hnsw_parameters(app_configs, **kwargs) -> list[Error]:
    """An index with parameters pgvector refuses would fail the first embedding batch."""
    m, ef = settings.SEARCH_PGVECTOR_HNSW_M, settings.SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION
    ef_search = settings.SEARCH_PGVECTOR_EF_SEARCH
    low, high = HNSW_M_RANGE
    errors = []
    if not (low <= m <= high and 2 * m <= ef <= HNSW_EF_CONSTRUCTION_MAX):
        errors.append(
            Error(
                f"SEARCH_PGVECTOR_HNSW_M={m}, SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION={ef}: pgvector "
                f"takes m from {low} to {high} and ef_construction from 2 * m to {HNSW_EF_CONSTRUCTION_MAX}",
                hint="the defaults are m = 32, ef_construction = 128",
                id="corpora.E003",
            )
        )
    if not 1 <= ef_search <= PGVECTOR_EF_SEARCH_MAX:
        errors.append(
            Error(
                f"SEARCH_PGVECTOR_EF_SEARCH={ef_search}: pgvector takes hnsw.ef_search from 1 to "
                f"{PGVECTOR_EF_SEARCH_MAX}",
                hint="the default is 800",
                id="corpora.E003",
            )
        )
    return errors


@register(Tags.database)
def vector_backend_database(app_configs, databases=None, **kwargs) -> list[Error]:
    """Needs the database: run by `check --database default` and by `migrate`. Before the
    first migration the extension need only be available (migration 0003 creates it)."""
    if not databases or DEFAULT_DB_ALIAS not in databases:
        return []
    if (settings.SEARCH_VECTOR_BACKEND or "").strip().lower() != PGVECTOR:
        return []
    connection = connections[DEFAULT_DB_ALIAS]
    # Another database is vector_backend_setting's error already.
    if connection.vendor != "postgresql" or pgvector.extension_available(connection):
        return []
    return [_unavailable(pgvector.unavailable_reason(connection))]


def _unavailable(message: str) -> Error:
    return Error(
        message,
        hint="use PostgreSQL with the pgvector extension (the compose stack's image has it), "
        "or set SEARCH_VECTOR_BACKEND=auto or memory",
        id="corpora.E002",
    )
