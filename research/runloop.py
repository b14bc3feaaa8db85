"""The process's research run loop. One event-loop thread carries every research run this process
executes (the Celery task's threads, or the in-process pool when there is no broker), and the
runs' database work goes to a few threads with a connection each, a run keeping to one. A run
waits on its model, not the CPU, so one process carries many: N runs are N tasks on one loop
sharing one HTTP connection pool and RESEARCH_DATABASE_THREADS database connections, not N
loops, 3N threads and N connections.

A run driven from a synchronous caller instead (report_run: tests, shells) runs on a loop of its
own with its database work on the caller's thread, inside the caller's connection and
transaction; `database()` picks the right place for either."""

import asyncio
import contextvars
import functools
import itertools
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# Set inside each task the run loop carries: the database thread its database work goes to.
_database_threads: contextvars.ContextVar[ThreadPoolExecutor | None] = contextvars.ContextVar(
    "deepcite_database_threads", default=None
)


async def database(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Run blocking database work from a research run's coroutine, off its event loop."""
    executor = _database_threads.get()
    if executor is None:
        return await sync_to_async(fn, thread_sensitive=True)(*args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, _in_database_thread, fn, args, kwargs)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


def _in_database_thread(fn: Callable[..., R], args: tuple, kwargs: dict) -> R:
    # As Django does at the start of each request: a connection that broke or outlived
    # CONN_MAX_AGE is replaced before it is used. CONN_MAX_AGE=0 (SQLite's here) means "close
    # at the end of each request"; these threads serve calls, not requests, and keep theirs:
    # reconnecting per call cost SQLite ~10 ms per research step.
    for wrapper in connections.all(initialized_only=True):
        if wrapper.settings_dict["CONN_MAX_AGE"] == 0:
            wrapper.close_at = None
        wrapper.close_if_unusable_or_obsolete()
    return fn(*args, **kwargs)


def on_run_loop() -> bool:
    """Whether the calling coroutine is one of the run loop's tasks."""
    return _database_threads.get() is not None


class RunLoop:
    """Started on first use, once per process (a forked child starts its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # One thread each, so that a run's database calls share one connection (and, on
        # SQLite, its page cache, which another connection's write would invalidate).
        self._database: list[ThreadPoolExecutor] = []
        self._runs_started = itertools.count()

    def submit(
        self, coroutine_function: Callable[P, Awaitable[R]], /, *args: P.args, **kwargs: P.kwargs
    ) -> "Future[R]":
        """Start `coroutine_function(*args, **kwargs)` on the loop; its result as a Future."""
        loop, database_threads = self._started()
        # Runs take the database threads in turn; each keeps its thread to the end.
        thread = database_threads[next(self._runs_started) % len(database_threads)]
        # The task copies the caller's context (run_coroutine_threadsafe schedules it with one).
        return asyncio.run_coroutine_threadsafe(_carried(thread, coroutine_function, args, kwargs), loop)

    def run(self, coroutine_function: Callable[P, Awaitable[R]], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run it on the loop and wait for its result in the calling thread."""
        return self.submit(coroutine_function, *args, **kwargs).result()

    def close_database_connections(self) -> None:
        """End the database threads, each closing its connection first (a test session does
        this before it drops its test database). Runs started later get new threads."""
        with self._lock:
            executors, self._database = self._database, []
        for executor in executors:
            executor.submit(connections.close_all).result()
            executor.shutdown(wait=True)

    def _started(self) -> tuple[asyncio.AbstractEventLoop, list[ThreadPoolExecutor]]:
        with self._lock:
            if not self._database or self._pid != os.getpid():
                self._database = [
                    ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"deepcite-research-db-{i}")
                    for i in range(max(1, settings.RESEARCH_DATABASE_THREADS))
                ]
            if self._pid != os.getpid() or self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._serve, args=(self._loop, ready), name="deepcite-research-loop", daemon=True
                )
                thread.start()
                ready.wait()
                self._pid = os.getpid()
            return self._loop, self._database

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:  # only if someone stops the loop; the thread is a daemon otherwise
            logger.warning("the research run loop stopped")


async def _carried(
    database_threads: ThreadPoolExecutor, coroutine_function: Callable[..., Awaitable[R]], args, kwargs
) -> R:
    _database_threads.set(database_threads)  # this task's own context
    return await coroutine_function(*args, **kwargs)


run_loop = RunLoop()
