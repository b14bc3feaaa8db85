"""Retrieval scoped to each of many documents at once: for every document, its own best passages
for a query, ranked within that document as a search scoped to it would rank them. A document
sweep asks this of every candidate document; one query embedding and one pass over each index
serve them all, where a scoped search per document would embed the query once per document.

Each hit keeps the raw scores behind its rank (BM25 from the term index, or the database's
full-text rank for a corpus too large for one; cosine from the vector store) and the best of
each over the whole search scope, so that a caller can tell a document whose best passage is
about the question from one whose best passage merely ranks first in it."""

from collections.abc import Sequence
from dataclasses import dataclass

from corpora.retrieval.fusion import weighted_rrf


@dataclass(frozen=True)
class DocumentHit:
    passage_id: int
    document_id: int
    score: float  # the fused (or lexical) score the within-document ranking used
    lexical: float  # BM25 over the query's terms, 0.0 when it holds none
    dense: float | None  # cosine similarity to the query, None without embeddings


@dataclass(frozen=True)
class ScopeBest:
    """The best lexical and dense scores over every passage in the search's scope."""

    lexical: float
    dense: float | None


def rank_by_document(
    *,
    lexical: tuple[dict[int, list[tuple[int, float]]], float],
    dense: tuple[dict[int, list[tuple[int, float]]], float | None] | None,
    document_ids: Sequence[int],
    per_document: int,
    lexical_weight: float,
    dense_weight: float,
) -> tuple[dict[int, list[DocumentHit]], ScopeBest]:
    """{document id: its best `per_document` hits, best first} for every document in
    `document_ids` that has a passage matching the query, and the best scores over the
    search's scope. `lexical` is ({document id: [(passage id, score)]}, the best score over the
    scope), from the term index or the database's full-text ranking; `dense` the vector
    store's by_document() answer (None without a query vector)."""
    lexical_by_document, lexical_best = lexical
    lexical_by_id = {pid: score for ranked in lexical_by_document.values() for pid, score in ranked}
    best = ScopeBest(lexical=lexical_best, dense=None)
    dense_by_document: dict[int, list[tuple[int, float]]] = {}
    if dense is not None:
        dense_by_document, dense_best = dense
        if dense_best is not None:
            best = ScopeBest(lexical=best.lexical, dense=dense_best)
    dense_of = {pid: s for ranked in dense_by_document.values() for pid, s in ranked}
    found: dict[int, list[DocumentHit]] = {}
    for document in document_ids:
        lexical_ranked = sorted(lexical_by_document.get(document, []), key=lambda h: (-h[1], h[0]))
        dense_ranked = sorted(dense_by_document.get(document, []), key=lambda h: (-h[1], h[0]))
        if not lexical_ranked and not dense_ranked:
            continue
        if dense_ranked:
            fused = weighted_rrf(
                lexical_ranked,
                dense_ranked,
                lexical_weight=lexical_weight,
                dense_weight=dense_weight,
                limit=per_document,
            )
            ranked = [(hit.passage_id, hit.score) for hit in fused]
        else:
            ranked = lexical_ranked[:per_document]
        found[document] = [
            DocumentHit(
                passage_id=pid,
                document_id=document,
                score=score,
                lexical=lexical_by_id.get(pid, 0.0),
                dense=dense_of.get(pid) if dense_ranked else None,
            )
            for pid, score in ranked
        ]
    return found, best
