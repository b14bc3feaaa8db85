"""An in-memory BM25 index of one corpus's passages, the lexical half of hybrid search.

Hybrid search waits for the query embedding anyway; what it adds on top is the lexical ranking
and the fusion. On SQLite FTS5 computes bm25() for every passage holding a query term (about
1 us each, thousands of rows for a legal question, 200 deep for fusion), and on a 2-core machine
that query also slows the embedding running beside it. Here a query is a few numpy additions
over the terms' posting arrays: well under a millisecond. The lexical search mode itself stays
on the database's full-text index (FTS5 or tsvector); this index ranks for hybrid only.

Each process builds a corpus's index on its first hybrid or dense search and keeps it while the
corpus's passages stay the same (their count and last id: embedding batches, which move
index_version, do not rebuild it). Tokens are the query parser's words less its stopwords,
Snowball-stemmed; a passage's heading path counts at half weight, as in the FTS5 index.

The index also keeps what a search hit shows of each passage and its document, so that hybrid
and dense hits are built without a database query after the query embedding (reading ten
rows took ~0.6 ms there, a sixth of the whole search's budget). Passages do not change after
ingestion; documents' titles may (the admin), and every document change moves the corpus's
index_version, at which the documents' fields are read again."""

import functools
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
import Stemmer
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Count, Max, Model
from django.db.models.base import ModelState

from corpora.models import Document, Passage
from corpora.retrieval.dense import document_mask
from corpora.retrieval.lexical import stored_passage_tally
from corpora.retrieval.lru import ByteBoundedLRU
from corpora.retrieval.query import STOPWORDS, words

# Lucene's BM25 constants.
K1 = 1.2
B = 0.75
HEADING_WEIGHT = 0.5
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024

# What a search hit carries of a passage: every field but the vector and its model's name (both
# change after ingestion, without a rebuild: they load from the database on access) ...
HIT_PASSAGE_FIELDS = tuple(
    f.attname for f in Passage._meta.concrete_fields if f.name not in ("embedding", "embedding_model")
)
# ... and of its document (the rest, its text above all, load on access).
HIT_DOCUMENT_FIELDS = ("id", "corpus_id", "title", "source_name", "file_type", "page_count")
_HEADING_PATH = HIT_PASSAGE_FIELDS.index("heading_path")
_DOCUMENT_ID = HIT_PASSAGE_FIELDS.index("document_id")
# A rough per-row cost of the Python objects beside the text, for the cache's byte bound.
_ROW_OVERHEAD_BYTES = 1100  # measured with tracemalloc: 20.6 MB held for 9,136 CUAD passages
_WORD_OVERHEAD_BYTES = 130  # a dict entry, a short str and a small int

