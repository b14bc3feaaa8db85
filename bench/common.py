"""Pieces every benchmark script uses: a fresh PostgreSQL database, interleaved timings and
percentiles. The scripts
run as `python bench/<name>.py`, so this module is imported as `common`."""

import os
import time
from collections.abc import Callable, Sequence


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


def interleaved_times(
    fns: dict[str, Callable], queries: Sequence, *, warmup: Sequence
) -> dict[str, list[float]]:
    """Milliseconds per query per function, after each function ran the `warmup` queries. Each
    query runs every function back to back, in a rotating order, so that the machine's drift
    hits all of them alike and their ratios hold."""
    names = list(fns)
    for query in warmup:
        for name in names:
            fns[name](query)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i, query in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            fns[name](query)
            times[name].append((time.perf_counter() - started) * 1000)
    return times
