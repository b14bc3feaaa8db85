"""The image, rebuilt without Docker: CI has no Docker engine, so this reproduces what
compose/Dockerfile builds and checks that it runs.

1. The build context: the repository filtered by compose/Dockerfile.dockerignore (Docker's
   rules: patterns relative to the context root, `**` for any depth, a directory's exclusion
   covering everything under it), copied to a temporary /app.
2. The Dockerfile's own instructions: its ENV applied, its RUN commands run in that /app with a
   fresh virtualenv first on PATH, in order. Two are stood in for, and said so: the torch wheel
   comes from the configured package index (the Dockerfile names PyTorch's CPU index, which this
   machine cannot reach) and `useradd` is skipped (it would change the host).
3. Run from there with the production settings, as compose runs it: `check --deploy` clean,
   `migrate` on a fresh PostgreSQL database, the image's CMD (gunicorn) serving /healthz 200,
   the login page and a collected static file, a research and an embedding worker answering
   `celery inspect ping`, and beat starting and writing its schedule.

A Dockerfile this script does not understand (another COPY, a new kind of instruction) fails
the check: update both together.

    .venv/bin/python compose/image_check.py [--keep]      # exits non-zero on any failure
"""

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "compose" / "Dockerfile"
DOCKERIGNORE = ROOT / "compose" / "Dockerfile.dockerignore"
POSTGRES = "postgres://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379"
EXPECTED_COPIES = [("pyproject.toml", "./"), (".", ".")]
START_SECONDS = 60


class CheckFailed(Exception):
    pass


# --- the build context --------------------------------------------------------------------------
def _segment_regex(segment: str) -> str:
    out, i = "", 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[":
            end = segment.find("]", i)
            if end == -1:
                raise CheckFailed(f"unsupported .dockerignore pattern segment {segment!r}")
            out += segment[i : end + 1]
            i = end
        else:
            out += re.escape(char)
        i += 1
    return out


def ignore_patterns(path: Path) -> list[re.Pattern]:
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            raise CheckFailed(f"exceptions ({line}) are not reproduced by this check; extend it first")
        parts = line.strip("/").split("/")
        regex = ""
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if part == "**":
                regex += ".*" if last else "(?:[^/]+/)*"
            else:
                regex += _segment_regex(part) + ("" if last else "/")
        patterns.append(re.compile(f"^{regex}$"))
    return patterns


def excluded(relative: str, patterns: list[re.Pattern]) -> bool:
    """Docker excludes a path when a pattern matches it or one of its parent directories."""
    pieces = relative.split("/")
    prefixes = ["/".join(pieces[: n + 1]) for n in range(len(pieces))]
    return any(p.match(prefix) for p in patterns for prefix in prefixes)


def build_context(destination: Path) -> list[str]:
    patterns = ignore_patterns(DOCKERIGNORE)
    copied = []
    for directory, subdirectories, files in os.walk(ROOT):
        base = Path(directory).relative_to(ROOT).as_posix()
        base = "" if base == "." else base + "/"
        subdirectories[:] = [d for d in subdirectories if not excluded(base + d, patterns)]
        for name in files:
            relative = base + name
            if excluded(relative, patterns):
                continue
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / relative, target)
            copied.append(relative)
    return copied


# --- the Dockerfile --------------------------------------------------------------------------
def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined, current = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        joined.append(current + stripped)
        current = ""
    result = []
    for line in joined:
        keyword, _, arguments = line.partition(" ")
        result.append((keyword.upper(), arguments.strip()))
    return result


def env_of(arguments: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(arguments))


