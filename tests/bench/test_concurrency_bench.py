"""The concurrency benchmark still runs end to end through a real worker process and prints the
JSON it promises (two runs with a fast model; the figures come from full runs, never tests)."""

import pytest
import redis
from django.db import connection

from tests.bench.runner import run_bench

BROKER_URL = "redis://127.0.0.1:6379/14"
RESULT_FIELDS = {
    "n",
    "wall_seconds",
    "throughput_runs_per_second",
    "ideal_runs_per_second",
    "ratio",
    "rss_idle_mb",
    "rss_peak_mb",
    "rss_per_run_mb",
    "completed",
    "cpu_bound_ratio_ceiling",
    "worker_database_connections_peak",
}


def _redis_or_skip() -> None:
    try:
        redis.Redis.from_url(BROKER_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis at 127.0.0.1:6379: the benchmark runs a real Celery worker")


def _database_args() -> list[str]:
    """The benchmark's own fresh database on the suite's kind of database."""
    if connection.vendor != "postgresql":
        return ["--database", "sqlite"]
    db = connection.settings_dict
    server = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/postgres"
    return ["--database", "postgres", "--postgres", server]


def test_concurrency_bench_prints_one_json_object(tmp_path):
    _redis_or_skip()
    out = tmp_path / "concurrency.json"

    result = run_bench(
        "concurrency.py",
        "--n",
        "2",
        "--latency",
        "0.2",
        "--redis",
        BROKER_URL,
        *_database_args(),
        out=out,
        timeout=180,
    )
    assert result["benchmark"] == "concurrency"
    assert result["database"].startswith(connection.vendor if connection.vendor == "sqlite" else "postgresql")
    assert result["model_latency_seconds"] == 0.2
    assert result["requests_per_run"] == 8
    assert result["met"] is None  # N = 100 was not measured
    assert result["method"]
    assert set(result["machine"]) >= {"cpu_count", "platform", "python"}
    [run] = result["results"]
    assert set(run) >= RESULT_FIELDS
    assert run["n"] == 2
    assert run["completed"] == 2
    assert run["statuses"] == {"COMPLETED": 2}
    assert run["model_requests"] == 16
    assert run["ideal_runs_per_second"] == 1.25  # 2 runs of 8 requests of 0.2 s
    assert run["rss_idle_mb"] > 0
    assert 0 < run["cpu_bound_ratio_ceiling"] <= 1
    if connection.vendor == "postgresql":
        # The run loop's 4 database threads (and the worker's main thread, should it open one),
        # not a connection per worker thread.
        assert 1 <= run["worker_database_connections_peak"] <= 5
