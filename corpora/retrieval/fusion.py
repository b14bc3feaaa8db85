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
    """The fused ranking, best first; only its first `limit` hits when given. Equal scores keep
    lexical order, then dense order for passages only the dense ranker found."""
    scores = {pid: lexical_weight / (k + rank) for rank, (pid, _) in enumerate(lexical, start=1)}
    get = scores.get
    for rank, (pid, _) in enumerate(dense, start=1):
        scores[pid] = get(pid, 0.0) + dense_weight / (k + rank)
    # The dict holds the lexical passages first, in rank order, then the dense-only ones: a
    # stable selection by score alone breaks ties as said, with no Python key function (this
    # runs after the query embedding, on cold caches). Only the first `limit` are needed.
    by_score = scores.__getitem__
    best = (
        sorted(scores, key=by_score, reverse=True)
        if limit is None
        else heapq.nlargest(limit, scores, key=by_score)
    )
    lexical_ranks = {pid: rank for rank, (pid, _) in enumerate(lexical, start=1)}
    dense_ranks = {pid: rank for rank, (pid, _) in enumerate(dense, start=1)}
    return [FusedHit(pid, scores[pid], lexical_ranks.get(pid), dense_ranks.get(pid)) for pid in best]