# --- helpers -----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(command: str | list[str], *, cwd: Path, env: dict[str, str], what: str, timeout: int = 900) -> str:
    shell = isinstance(command, str)
    done = subprocess.run(
        command, cwd=cwd, env=env, shell=shell, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise CheckFailed(
            f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout + done.stderr


def background(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 (a local server)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_until(predicate, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise CheckFailed(f"{what}: the process exited ({process.returncode})")
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise CheckFailed(f"{what}: not within {START_SECONDS} s")


def say(message: str) -> None:
    print(f"image_check: {message}", flush=True)


# --- the check ---------------------------------------------------------------------------------
def check(work: Path) -> None:
    steps = instructions(DOCKERFILE)
    kinds = {kind for kind, _ in steps}
    unknown = kinds - {"FROM", "ENV", "RUN", "WORKDIR", "COPY", "USER", "EXPOSE", "CMD"}
    if unknown:
        raise CheckFailed(f"the Dockerfile uses {sorted(unknown)}, which this check does not reproduce")
    copies = [tuple(arguments.split()) for kind, arguments in steps if kind == "COPY"]
    if copies != EXPECTED_COPIES:
        raise CheckFailed(f"the Dockerfile copies {copies}; this check reproduces {EXPECTED_COPIES}")
    workdirs = [arguments for kind, arguments in steps if kind == "WORKDIR"]
    if workdirs != ["/app"]:
        raise CheckFailed(f"expected WORKDIR /app, found {workdirs}")

    app, venv = work / "app", work / "venv"
    app.mkdir()
    files = build_context(app)
    for needed in ("manage.py", "pyproject.toml", "config/settings/production.py", "templates/base.html"):
        if needed not in files:
            raise CheckFailed(f"the build context lacks {needed}")
    leaked = [
        f
        for f in files
        if f.startswith((".venv/", ".git/")) or f.endswith(".sqlite3") or f == "compose/deepcite.env"
    ]
    if leaked:
        raise CheckFailed(f"the build context holds what it must not: {leaked[:5]}")
    say(f"build context: {len(files)} files")

    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(work)),  # pip finds its index configuration there
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "LANG": "C.UTF-8",
    }
    # Pass on how this machine reaches its package index.
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "UV_")) and k not in env})
    user = None
    copied_all = False
    for kind, arguments in steps:
        if kind == "ENV":
            env.update(env_of(arguments))
        elif kind == "USER":
            user = arguments
        elif kind == "COPY":
            copied_all = copied_all or arguments.split() == [".", "."]
        elif kind == "RUN":
            if "download.pytorch.org" in arguments:
                say("RUN (torch): from the configured index instead of PyTorch's CPU index")
                arguments = "pip install --no-cache-dir torch==2.13.0"
            elif arguments.startswith("useradd"):
                say(f"RUN skipped (would change this host): {arguments}")
                continue
            # Before `COPY . .` only pyproject.toml is in /app: run those steps in a folder holding
            # just that file, so a step that needs more fails here as it would in the build.
            cwd = app if copied_all else _pyproject_only(work)
            say(f"RUN {arguments[:100]}")
            run(arguments, cwd=cwd, env=env, what=f"RUN {arguments[:60]}")
    if user != "deepcite":
        raise CheckFailed(f"the image should run as the unprivileged user deepcite, not {user!r}")
    cmd = next(arguments for kind, arguments in steps if kind == "CMD")

    database = f"deepcite_image_check_{os.getpid()}"
    port = free_port()
    runtime = {
        **env,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": f"{POSTGRES}/{database}",
        "CELERY_BROKER_URL": f"{REDIS}/10",
        "CACHE_URL": f"{REDIS}/9",
        "ALLOWED_HOSTS": "127.0.0.1",
        "EMBEDDING_BACKEND": "none",
        "WEB_CONCURRENCY": "1",
        # As an operator behind TLS sets them: check --deploy has nothing to say.
        "SECURE_HSTS_SECONDS": "3600",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
        "SECURE_HSTS_PRELOAD": "1",
        "SECURE_SSL_REDIRECT": "1",
        "GRAPHIQL": "1",
    }
    manage = ["python", "manage.py"]
    say(
        run(
            [*manage, "check", "--deploy", "--fail-level", "WARNING"],
            cwd=app,
            env=runtime,
            what="check --deploy",
        ).strip()
    )

    admin = [
        "psql",
        "-h",
        "127.0.0.1",
        "-U",
        "postgres",
        "-d",
        "postgres",
        "-v",
        "ON_ERROR_STOP=1",
        "-q",
        "-c",
    ]
    run([*admin, f"CREATE DATABASE {database}"], cwd=work, env=os.environ.copy(), what="create database")
    processes: list[subprocess.Popen] = []
    try:
        run([*manage, "migrate", "--noinput", "-v", "0"], cwd=app, env=runtime, what="migrate on PostgreSQL")
        say("migrate on PostgreSQL: ok")

        web_cmd = cmd.replace("0.0.0.0:8000", f"127.0.0.1:{port}")
        if web_cmd == cmd:
            raise CheckFailed(f"the CMD does not bind 0.0.0.0:8000 as expected: {cmd}")
        log = (work / "gunicorn.log").open("w")
        web = subprocess.Popen(
            web_cmd, shell=True, cwd=app, env=runtime, stdout=log, stderr=log, start_new_session=True
        )
        processes.append(web)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: fetch(base + "/healthz")[0] in (200, 503), "gunicorn", web)
        status, body = fetch(base + "/healthz")
        health = json.loads(body)
        expected = {"status": "ok", "database": "ok", "broker": "ok"}
        if (
            status != 200
            or {k: health.get(k) for k in expected} != expected
            or "research_queue" not in health
        ):
            raise CheckFailed(f"/healthz answered {status} {health}")
        https = {"X-Forwarded-Proto": "https"}
        status, page = fetch(base + "/accounts/login/", https)
        if status != 200 or b'name="password"' not in page:
            raise CheckFailed(f"the login page answered {status}")
        manifest = json.loads((app / "staticfiles" / "staticfiles.json").read_text())["paths"]
        status, css = fetch(f"{base}/static/{manifest['admin/css/base.css']}", https)
        if status != 200 or not css:
            raise CheckFailed(f"a collected static file answered {status}")
        status, page = fetch(base + "/graphql", {**https, "Accept": "text/html"})
        local = re.findall(rb'src="(/static/graphiql/graphiql\.min\.[0-9a-f]+\.js)"', page)
        if status != 200 or not local or b"cdn.jsdelivr.net" in page:
            raise CheckFailed(f"GraphiQL answered {status} without its own files (fetched at build time)")
        status, script = fetch(base + local[0].decode(), https)
        if status != 200 or len(script) < 100_000:
            raise CheckFailed(f"GraphiQL's script answered {status}")
        say("gunicorn (the image's CMD): /healthz, login page, static files, GraphiQL's own files")

        for queue in ("research", "embedding"):
            worker = background(
                ["celery", "-A", "config", "worker", "--queues", queue, "--hostname", f"{queue}@%h",
                 "--pool", "threads", "--concurrency", "2", "--loglevel", "WARNING"],
                app, runtime,
            )  # fmt: skip
            processes.append(worker)
            ping = [
                "celery",
                "-A",
                "config",
                "inspect",
                "ping",
                "--destination",
                f"{queue}@{socket.gethostname()}",
            ]
            wait_until(
                lambda ping=ping: (
                    subprocess.run(
                        [*ping, "--timeout", "5"], cwd=app, env=runtime, capture_output=True
                    ).returncode
                    == 0
                ),
                f"the {queue} worker answering inspect ping",
                worker,
            )
            say(f"celery worker ({queue} queue): answers inspect ping")

        schedule = work / "celerybeat-schedule"
        beat = background(
            ["celery", "-A", "config", "beat", "--schedule", str(schedule), "--loglevel", "WARNING"],
            app,
            runtime,
        )
        processes.append(beat)
        wait_until(lambda: any(work.glob("celerybeat-schedule*")), "beat writing its schedule", beat)
        time.sleep(2)
        if beat.poll() is not None:
            raise CheckFailed(f"beat exited ({beat.returncode})")
        say("celery beat: running, schedule written")
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        subprocess.run([*admin, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"], check=False)


def _pyproject_only(work: Path) -> Path:
    folder = work / "pyproject-only"
    folder.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder for a look")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deepcite-image-"))
    started = time.monotonic()
    try:
        check(work)
    except CheckFailed as failure:
        print(f"image_check: FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        if options.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    say(f"passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
