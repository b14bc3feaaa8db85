"""The first-try settings (config.settings.local, what `make serve` runs) as a new user gets
them: DEBUG on, and with it GraphiQL at /graphql, as the README says."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setting(name: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "GRAPHIQL")}
    code = f"import config.settings.local as s; print(s.{name})"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**environment, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_graphiql_is_on_with_the_first_try_settings_debug():
    assert _setting("DEBUG") == "True"
    assert _setting("GRAPHIQL") == "True"


def test_graphiql_follows_debug_or_its_own_variable():
    assert _setting("GRAPHIQL", DEBUG="0") == "False"
    assert _setting("GRAPHIQL", DEBUG="0", GRAPHIQL="1") == "True"
    assert _setting("GRAPHIQL", GRAPHIQL="0") == "False"
