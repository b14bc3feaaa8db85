"""Pieces every benchmark script uses: a fresh PostgreSQL database and percentiles. The scripts
run as `python bench/<name>.py`, so this module is imported as `common`."""

import os
from collections.abc import Callable


def temporary_postgres(server_url: str, prefix: str) -> tuple[str, Callable[[], None]]:
    """Create an empty database on the server; return its URL and a function that drops it."""
    import psycopg

    name = f"{prefix}_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    base = server_url.rsplit("/", 1)[0]

    def drop() -> None:
        from django.db import connections

        from corpora.retrieval.versions import index_versions

        index_versions.stop()  # its LISTEN connection would be cut by the drop, noisily
        connections.close_all()
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return f"{base}/{name}", drop


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
