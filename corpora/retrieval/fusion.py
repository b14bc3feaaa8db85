"""Weighted reciprocal-rank fusion of the lexical and dense rankings.

Plain RRF (equal weights) lost to a good BM25 on keyword queries in our measurements, because
MiniLM is weak on legal keywords; it won on natural-language questions. So the dense ranking's
weight depends on the query: low for keyword queries, higher for questions. The lexical ranker
gets the question's keywords and the dense ranker the whole question. Weights come from
settings; bench/retrieval.py measures them."""

import heapq
from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True)
class FusedHit:
    passage_id: int
    score: float
    lexical_rank: int | None
    dense_rank: int | None


def weighted_rrf(
    lexical: list[tuple[int, float]],
    dense: list[tuple[int, float]],
    *,
    lexical_weight: float,
    dense_weight: float,
    k: int = RRF_K,
    limit: int | None = None,
) -> list[FusedHit]:
    """The fused ranking, best first; only its first `limit` hits when given."""
    scores: dict[int, float] = {}
    lexical_ranks: dict[int, int] = {}
    dense_ranks: dict[int, int] = {}
    for rank, (pid, _) in enumerate(lexical, start=1):
        lexical_ranks[pid] = rank
        scores[pid] = scores.get(pid, 0.0) + lexical_weight / (k + rank)
    for rank, (pid, _) in enumerate(dense, start=1):
        dense_ranks[pid] = rank
        scores[pid] = scores.get(pid, 0.0) + dense_weight / (k + rank)

    def order(item: tuple[int, float]) -> tuple[float, int, int]:
        return (-item[1], lexical_ranks.get(item[0], 1 << 30), item[0])

    # Only the first `limit` are needed: a partial selection, not a sort of every candidate.
    ordered = (
        sorted(scores.items(), key=order)
        if limit is None
        else heapq.nsmallest(limit, scores.items(), key=order)
    )
    return [FusedHit(pid, score, lexical_ranks.get(pid), dense_ranks.get(pid)) for pid, score in ordered]
