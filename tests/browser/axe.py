"""axe-core, the accessibility checker, loaded into a page under test: its npm package fetched
once from the registry, the tarball checked against the integrity npm publishes for it, and
kept in assets/ (not committed). Nothing of it runs in the app."""

import base64
import hashlib
import io
import os
import tarfile
import urllib.request
from pathlib import Path

import pytest

VERSION = "4.14.1"
INTEGRITY = "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
REGISTRY = os.environ.get("NPM_CONFIG_REGISTRY") or "https://registry.npmjs.org"
CACHED = Path(__file__).resolve().parents[2] / "assets" / "test" / f"axe-core-{VERSION}.min.js"
# What a page must not have: violations axe rates as blocking or serious for users.
BLOCKING = {"critical", "serious"}


def axe_source() -> str:
    if not CACHED.is_file():
        url = f"{REGISTRY.rstrip('/')}/axe-core/-/axe-core-{VERSION}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 -- an https registry
                tarball = response.read()
        except OSError as error:
            pytest.fail(f"cannot download axe-core from {url}: {error}")
        digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
        assert digest == INTEGRITY, f"axe-core {VERSION} from {url} is not the published package"
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            member = archive.extractfile("package/axe.min.js")
            assert member is not None
            CACHED.parent.mkdir(parents=True, exist_ok=True)
            partial = CACHED.with_suffix(".part")
            partial.write_bytes(member.read())
            partial.replace(CACHED)
    return CACHED.read_text()


def serious_violations(page) -> list[str]:
    """Run axe on the page as it is; its critical and serious violations, one line each."""
    page.evaluate(axe_source())
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]
