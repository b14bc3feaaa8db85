"""Real Celery worker processes for integration tests, started as the README starts them."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def worker_env(broker_url: str, **extra: str) -> dict[str, str]:
    db = connection.settings_dict
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": broker_url,
        "EMBEDDING_BACKEND": "none",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def start_worker(
    env: dict[str, str],
    *,
    pool: str = "solo",
    concurrency: int = 1,
    log: Path | None = None,
    queues: str | None = None,
) -> subprocess.Popen:
    """A worker process (of `queues`, comma-separated, or all); its log goes to `log` if given
    (else $DEEPCITE_WORKER_LOG or nowhere)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            *(["--queues", queues] if queues else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log or os.environ.get("DEEPCITE_WORKER_LOG", os.devnull), "a"),
        start_new_session=True,
    )


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for(predicate, *, timeout: float, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


@contextlib.contextmanager
def broker_for_this_process(url: str):
    """Send this process's tasks to `url` for a while. Celery caches its producer connections,
    so they are dropped on the way in and out, or messages would go to the previous broker."""
    from config.celery_app import app

    def reset() -> None:
        # Not force_close_all(): kombu shares pools per URL process-wide, and a closed one stays
        # registered. Dropping the app's references is what Celery itself does after a fork.
        app._pool = None
        app.amqp._producer_pool = None

    previous = app.conf.broker_url
    app.conf.broker_url = url
    reset()
    try:
        yield
    finally:
        app.conf.broker_url = previous
        reset()
