"""GraphiQL's browser files, fetched from the npm registry at install / image build time (never
committed) into assets/graphiql/, from where the app serves them as static files: GraphiQL then
works with no internet. The packages and versions are graphene-django's own, and each file must
match the Subresource Integrity hash graphene-django declares for it, so a tampered or changed
file is refused.

    python -m config.graphql.assets [--registry URL] [--dest DIR]     # exits 1 when it cannot

Without the files, the GraphiQL page falls back to graphene-django's CDN links.
"""

import argparse
import ast
import base64
import hashlib
import importlib.util
import io
import os
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESTINATION = ROOT / "assets" / "graphiql"
REGISTRY = "https://registry.npmjs.org"
TIMEOUT_SECONDS = 60
STAMP = "VERSIONS"


@dataclass(frozen=True)
class Asset:
    package: str
    version_attribute: str  # graphene_django.views.GraphQLView's attribute naming the version
    path: str  # inside the package's tarball, under package/
    sri_attribute: str | None  # None: a source map, which no page loads and no hash pins
    name: str  # the file name under assets/graphiql/


EXPLORER = "@graphiql/plugin-explorer"
ASSETS = (
    Asset("whatwg-fetch", "whatwg_fetch_version", "dist/fetch.umd.js", "whatwg_fetch_sri", "fetch.umd.js"),
    Asset("react", "react_version", "umd/react.production.min.js", "react_sri", "react.production.min.js"),
    Asset(
        "react-dom", "react_version", "umd/react-dom.production.min.js", "react_dom_sri",
        "react-dom.production.min.js",
    ),
    Asset("graphiql", "graphiql_version", "graphiql.min.js", "graphiql_sri", "graphiql.min.js"),
    Asset("graphiql", "graphiql_version", "graphiql.min.css", "graphiql_css_sri", "graphiql.min.css"),
    # The two files above name their source maps, which collectstatic's manifest must find.
    Asset("graphiql", "graphiql_version", "graphiql.min.js.map", None, "graphiql.min.js.map"),
    Asset("graphiql", "graphiql_version", "graphiql.min.css.map", None, "graphiql.min.css.map"),
    Asset(
        "graphql-ws", "subscriptions_transport_ws_version", "umd/graphql-ws.min.js",
        "subscriptions_transport_ws_sri", "graphql-ws.min.js",
    ),
    Asset(
        EXPLORER, "graphiql_plugin_explorer_version", "dist/graphiql-plugin-explorer.umd.js",
        "graphiql_plugin_explorer_sri", "graphiql-plugin-explorer.umd.js",
    ),
    Asset(
        EXPLORER, "graphiql_plugin_explorer_version", "dist/style.css",
        "graphiql_plugin_explorer_css_sri", "plugin-explorer.css",
    ),
)  # fmt: skip


class AssetError(Exception):
    pass


def graphene_pins() -> dict[str, str]:
    """GraphQLView's version and SRI attributes, read from graphene-django's source (importing
    it needs configured Django settings, which a build step does not have)."""
    spec = importlib.util.find_spec("graphene_django")
    if spec is None or spec.origin is None:
        raise AssetError("graphene-django is not installed")
    tree = ast.parse((Path(spec.origin).parent / "views.py").read_text())
    view = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GraphQLView")
    pins = {}
    for node in view.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, str):
                pins[node.targets[0].id] = value
    return pins


def sri(content: bytes) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(content).digest()).decode()


def tarball_url(registry: str, package: str, version: str) -> str:
    basename = package.rsplit("/", 1)[-1]
    return f"{registry.rstrip('/')}/{package}/-/{basename}-{version}.tgz"


def fetch(*, registry: str = REGISTRY, destination: Path = DESTINATION) -> list[Path]:
    """Download, check and write every asset; nothing is written unless all of them check out."""
    pins = graphene_pins()
    tarballs: dict[str, bytes] = {}
    files: dict[str, bytes] = {}
    for asset in ASSETS:
        version = pins[asset.version_attribute]
        url = tarball_url(registry, asset.package, version)
        if url not in tarballs:
            if not url.startswith(("https://", "http://")):
                raise AssetError(f"not an HTTP registry: {registry}")
            try:
                with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (checked above)
                    tarballs[url] = response.read()
            except OSError as error:
                raise AssetError(f"cannot download {url}: {error}") from error
        content = _member(tarballs[url], f"package/{asset.path}")
        if content is None:
            raise AssetError(f"{asset.package}@{version} has no {asset.path}")
        if asset.sri_attribute is not None and sri(content) != pins[asset.sri_attribute]:
            raise AssetError(f"{asset.package}@{version} {asset.path}: its hash is not graphene-django's")
        files[asset.name] = content
    destination.mkdir(parents=True, exist_ok=True)
    # Written last: names what was fetched; `make install` fetches again while it is missing.
    files[STAMP] = "".join(
        f"{asset.package}@{pins[asset.version_attribute]} {asset.path}\n" for asset in ASSETS
    ).encode()
    written = []
    for name, content in files.items():
        target = destination / name
        partial = target.with_suffix(target.suffix + ".part")
        partial.write_bytes(content)
        os.replace(partial, target)
        written.append(target)
    return written


def _member(tarball: bytes, path: str) -> bytes | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            member = archive.extractfile(path)
            return None if member is None else member.read()
    except (KeyError, tarfile.TarError, EOFError, OSError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", default=os.environ.get("NPM_CONFIG_REGISTRY") or REGISTRY)
    parser.add_argument("--dest", type=Path, default=DESTINATION)
    options = parser.parse_args(argv)
    try:
        fetch(registry=options.registry, destination=options.dest)
    except AssetError as error:
        sys.stderr.write(f"graphiql assets: {error}\n")
        return 1
    checked = sum(asset.sri_attribute is not None for asset in ASSETS)
    sys.stdout.write(
        f"graphiql assets: {len(ASSETS)} files ({checked} checked against graphene-django's hashes)"
        f" written to {options.dest}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
