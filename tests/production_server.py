"""A real gunicorn process serving the production settings, as the image runs it: its own
database (SQLite file unless a DATABASE_URL is given), static files collected, migrations run."""

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
START_TIMEOUT_SECONDS = 30


@dataclass
class Server:
    base: str
    port: int
    env: dict[str, str]
    process: subprocess.Popen

    def manage(self, *command: str, **kwargs) -> subprocess.CompletedProcess:
        """Run a management command against the server's database and settings."""
        return subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env={**self.env, **kwargs.pop("env", {})},
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
            **kwargs,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 (a local test server)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


@contextlib.contextmanager
def production_server(workdir: Path, **settings: str) -> Iterator[Server]:
    """Start gunicorn on a free port; on exit stop it. `settings` override the environment."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "test-only-production-secret-key-0123456789abcdefghijklmnop",
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "STATIC_ROOT": str(workdir / "static"),
        "CELERY_BROKER_URL": "",
        "EMBEDDING_BACKEND": "none",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        **settings,
    }
    for command in (["collectstatic", "--noinput", "-v", "0"], ["migrate", "--noinput", "-v", "0"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, timeout=300)
    port = _free_port()
    log = (workdir / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        # One worker process, with the threads the image gives each (compose/Dockerfile's CMD).
        [
            str(GUNICORN),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Server(base=f"http://127.0.0.1:{port}", port=port, env=env, process=process)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                get(server.base + "/healthz")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = (workdir / "gunicorn.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"gunicorn did not start: {tail}") from None
                time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