M = TypeVar("M", bound=Model)

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
    # passage id -> its HIT_PASSAGE_FIELDS values; document id -> its HIT_DOCUMENT_FIELDS values
    rows: dict[int, tuple] = field(repr=False)
    documents: dict[int, tuple] = field(repr=False)
    text_bytes: int = 0
    # word (as the query parser reads it, unstemmed) -> how many passages hold it: the words a
    # request's misspelt ones are corrected to (corpora.retrieval.spelling)
    vocabulary: dict[str, int] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def nbytes(self) -> int:
        arrays = sum(p.nbytes + w.nbytes for p, w in self.postings.values())
        rows = self.text_bytes + _ROW_OVERHEAD_BYTES * (len(self.rows) + len(self.documents))
        words = _WORD_OVERHEAD_BYTES * len(self.vocabulary)
        return arrays + self.passage_ids.nbytes + self.document_ids.nbytes + rows + words

    def passages(self, ids: Iterable[int]) -> dict[int, Passage]:
        """The passages among `ids` that this index holds, with their documents, as the
        database would give them (the fields it does not keep load on access)."""
        found: dict[int, Passage] = {}
        for pid in ids:
            row = self.rows.get(pid)
            document = self.documents.get(row[_DOCUMENT_ID]) if row is not None else None
            if document is None:
                continue
            passage = _loaded(Passage, HIT_PASSAGE_FIELDS, row)
            passage.heading_path = list(passage.heading_path)  # each hit its own list
            passage._state.fields_cache["document"] = _loaded(Document, HIT_DOCUMENT_FIELDS, document)
            found[pid] = passage
        return found

    def frequencies(self, words: Iterable[str]) -> dict[str, int]:
        """How many passages hold each word (by its stem)."""
        result = {}
        for word in words:
            stems = _stem_words([word.lower()])
            posting = self.postings.get(stems[0]) if stems else None
            result[word] = len(posting[0]) if posting is not None else 0
        return result

    def scores(self, terms: Iterable[str]) -> np.ndarray:
        """Every passage's BM25 score for `terms` (0.0 where it holds none), in passage_ids order."""
        stems = set(_stem_words([t.lower() for t in terms]))
        scores = np.zeros(len(self.passage_ids), dtype=np.float32)
        for stem in stems:
            posting = self.postings.get(stem)
            if posting is not None:
                positions, weights = posting
                scores[positions] += weights  # positions are unique within a posting
        return scores

    def rank(
        self, terms: Iterable[str], *, limit: int, document_ids: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """[(passage_id, score)], best first: the passages holding any of `terms`."""
        if limit <= 0:
            return []
        scores = self.scores(terms)
        if document_ids is not None:
            allowed = np.isin(self.document_ids, np.asarray(list(document_ids), dtype=np.int64))
            scores[~allowed] = 0.0
        candidates = np.flatnonzero(scores)
        if len(candidates) > limit:
            candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
        # Best first; equal scores in passage order, so that a ranking is reproducible.
        candidates = candidates[np.lexsort((candidates, -scores[candidates]))]
        return list(zip(self.passage_ids[candidates].tolist(), scores[candidates].tolist(), strict=True))

    def documents_holding(self, words: Iterable[str]) -> set[int]:
        """The documents with a passage holding any of `words` (by its stem)."""
        held: set[int] = set()
        for stem in set(_stem_words([w.lower() for w in words])):
            posting = self.postings.get(stem)
            if posting is not None:
                held.update(self.document_ids[posting[0]].tolist())
        return held

    def by_document(
        self, terms: Iterable[str], *, document_ids: Sequence[int], scope: Sequence[int] | None
    ) -> tuple[dict[int, list[tuple[int, float]]], float]:
        """({document id: [(passage id, BM25)] for each of its passages holding a term}, the
        best score over `scope`'s documents (None: the corpus), 0.0 when none holds one)."""
        scores = self.scores(terms)
        in_scope = document_mask(self.document_ids, scope)
        best = float(scores[in_scope].max()) if in_scope.any() else 0.0
        grouped: dict[int, list[tuple[int, float]]] = {}
        for position in np.flatnonzero(document_mask(self.document_ids, document_ids) & (scores > 0)):
            grouped.setdefault(int(self.document_ids[position]), []).append(
                (int(self.passage_ids[position]), float(scores[position]))
            )
        return grouped, best


def _loaded(model: type[M], names: Sequence[str], values: Sequence) -> M:
    """An instance as the ORM loads one with only `names` selected (the others deferred: they
    load on access). Model.from_db runs the model's __init__, whose per-field checks made
    building ten hits take 0.28 ms after a query embedding; this sets what it would."""
    instance = model.__new__(model)
    instance._state = ModelState()
    instance._state.adding = False
    instance._state.db = DEFAULT_DB_ALIAS
    instance.__dict__.update(zip(names, values, strict=True))
    return instance


def build(corpus_id: int, extent: tuple[int, int]) -> TermIndex:
    rows = list(
        Passage.objects.filter(corpus_id=corpus_id, pk__lte=extent[1])
        .order_by("id")
        .values_list(*HIT_PASSAGE_FIELDS)
    )
    text_at, document_at = HIT_PASSAGE_FIELDS.index("text"), HIT_PASSAGE_FIELDS.index("document_id")
    counts: list[Counter] = []
    lengths = np.zeros(len(rows), dtype=np.float32)
    for i, row in enumerate(rows):
        text, heading_path = row[text_at], row[_HEADING_PATH]
        found = Counter(_index_words(text))
        length = sum(found.values())
        if heading_path:
            headings = _index_words(" ".join(heading_path))
            for word in headings:
                found[word] += HEADING_WEIGHT
            length += len(headings)
        counts.append(found)
        lengths[i] = length
    held: Counter = Counter()
    for found in counts:
        held.update(found.keys())
    vocabulary = sorted(held)
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
        document_ids=np.array([r[document_at] for r in rows], dtype=np.int64),
        postings=postings,
        rows={r[0]: tuple(r) for r in rows},
        documents=_documents(corpus_id),
        text_bytes=sum(len(r[text_at]) for r in rows),
        vocabulary=dict(held),
    )


