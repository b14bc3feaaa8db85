"""The durability benchmark still runs end to end: one SIGKILL-mid-run trial through real worker
processes, Redis and PostgreSQL (the full 20 trials come from bench/durability.py itself)."""

import pytest
import redis
from django.db import connection

from tests.bench.runner import run_bench

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

    result = run_bench(
        "durability.py", "--trials", "1", "--postgres", server, "--redis", BROKER_URL, out=out, timeout=180
    )
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
