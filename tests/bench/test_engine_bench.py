"""The engine benchmark still runs end to end and prints the JSON it promises (one run on a few
contracts; the figures themselves come from full runs, never from tests)."""

from pathlib import Path

import pytest
from django.db import connection

from tests.bench.runner import run_bench

ROOT = Path(__file__).resolve().parents[2]
CUAD = ROOT.parent / "shared" / "data" / "cuad"


@pytest.mark.skipif(
    not (CUAD / "contracts").is_dir(), reason="../shared/data/cuad is not beside this checkout"
)
def test_engine_bench_prints_one_json_object(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the benchmark makes its own SQLite database; one run per CI is enough")
    out = tmp_path / "engine.json"

    result = run_bench("engine.py", "--contracts", "3", "--runs", "1", out=out, timeout=600)
    assert result["benchmark"] == "engine"
    assert result["database"] == "sqlite (fresh temporary file)"
    assert result["corpus"]["contracts"] == 3
    assert result["runs"] == 1
    assert result["steps"] == 60
    assert result["model_requests"] == 61
    assert result["target_ms"] == 10.0
    assert isinstance(result["met"], bool)
    assert set(result["machine"]) >= {"cpu_count", "platform", "python"}
    assert result["method"]
    for key in ("median_over_runs", "min_over_runs", "max_over_runs"):
        assert result["overhead_per_step_ms"][key] is not None
    assert set(result["per_step_overhead_ms"]) >= {"median", "p95", "samples"}
    assert result["per_step_overhead_ms"]["samples"] == 60
    [run] = result["per_run"]
    assert run["status"] == "COMPLETED"
    assert run["steps"] == 60
    assert run["findings"] == 20
    assert run["citations"] == 20
    assert set(run["retrieval_ms_by_tool"]) == {"search_passages", "read_context", "record_finding"}