def _documents(corpus_id: int) -> dict[int, tuple]:
    return {
        row[0]: row
        for row in Document.objects.filter(corpus_id=corpus_id).order_by().values_list(*HIT_DOCUMENT_FIELDS)
    }


class TermIndexCache:
    """Per-corpus term indexes, least recently used evicted past max_bytes; safe to share
    between threads. A corpus's index is looked up by its index_version: when that moved, one
    count query says whether its passages changed (an ingest) or only their vectors (an
    embedding batch), and its documents' fields are read again.

    A corpus of more than `max_passages` passages (SEARCH_TERM_INDEX_MAX_PASSAGES) gets no
    index: get_or_none() answers None, and its lexical rankings come from the database's
    full-text index (corpora.retrieval.lexical), so that no process holds ~400 MB per million
    passages."""

    def __init__(self, max_bytes: int) -> None:
        # corpus id -> (the index_version it was last checked at, the index)
        self._items: ByteBoundedLRU[tuple[int, TermIndex]] = ByteBoundedLRU(
            max_bytes, size=lambda item: item[1].nbytes
        )
        self._lock = threading.Lock()
        self._building: dict[int, threading.Lock] = {}
        # corpus id -> the index_version at which it was found too large for an index
        self._oversized: dict[int, int] = {}

    def get(self, *, corpus_id: int, version: int) -> TermIndex:
        index = self._get(corpus_id=corpus_id, version=version, max_passages=0)
        assert index is not None  # noqa: S101 - no bound, always built
        return index

    def get_or_none(self, *, corpus_id: int, version: int, max_passages: int) -> TermIndex | None:
        """The corpus's index, or None when it has more than `max_passages` passages (0: no
        bound); the count is read once per index_version."""
        return self._get(corpus_id=corpus_id, version=version, max_passages=max_passages)

    def _get(self, *, corpus_id: int, version: int, max_passages: int) -> TermIndex | None:
        cached = self._items.get(corpus_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        if max_passages and self._oversized.get(corpus_id) == version:
            return None
        with self._lock:
            building = self._building.setdefault(corpus_id, threading.Lock())
        with building:  # one build per corpus at a time; the others wait for it
            cached = self._items.get(corpus_id)
            if cached is not None and cached[0] == version:  # built while this one waited
                return cached[1]
            extent = None if max_passages and _oversized(corpus_id, max_passages) else _extent(corpus_id)
            if extent is None or (max_passages and extent[0] > max_passages):
                self._items.pop(corpus_id)
                with self._lock:
                    self._oversized[corpus_id] = version
                return None
            if cached is not None and cached[1].extent == extent:
                index = replace(cached[1], documents=_documents(corpus_id))
            else:
                index = build(corpus_id, extent)
            self._items.put(corpus_id, (version, index))
        return index

    def clear(self) -> None:
        self._items.clear()
        with self._lock:
            self._oversized.clear()


def _oversized(corpus_id: int, max_passages: int) -> bool:
    """Whether PostgreSQL's stored passage count is past the bound, read without counting the
    corpus's passages (~400 ms at a million, at every version an embedding batch makes)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        return stored_passage_tally(cursor, corpus_id)[0] > max_passages


def _extent(corpus_id: int) -> tuple[int, int]:
    found = Passage.objects.filter(corpus_id=corpus_id).aggregate(rows=Count("id"), last_id=Max("id"))
    return found["rows"], found["last_id"] or 0


term_indexes = TermIndexCache(getattr(settings, "TERM_INDEX_CACHE_BYTES", DEFAULT_CACHE_BYTES))
