"""The layered concurrency benchmark still runs end to end and prints the JSON it promises (two
runs with a fast model; the figures come from full runs, never tests)."""

import pytest
from django.db import connection

from tests.bench.runner import run_bench


def test_concurrency_layers_bench_prints_one_json_object(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the layered benchmark runs its research layer on PostgreSQL (the PostgreSQL pass)")
    db = connection.settings_dict
    server = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/postgres"

    result = run_bench(
        "concurrency_layers.py",
        "--n",
        "2",
        "--latency",
        "0.2",
        "--postgres",
        server,
        out=tmp_path / "layers.json",
        timeout=180,
    )

    assert result["benchmark"] == "concurrency_layers"
    assert result["requests_per_run"] == 8
    assert [r["layer"] for r in result["results"]] == ["agent", "agent_http", "research"]
    for layer in result["results"]:
        assert layer["n"] == 2
        # No run can beat the model: the researcher's five answers of 0.2 s each at least.
        assert layer["wall_seconds"] >= 1.0
        assert 0 < layer["ratio"] <= 1
        assert layer["cpu_per_run_ms"] > 0
    assert result["results"][-1]["completed"] == 2
