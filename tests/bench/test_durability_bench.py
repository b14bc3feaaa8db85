"""The durability benchmark still runs end to end: one SIGKILL-mid-run trial through real worker
processes, Redis and PostgreSQL (the full 20 trials come from bench/durability.py itself)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
BROKER_URL = "redis://127.0.0.1:6379/15"


def test_durability_bench_runs_one_trial(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: worker processes cannot share a test SQLite database")
    try:
        redis.Redis.from_url(BROKER_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis at 127.0.0.1:6379")
    db = connection.settings_dict
    server = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/postgres"
    out = tmp_path / "durability.json"

    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "durability.py"),
            "--trials",
            "1",
            "--postgres",
            server,
            "--redis",
            BROKER_URL,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )

    assert completed.returncode == 0, completed.stderr[-2000:]
    [line] = completed.stdout.strip().splitlines()
    result = json.loads(line)
    assert result == json.loads(out.read_text())
    assert result["benchmark"] == "durability"
    assert result["trials"] == 1
    [trial] = result["per_trial"]
    assert set(trial) >= {
        "kill_after_findings",
        "findings_before_kill",
        "findings_final",
        "retry_count",
        "status",
        "seconds",
    }
    assert trial["status_after_kill"] == "RUNNING"
    assert trial["status"] == "COMPLETED", trial.get("error")
    assert trial["retry_count"] == 1
    assert result["completed"] == 1
    assert result["findings_lost"] == 0
    assert result["met"] is True
