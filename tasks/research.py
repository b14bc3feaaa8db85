"""Research runs in the background. With a broker, the Celery task `run_research`; without one,
the in-process pool, so `runserver` and the CLI work with no services at all. Both carry their
runs on the process's run loop (research.runloop)."""

import asyncio
import logging
import threading
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from research.engine.run import report_fail_unstarted, report_run_async, report_salvage_on_timeout
from research.retention import reports_purge
from research.runloop import database, run_loop
from research.services import reports_reap_stalled

logger = logging.getLogger(__name__)

# Celery's own limits are a backstop behind the run's deadline (which salvages cleanly): they
# are given per call from the report's budget, never fixed when this module is imported.
SOFT_LIMIT_GRACE_SECONDS = 60
HARD_LIMIT_GRACE_SECONDS = 120


@shared_task(name="research.run_research", acks_late=True, ignore_result=True)
def run_research(report_id: int) -> None:
    # The worker thread waits here while the run loop carries the run with the others.
    run = run_loop.submit(report_run_async, report_id=report_id)
    try:
        run.result()
    except SoftTimeLimitExceeded:  # a prefork worker's soft limit: stop the run, keep its findings
        run.cancel()
        report_salvage_on_timeout(report_id=report_id)


class InProcessResearchPool:
    """Research runs started by this process when there is no broker, at most
    RESEARCH_INPROCESS_WORKERS at once."""

    def __init__(self) -> None:
        self._futures: set[Future] = set()
        self._lock = threading.Lock()
        self._slots: asyncio.Semaphore | None = None

    def submit(self, report_id: int) -> Future:
        future = run_loop.submit(self._run, report_id)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(self._discard)
        return future

    def _discard(self, future: Future) -> None:
        with self._lock:
            self._futures.discard(future)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every run submitted so far; False if some are still running at the timeout."""
        with self._lock:
            pending = list(self._futures)
        _done, not_done = futures_wait(pending, timeout=timeout)
        return not not_done

    async def _run(self, report_id: int) -> None:
        if self._slots is None:  # made on the run loop, which is the only one using it
            self._slots = asyncio.Semaphore(settings.RESEARCH_INPROCESS_WORKERS)
        async with self._slots:
            try:
                await report_run_async(report_id=report_id)
            except Exception as exc:  # the run could not even start or finalize: end it if we can
                logger.exception("in-process research run %s failed", report_id)
                await database(
                    report_fail_unstarted, report_id=report_id, error=f"{type(exc).__name__}: {exc}"
                )


in_process_pool = InProcessResearchPool()


def research_enqueue(*, report_id: int, time_limit_seconds: int, delay_seconds: float = 0) -> None:
    if settings.CELERY_BROKER_URL:
        run_research.apply_async(
            args=[report_id],
            countdown=delay_seconds or None,
            soft_time_limit=time_limit_seconds + SOFT_LIMIT_GRACE_SECONDS,
            time_limit=time_limit_seconds + HARD_LIMIT_GRACE_SECONDS,
        )
    elif delay_seconds:
        timer = threading.Timer(delay_seconds, in_process_pool.submit, args=[report_id])
        timer.daemon = True
        timer.start()
    else:
        in_process_pool.submit(report_id)


@shared_task(name="research.reap_stalled", ignore_result=True)
def reap_stalled_reports() -> dict[str, int]:
    """Beat job (every minute): resume or end research runs whose worker stopped."""
    return reports_reap_stalled()


@shared_task(name="research.purge_expired", ignore_result=True)
def purge_expired_reports() -> dict[str, int]:
    """Beat job (daily): delete what REPORT_RETENTION_DAYS lets go; nothing when it is 0."""
    days = settings.REPORT_RETENTION_DAYS
    if days <= 0:
        return {"reports": 0, "report_notifications": 0, "read_notifications": 0}
    result = reports_purge(days=days)
    return {
        "reports": len(result.reports),
        "report_notifications": result.report_notifications,
        "read_notifications": result.read_notifications,
    }
