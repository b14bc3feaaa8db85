"""The production settings served by a real gunicorn process, as the image runs them: static
files collected and served by WhiteNoise, /healthz, and the login page (its template found)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
START_TIMEOUT_SECONDS = 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (a local test server)
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("production")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "test-only-production-secret-key-0123456789abcdef",
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "STATIC_ROOT": str(workdir / "static"),
        "CELERY_BROKER_URL": "",
        "EMBEDDING_BACKEND": "none",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
    }
    manage = [sys.executable, "manage.py"]
    for command in (["collectstatic", "--noinput", "-v", "0"], ["migrate", "--noinput", "-v", "0"]):
        subprocess.run([*manage, *command], cwd=ROOT, env=env, check=True, timeout=300)
    port = _free_port()
    server = subprocess.Popen(
        [str(GUNICORN), "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            _get(base + "/healthz")
            break
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"gunicorn exited: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
    yield base, workdir / "static"
    server.terminate()
    server.wait(timeout=10)


def test_production_server_answers_healthz(production_server):
    # Given gunicorn with the production settings
    base, _static = production_server
    # When /healthz is asked
    status, body, _headers = _get(base + "/healthz")
    # Then the database is reachable and no broker is configured
    assert status == 200
    assert json.loads(body) == {"status": "ok", "database": "ok", "broker": "not_configured"}


def test_production_server_serves_collected_static_files(production_server):
    # Given the admin's stylesheet collected under its hashed name
    base, static = production_server
    manifest = json.loads((static / "staticfiles.json").read_text())["paths"]
    hashed = manifest["admin/css/base.css"]
    # When it is fetched from the app process
    status, body, headers = _get(f"{base}/static/{hashed}")
    # Then WhiteNoise serves it, cacheable for good
    assert status == 200
    assert body == (static / hashed).read_bytes()
    assert "immutable" in headers.get("Cache-Control", "")


def test_production_server_renders_the_login_page(production_server):
    base, _static = production_server
    status, body, _headers = _get(base + "/accounts/login/")
    assert status == 200
    assert b'name="password"' in body
