"""The `deepcite` command as its own package (cli/pyproject.toml): it imports nothing of the
server, installs into a clean virtualenv with rich alone, and that install researches a live
server's corpus."""

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from accounts.services import api_token_create
from corpora.services import corpus_create
from tasks.research import in_process_pool
from tests.factories import ingest_samples

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "cli"
SERVER_ONLY = {"django", "torch", "celery", "graphene", "pydantic_ai", "sentence_transformers", "numpy"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_cli_imports_only_the_standard_library_rich_and_itself():
    imported = set().union(*(_imports(p) for p in CLI.glob("*.py")))
    outside = imported - set(sys.stdlib_module_names) - {"rich", "cli"}
    assert not outside, f"the CLI package would need {sorted(outside)}: declare them in cli/pyproject.toml"


def test_the_cli_package_matches_the_servers_command():
    server = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((CLI / "pyproject.toml").read_text())["project"]
    assert client["version"] == server["version"]
    assert client["scripts"] == {"deepcite": server["scripts"]["deepcite"]}
    assert client["dependencies"] == ["rich>=13"]
    assert any(d.startswith("rich") for d in server["dependencies"])


@pytest.fixture(scope="module")
def cli_venv(tmp_path_factory) -> Path:
    """A clean virtualenv with the CLI package installed from a copy of cli/ (pip builds in the
    source folder; the checkout stays clean)."""
    work = tmp_path_factory.mktemp("cli-package")
    source = work / "cli"
    shutil.copytree(CLI, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(source)],
        check=True,
        timeout=300,
    )
    return venv


def test_the_installed_package_brings_no_server_dependency(cli_venv):
    listed = subprocess.run(
        [str(cli_venv / "bin" / "pip"), "list", "--format", "json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {p["name"].lower().replace("-", "_") for p in json.loads(listed.stdout)}
    assert "deepcite_cli" in installed and "rich" in installed
    assert not installed & SERVER_ONLY, installed & SERVER_ONLY
    assert not installed & {"deepcite", "sentence_transformers", "graphene_django", "pydantic_ai_slim"}


@pytest.mark.django_db(transaction=True)
def test_the_installed_command_researches_a_live_servers_corpus(cli_venv, live_server, user):
    corpus = corpus_create(creator=user, name="Samples")
    ingest_samples(corpus)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPCITE_", "PYTHON", "DJANGO"))}
    env |= {"DEEPCITE_URL": live_server.url, "DEEPCITE_TOKEN": api_token_create(user=user, name="cli").secret}
    command = str(cli_venv / "bin" / "deepcite")

    def deepcite(*args: str) -> subprocess.CompletedProcess:
        # Run from a folder with no checkout in it: only the installed package can answer.
        return subprocess.run(
            [command, *args], capture_output=True, text=True, env=env, cwd=cli_venv, timeout=120, check=False
        )

    listed = deepcite("corpora")
    assert listed.returncode == 0, listed.stderr
    assert "Samples" in listed.stdout
    done = deepcite(
        "research", "--corpus", str(corpus.pk), "--json", "What limits the liability of the supplier?"
    )
    assert in_process_pool.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "COMPLETED" and report["citations"]
