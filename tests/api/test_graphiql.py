"""GraphiQL with no internet: its files fetched from an npm registry (a real local HTTP server
here) and checked against graphene-django's hashes, then served by the app; the page falls back
to the CDN without them and is off unless GRAPHIQL (default: DEBUG) is on."""

import hashlib
import http.server
import io
import tarfile
import threading
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client, override_settings

from config.graphql import assets
from config.graphql import view as graphql_view

ROOT = Path(__file__).resolve().parents[2]
FETCHED = ROOT / "assets" / "graphiql"


def fetched(name: str) -> bytes:
    path = FETCHED / name
    assert path.is_file(), "GraphiQL's files are fetched by `make install` (python -m config.graphql.assets)"
    return path.read_bytes()


def tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, content in files.items():
            info = tarfile.TarInfo(f"package/{path}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def registry_tarballs(tamper: str | None = None, drop: str | None = None) -> dict[str, bytes]:
    """URL path -> tarball, as the npm registry lays them out, built from the fetched files."""
    pins = assets.graphene_pins()
    packages: dict[str, dict[str, bytes]] = {}
    for asset in assets.ASSETS:
        url = assets.tarball_url("", asset.package, pins[asset.version_attribute])
        content = fetched(asset.name)
        if asset.name == tamper:
            content += b"\n/* changed */"
        if asset.name != drop:
            packages.setdefault(url, {})[asset.path] = content
    return {url: tarball(files) for url, files in packages.items()}


@pytest.fixture
def registry():
    """A local npm registry serving whatever tarballs the test puts in `served`."""
    served: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = served.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served
    server.shutdown()
    server.server_close()


def test_the_fetched_files_are_the_ones_graphene_django_pins():
    pins = assets.graphene_pins()
    checked = [a for a in assets.ASSETS if a.sri_attribute is not None]
    assert len(checked) == 8  # every file the page loads
    for asset in checked:
        assert assets.sri(fetched(asset.name)) == pins[asset.sri_attribute], asset.name


def test_fetching_from_a_registry_writes_every_checked_file(registry, tmp_path):
    url, served = registry
    served |= registry_tarballs()
    written = assets.fetch(registry=url, destination=tmp_path)
    assert sorted(p.name for p in written) == sorted([assets.STAMP, *(a.name for a in assets.ASSETS)])
    assert "graphiql@2" in (tmp_path / assets.STAMP).read_text()
    for path in written[:-1]:
        assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(fetched(path.name)).digest()
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tamper": "graphiql.min.js"}, "its hash is not graphene-django's"),
        ({"drop": "graphiql.min.css"}, "has no graphiql.min.css"),
    ],
)
def test_a_changed_or_missing_file_is_refused_and_nothing_is_written(registry, tmp_path, change, message):
    url, served = registry
    served |= registry_tarballs(**change)
    with pytest.raises(assets.AssetError, match=message):
        assets.fetch(registry=url, destination=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_unreachable_registry_is_a_clear_failure(registry, tmp_path, capsys):
    url, _served = registry  # serves nothing: every tarball is a 404
    assert assets.main(["--registry", url, "--dest", str(tmp_path)]) == 1
    assert "cannot download" in capsys.readouterr().err
    assert assets.main(["--registry", "file:///etc", "--dest", str(tmp_path)]) == 1
    assert "not an HTTP registry" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.fixture
def graphiql_page(db):
    graphql_view._graphiql_local.cache_clear()
    yield lambda: Client().get("/graphql", HTTP_ACCEPT="text/html")
    graphql_view._graphiql_local.cache_clear()


@override_settings(GRAPHIQL=True)
def test_the_page_uses_the_apps_own_files(graphiql_page):
    response = graphiql_page()
    page = response.content.decode()
    assert response.status_code == 200
    assert "cdn.jsdelivr.net" not in page and "cdn.jsdelivr.net" not in response["Content-Security-Policy"]
    assert "<script>" not in page and "<style" not in page  # the policy forbids inline ones
    for asset in assets.ASSETS:
        assert finders.find(f"graphiql/{asset.name}")
        if asset.sri_attribute is not None:
            assert f"/static/graphiql/{asset.name}" in page
    pins = assets.graphene_pins()
    assert f'integrity="{pins["graphiql_sri"]}"' in page


@override_settings(GRAPHIQL=True, STATICFILES_DIRS=[])
def test_without_the_files_the_page_falls_back_to_the_cdn(graphiql_page):
    finders.get_finder.cache_clear()
    try:
        response = graphiql_page()
    finally:
        finders.get_finder.cache_clear()
    page = response.content.decode()
    assert "https://cdn.jsdelivr.net/npm/graphiql@" in page
    policy = dict(d.strip().split(" ", 1) for d in response["Content-Security-Policy"].split(";"))
    assert (
        "https://cdn.jsdelivr.net" in policy["script-src"]
        and "https://cdn.jsdelivr.net" in policy["style-src"]
    )
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert "/static/graphiql/" not in page


@override_settings(GRAPHIQL=False)
def test_graphiql_off_answers_a_browser_with_json(graphiql_page):
    response = graphiql_page()
    assert response["Content-Type"].startswith("application/json")
    assert b"GraphiQL" not in response.content
