"""Corpora's index_version as searches read it, without a database round trip per search on
PostgreSQL.

Every search first reads its corpus's index_version: the in-memory indexes are keyed by it.
On PostgreSQL that statement cost 0.6 ms of a hybrid search's ~1.5 ms beyond its query
embedding (client, server and round trip, on cold caches right after the model ran). So each
process LISTENs on a channel that corpus_bump_index_version NOTIFYs in the bump's own
transaction, and keeps the versions it read until a notification for the corpus arrives (a
few milliseconds after the bump commits, to every process). Should the listener lose its
connection, nothing is kept until it listens again; and a version is kept at most
`max_age` seconds, a bound on staleness should notifications stop arriving unseen (a
transaction-mode PgBouncer drops LISTEN: switch this off there,
SEARCH_INDEX_VERSION_LISTEN=0).

SQLite has no notifications across processes; there every search reads (0.1 ms)."""

import logging
import os
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

logger = logging.getLogger(__name__)

CHANNEL = "deepcite_index_version"
APPLICATION_NAME = "deepcite-index-versions"
DEFAULT_MAX_AGE_SECONDS = 5.0
# How often the listener wakes to check its connection and whether it should stop.
POLL_SECONDS = 2.0
RECONNECT_SECONDS = 1.0


class IndexVersions:
    def __init__(self, *, max_age: float = DEFAULT_MAX_AGE_SECONDS) -> None:
        self.max_age = max_age
        self._lock = threading.Lock()
        # corpus id -> (version, monotonic time it was read)
        self._known: dict[int, tuple[int, float]] = {}
        # Moves on every notification, forget() and listener loss: a version read while it
        # moved may be older than the change that moved it, and is not kept.
        self._generation = 0
        self._listening = False
        self._pid = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, corpus_id: int, read: Callable[[], int]) -> int:
        """The corpus's version: kept, or `read()` (and kept while the listener listens)."""
        if not self._enabled():
            return read()
        known = self._known.get(corpus_id)
        if known is not None and time.monotonic() - known[1] < self.max_age:
            return known[0]
        generation = self._generation
        version = read()
        with self._lock:
            if self._listening and self._generation == generation:
                self._known[corpus_id] = (version, time.monotonic())
        return version

    def forget(self, corpus_id: int) -> None:
        """This process moved the corpus's version (the notification follows the commit)."""
        with self._lock:
            self._drop(corpus_id)

    def clear(self) -> None:
        with self._lock:
            self._drop()

    def listening(self) -> bool:
        return self._listening and self._pid == os.getpid()

    def stop(self) -> None:
        """Stops the listener (tests; a process's listener otherwise lives as long as it)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(POLL_SECONDS + 5)
        with self._lock:
            self._thread, self._listening, self._pid = None, False, 0
            self._drop()
        self._stop = threading.Event()

    def _enabled(self) -> bool:
        if not getattr(settings, "SEARCH_INDEX_VERSION_LISTEN", True):
            return False
        if connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
            return False
        if self._pid != os.getpid():
            self._start()
        return self._listening

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            # A forked child inherits what its parent kept but not the parent's listener.
            self._pid = os.getpid()
            self._listening = False
            self._drop()
            db = connections[DEFAULT_DB_ALIAS]
            # Named, so that an operator sees it in pg_stat_activity for what it is.
            params = {**db.get_connection_params(), "application_name": APPLICATION_NAME}
            self._thread = threading.Thread(
                target=self._listen,
                args=(db, params, self._stop),
                name=APPLICATION_NAME,
                daemon=True,
            )
            self._thread.start()

    def _listen(self, db, params: dict, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                with db.get_new_connection(params) as connection:
                    connection.autocommit = True
                    connection.execute(f"LISTEN {CHANNEL}")
                    with self._lock:
                        self._listening = True
                    while not stop.is_set():
                        for notification in connection.notifies(timeout=POLL_SECONDS):
                            self._notified(notification.payload)
                        connection.execute("SELECT 1")  # a dead connection raises here
            except Exception:
                logger.warning("index version listener lost its connection; retrying", exc_info=True)
            finally:
                with self._lock:
                    self._listening = False
                    self._drop()
            stop.wait(RECONNECT_SECONDS)

    def _notified(self, payload: str) -> None:
        with self._lock:
            self._drop(int(payload) if payload.isdigit() else None)

    def _drop(self, corpus_id: int | None = None) -> None:
        """With the lock held: forget one corpus's version, or all (None); a read in flight
        when this ran is not kept either."""
        self._generation += 1
        if corpus_id is None:
            self._known.clear()
        else:
            self._known.pop(corpus_id, None)


index_versions = IndexVersions(
    max_age=getattr(settings, "SEARCH_INDEX_VERSION_MAX_AGE_SECONDS", DEFAULT_MAX_AGE_SECONDS)
)
