"""The beat's periodic jobs for a process without a broker (`make serve`, a first try on
SQLite): run on the back of the web process's requests, each at most once per its interval.

Without it, nothing resumed what a stopped server left behind: a research run that was going
stayed RUNNING for good (refusing new runs on its corpus with research_already_in_progress,
resume as not a stopped run, and cancel, CANCELLING forever), and an upload's passages left
unembedded stayed so. With a broker, Celery beat runs these jobs (tasks.schedule) and this does
nothing."""

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from research.services import reports_reap_stalled
from tasks.embeddings import corpora_pending_embedding, in_process_worker
from tasks.schedule import EMBED_SWEEP_SECONDS, REAP_STALLED_SECONDS

logger = logging.getLogger(__name__)


def embed_pending_in_process() -> int:
    """The beat's embed sweep, queued on this process's embedding thread."""
    corpus_ids = corpora_pending_embedding()
    for corpus_id in corpus_ids:
        in_process_worker.submit(corpus_id)
    return len(corpus_ids)


class InProcessBeat:
    def __init__(self, jobs: dict[str, tuple[float, Callable[[], object]]]) -> None:
        self._jobs = jobs
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}

    def tick(self) -> dict[str, object]:
        """Runs each job that is due (none with a broker); {job: its result} of those run."""
        if settings.CELERY_BROKER_URL or not settings.INPROCESS_BEAT:
            return {}
        now = time.monotonic()
        due = []
        with self._lock:
            for name, (interval, _job) in self._jobs.items():
                last = self._last.get(name)
                if last is None or now - last >= interval:
                    self._last[name] = now
                    due.append(name)
        ran: dict[str, object] = {}
        for name in due:
            try:
                ran[name] = self._jobs[name][1]()
            except DatabaseError:  # not migrated yet, or the database is away: tried again later
                logger.exception("in-process %s failed", name)
        return ran

    def reset(self) -> None:
        with self._lock:
            self._last.clear()


beat = InProcessBeat(
    {
        "reap_stalled": (REAP_STALLED_SECONDS, reports_reap_stalled),
        "embed_pending": (EMBED_SWEEP_SECONDS, embed_pending_in_process),
    }
)


class InProcessBeatMiddleware:
    """Ticks the in-process beat after each response is made (no broker only)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        beat.tick()
        return response
