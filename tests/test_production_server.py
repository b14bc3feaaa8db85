"""The production settings served by a real gunicorn process, as the image runs them: static
files collected and served by WhiteNoise, /healthz, and the login page (its template found)."""

import contextlib
import json
import os
import re
import socket
import subprocess
import sys

import pytest
from django.conf import settings

from config.graphql.assets import ASSETS
from tests.production_server import get as _get
from tests.production_server import production_server as serve


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("production")
    with serve(workdir) as server:
        yield server.base, workdir / "static"


def test_production_server_answers_healthz(production_server):
    # Given gunicorn with the production settings
    base, _static = production_server
    # When /healthz is asked
    status, body, _headers = _get(base + "/healthz")
    # Then the database is reachable and no broker is configured
    assert status == 200
    assert json.loads(body) == {
        "status": "ok",
        "database": "ok",
        "broker": "not_configured",
        "research_queue": {"state": "ok", "waiting": 0, "oldest_seconds": 0},
    }


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


@pytest.fixture(scope="module")
def graphiql_server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("graphiql")
    with serve(workdir, GRAPHIQL="1") as server:
        yield server.base


def test_graphiql_loads_its_files_from_the_app_not_a_cdn(graphiql_server):
    # Given GraphiQL switched on in production, its files fetched at install (make install)
    # When a browser asks /graphql for HTML
    status, page, _headers = _get(graphiql_server + "/graphql", {"Accept": "text/html"})
    # Then every script and stylesheet is the app's own, and each is served
    assert status == 200
    assert b"cdn.jsdelivr.net" not in page
    files = re.findall(rb'(?:src|href)="(/static/[^"]+)"', page)
    assert sum(b"/static/graphiql/" in f for f in files) == sum(a.sri_attribute is not None for a in ASSETS)
    for path in files:
        status, body, _headers = _get(graphiql_server + path.decode())
        assert status == 200 and body, path


@pytest.mark.parametrize(
    ("key", "starts"),
    [
        ("x" * 60, False),  # one character repeated
        ("REPLACE_ME_with_50_random_chars", False),  # the example file's placeholder
        ("test-only-production-secret-key-0123456789abcdef", False),  # 48: check --deploy's W009
        ("test-only-production-secret-key-0123456789abcdefghijklmnop", True),
    ],
)
def test_production_settings_take_only_a_key_check_deploy_accepts(key, starts):
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": key},
    )
    assert (done.returncode == 0) is starts, done.stderr
    if not starts:
        assert "SECRET_KEY must be set to at least 50 random characters" in done.stderr


def _post_headers_only(base: str, path: str, length: str) -> bytes:
    """POST headers declaring a `length` body, then a few bytes of it: what the server answers."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Content-Type: multipart/form-data; boundary=b\r\n"
                f"Cookie: csrftoken={'a' * 32}\r\nContent-Length: {length}\r\n\r\n--b\r\n"
            ).encode()
        )
        answer = b""
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


def test_a_page_refuses_an_oversized_body_from_its_headers_before_reading_it(production_server):
    # Given a form post declaring 10 GB, with a CSRF cookie anyone can set, sending only its start
    base, _static = production_server
    # When it reaches a page
    answer = _post_headers_only(base, "/accounts/login/", "10000000000")
    # Then it is refused at once from its Content-Length, not read (spooled to disk) first
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"request_too_large" in answer
