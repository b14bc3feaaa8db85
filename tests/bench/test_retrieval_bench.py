"""The benchmark script still runs end to end and prints the JSON it promises (on a few
contracts; the figures themselves come from full runs, never from tests)."""

from pathlib import Path

import pytest
from django.db import connection

from tests.bench.runner import run_bench

ROOT = Path(__file__).resolve().parents[2]
CUAD = ROOT.parent / "shared" / "data" / "cuad"


@pytest.mark.embedding
@pytest.mark.skipif(
    not (CUAD / "contracts").is_dir(), reason="../shared/data/cuad is not beside this checkout"
)
def test_retrieval_bench_prints_one_json_object(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the benchmark makes its own SQLite database; one run per CI is enough")
    out = tmp_path / "bench.json"

    result = run_bench(
        "retrieval.py",
        "--contracts",
        "12",
        "--dense-contracts",
        "4",
        "--latency-queries",
        "10",
        "--bootstrap",
        "20",
        out=out,
        timeout=600,
    )
    assert result["ingest_all"]["documents"] == 12
    assert result["ingest_all"]["lexical_hit_immediately"] is True
    assert result["dense_subset"]["contracts"] == 4
    assert result["dense_subset"]["raw_sample_passages"] > 0
    assert result["latency_lexical_alone"]["all_contracts_second_pass"]["queries"] >= 10
    assert result["latency_interleaved"]["hybrid_p50_vs_query_embedding_p50"] > 0
    quality = result["quality"]
    assert quality["categories"] > 0
    for kind in ("keywords", "questions"):
        assert set(quality[kind]) == {"bm25s", "lexical", "dense", "hybrid", "vs_bm25s"}
        for metric in ("recall@10", "recall@50", "recall@100", "contract_recall@50"):
            assert 0.0 <= quality[kind]["hybrid"][metric] <= 1.0
