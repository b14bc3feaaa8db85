"""Weighted reciprocal-rank fusion against its definition."""

from hypothesis import given
from hypothesis import strategies as st

from corpora.retrieval.fusion import RRF_K, weighted_rrf

rankings = st.lists(st.integers(min_value=1, max_value=60), unique=True, max_size=40).map(
    lambda ids: [(pid, 0.0) for pid in ids]
)
weights = st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0])


@given(rankings, rankings, weights, weights, st.one_of(st.none(), st.integers(min_value=1, max_value=50)))
def test_fusion_is_the_weighted_reciprocal_rank_sum_ties_in_lexical_then_dense_order(
    lexical, dense, lexical_weight, dense_weight, limit
):
    lexical_rank = {pid: r for r, (pid, _) in enumerate(lexical, start=1)}
    dense_rank = {pid: r for r, (pid, _) in enumerate(dense, start=1)}
    score = {
        pid: (lexical_weight / (RRF_K + lexical_rank[pid]) if pid in lexical_rank else 0.0)
        + (dense_weight / (RRF_K + dense_rank[pid]) if pid in dense_rank else 0.0)
        for pid in lexical_rank.keys() | dense_rank.keys()
    }
    expected = sorted(
        score, key=lambda pid: (-score[pid], lexical_rank.get(pid, 1 << 30), dense_rank.get(pid, 1 << 30))
    )
    if limit is not None:
        expected = expected[:limit]

    fused = weighted_rrf(
        lexical, dense, lexical_weight=lexical_weight, dense_weight=dense_weight, limit=limit
    )

    assert [hit.passage_id for hit in fused] == expected
    for hit in fused:
        assert hit.score == score[hit.passage_id]
        assert hit.lexical_rank == lexical_rank.get(hit.passage_id)
        assert hit.dense_rank == dense_rank.get(hit.passage_id)
