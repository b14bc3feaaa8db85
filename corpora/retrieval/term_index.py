"""An in-memory BM25 index of one corpus's passages, the lexical half of hybrid search.

Hybrid search waits for the query embedding anyway; what it adds on top is the lexical ranking
and the fusion. On SQLite FTS5 computes bm25() for every passage holding a query term (about
1 us each, thousands of rows for a legal question, 200 deep for fusion), and on a 2-core machine
that query also slows the embedding running beside it. Here a query is a few numpy additions
over the terms' posting arrays: well under a millisecond. The lexical search mode itself stays
on the database's full-text index (FTS5 or tsvector); this index serves hybrid only.

Each process builds a corpus's index on its first hybrid search and keeps it while the corpus's
passages stay the same (their count and last id: embedding batches, which move index_version,
do not rebuild it). Tokens are the query parser's words less its stopwords, Snowball-stemmed;
a passage's heading path counts at half weight, as in the FTS5 index."""

import functools
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import Stemmer
from django.conf import settings
from django.db.models import Count, Max

from corpora.models import Passage
from corpora.retrieval.lru import ByteBoundedLRU
from corpora.retrieval.query import STOPWORDS, words

# Lucene's BM25 constants.
K1 = 1.2
B = 0.75
HEADING_WEIGHT = 0.5
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024

_stemmers = threading.local()  # a PyStemmer stemmer is not safe to share between threads


def _stem_words(tokens: list[str]) -> list[str]:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return stemmer.stemWords(tokens)


def _index_words(text: str) -> list[str]:
    """The words a query's terms are matched against (corpora.retrieval.query.parse_query
    leaves the same stopwords out of a query)."""
    return [w for w in words(text) if w not in STOPWORDS]


@dataclass(frozen=True, eq=False)
class TermIndex:
    corpus_id: int
    # The passages it was built from: their count and their last id (ids only grow).
    extent: tuple[int, int]
    passage_ids: np.ndarray
    document_ids: np.ndarray
    # stem -> (positions into passage_ids, that passage's BM25 weight for the stem)
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(repr=False)

    @functools.cached_property
    def nbytes(self) -> int:
        arrays = sum(p.nbytes + w.nbytes for p, w in self.postings.values())
        return arrays + self.passage_ids.nbytes + self.document_ids.nbytes

    def rank(
        self, terms: Iterable[str], *, limit: int, document_ids: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """[(passage_id, score)], best first: the passages holding any of `terms`."""
        stems = set(_stem_words([t.lower() for t in terms]))
        found = [self.postings[s] for s in stems if s in self.postings]
        if limit <= 0 or not found:
            return []
        scores = np.zeros(len(self.passage_ids), dtype=np.float32)
        for positions, weights in found:
            scores[positions] += weights  # positions are unique within a posting
        if document_ids is not None:
            allowed = np.isin(self.document_ids, np.asarray(list(document_ids), dtype=np.int64))
            scores[~allowed] = 0.0
        candidates = np.flatnonzero(scores)
        if len(candidates) > limit:
            candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
        # Best first; equal scores in passage order, so that a ranking is reproducible.
        candidates = candidates[np.lexsort((candidates, -scores[candidates]))]
        return list(zip(self.passage_ids[candidates].tolist(), scores[candidates].tolist(), strict=True))


def build(corpus_id: int, extent: tuple[int, int]) -> TermIndex:
    rows = list(
        Passage.objects.filter(corpus_id=corpus_id, pk__lte=extent[1])
        .order_by("id")
        .values_list("id", "document_id", "text", "heading_path")
    )
    counts: list[Counter] = []
    lengths = np.zeros(len(rows), dtype=np.float32)
    for i, (_, _, text, heading_path) in enumerate(rows):
        found = Counter(_index_words(text))
        length = sum(found.values())
        if heading_path:
            headings = _index_words(" ".join(heading_path))
            for word in headings:
                found[word] += HEADING_WEIGHT
            length += len(headings)
        counts.append(found)
        lengths[i] = length
    vocabulary = sorted({w for found in counts for w in found})
    stem_of = dict(zip(vocabulary, _stem_words(vocabulary), strict=True))
    by_stem: dict[str, dict[int, float]] = {}
    for i, found in enumerate(counts):
        for word, tf in found.items():
            posting = by_stem.setdefault(stem_of[word], {})
            posting[i] = posting.get(i, 0.0) + tf
    n = len(rows)
    norms = K1 * (1 - B + B * lengths / max(float(lengths.mean()) if n else 1.0, 1e-9))
    postings = {}
    for stem, posting in by_stem.items():
        positions = np.fromiter(posting.keys(), dtype=np.int32, count=len(posting))
        tf = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
        idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
        postings[stem] = (positions, (idf * tf * (K1 + 1) / (tf + norms[positions])).astype(np.float32))
    return TermIndex(
        corpus_id=corpus_id,
        extent=extent,
        passage_ids=np.array([r[0] for r in rows], dtype=np.int64),
        document_ids=np.array([r[1] for r in rows], dtype=np.int64),
        postings=postings,
    )


class TermIndexCache:
    """Per-corpus term indexes, least recently used evicted past max_bytes; safe to share
    between threads. A corpus's index is looked up by its index_version: when that moved, one
    count query says whether its passages changed (an ingest) or only their vectors (an
    embedding batch)."""

    def __init__(self, max_bytes: int) -> None:
        # corpus id -> (the index_version it was last checked at, the index)
        self._items: ByteBoundedLRU[tuple[int, TermIndex]] = ByteBoundedLRU(
            max_bytes, size=lambda item: item[1].nbytes
        )
        self._lock = threading.Lock()
        self._building: dict[int, threading.Lock] = {}

    def get(self, *, corpus_id: int, version: int) -> TermIndex:
        cached = self._items.get(corpus_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        with self._lock:
            building = self._building.setdefault(corpus_id, threading.Lock())
        with building:  # one build per corpus at a time; the others wait for it
            extent = _extent(corpus_id)
            cached = self._items.get(corpus_id)
            index = (
                cached[1] if cached is not None and cached[1].extent == extent else build(corpus_id, extent)
            )
            self._items.put(corpus_id, (version, index))
        return index

    def clear(self) -> None:
        self._items.clear()


def _extent(corpus_id: int) -> tuple[int, int]:
    found = Passage.objects.filter(corpus_id=corpus_id).aggregate(rows=Count("id"), last_id=Max("id"))
    return found["rows"], found["last_id"] or 0


term_indexes = TermIndexCache(getattr(settings, "TERM_INDEX_CACHE_BYTES", DEFAULT_CACHE_BYTES))
