"""Lexical ranking on SQLite (FTS5 bm25) and PostgreSQL (posting lists, or tsvector + GIN).
Both return [(passage_id, score)], best first, higher is better; every value is a bound
parameter.

On PostgreSQL a query's BM25 is summed from the corpus's posting lists (_pg_postings_rank);
a phrase or a set of documents is ranked over the matching passages' tsvectors, where each
term's ts_rank is weighted by its BM25 IDF to pick the candidates BM25 then scores. On SQLite,
scoring each matching row is what a query costs, so passages that provably cannot reach the
top are not scored (see _essential)."""

import contextlib
import dataclasses
import hashlib
import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from django.core.cache import cache
from django.db import connection, transaction

from corpora.retrieval.query import ParsedQuery, fts5_any, fts5_phrase, websearch_any

logger = logging.getLogger(__name__)

# bm25 column weights: passage text, its heading path, the corpus filter key (never scored).
_FTS5_WEIGHTS = "1.0, 0.5, 0.0"
# Terms found in at least this share of a corpus's passages are left out of a query that has
# rarer terms (see _informative).
COMMON_TERM_SHARE = 0.33
PRUNE_MIN_PASSAGES = 1000
# Ranks at which a term's best single-term bm25 scores are kept (see _essential); the last
# one bounds the depth that can skip passages (hybrid asks for 200 by default).
SCORE_RANKS = (1, 10, 20, 50, 100, 200, 500, 1000)
# Terms in at most this share of a corpus's passages get a score profile (see _essential):
# building one scores every passage holding the term, once per change to the index.
PROFILE_MAX_SHARE = 0.05
# lexical_by_document(): the most passages it ranks over the documents asked for.
BY_DOCUMENT_MAX_ROWS = 5000
# Leaves room for floating-point rounding between FTS5's sums and ours.
_SCORE_BOUND_SLACK = 1e-9
# FTS5's bm25 constants (fts5_aux.c).
_FTS5_K1 = 1.2
_FTS5_IDF_FLOOR = 1e-6
# PostgreSQL's BM25 re-scoring (_pg_bm25): the ts_rank candidates it scores. The constants are
# the term index's.
PG_BM25_CANDIDATES_FACTOR = 2
PG_BM25_CANDIDATES_MIN = 200
# How long a term count stays in the cache shared by processes (its key changes with the
# corpus's passages anyway).
SHARED_COUNT_SECONDS = 24 * 3600
# _pg_postings_rank: summing postings by passage goes through a bincount over the id range
# when the range is at most this many times the postings (or this many ids) wide.
POSTINGS_DENSE_RANGE_FACTOR = 8
POSTINGS_DENSE_RANGE_MIN = 1 << 20
# Beyond `limit`, how many of the best passages are checked for deletion in the first round.
POSTINGS_DELETED_SLACK = 20
_BM25_K1 = 1.2
_BM25_B = 0.75
_BM25_HEADING_WEIGHT = 0.5
# Keeps a very common term from scoring exactly zero on PostgreSQL (FTS5 uses 1e-6).
_PG_IDF_FLOOR = 1e-3


def corpus_key(corpus_id: int) -> str:
    return f"c{corpus_id}"


@dataclasses.dataclass(frozen=True)
class Fts5Scope:
    """How an FTS5 query keeps to one corpus. The corpus_key column always works, but ANDing
    it into a MATCH walks a posting list as long as the corpus; when the corpus's passages are
    exactly the ids first_id..last_id (a corpus ingested in one go), a rowid range, which FTS5
    seeks to, says the same thing for free."""

    corpus_id: int
    first_id: int | None = None
    last_id: int | None = None

    def match(self, expression: str) -> str:
        if self.first_id is not None:
            return expression
        return f'corpus_key : "{corpus_key(self.corpus_id)}" AND ({expression})'

    def rowid_clause(self, column: str) -> tuple[str, list]:
        if self.first_id is None:
            return "", []
        return f" AND {column} BETWEEN %s AND %s", [self.first_id, self.last_id]


def _documents_clause(document_ids: Sequence[int] | None, column: str) -> tuple[str, list]:
    if document_ids is None:
        return "", []
    ids = [int(i) for i in document_ids]
    if not ids:
        return " AND 1 = 0", []
    placeholders = ", ".join(["%s"] * len(ids))
    return f" AND {column} IN ({placeholders})", ids


def lexical_ranking(
    *,
    corpus_id: int,
    version: int,
    query: ParsedQuery,
    limit: int,
    document_ids: Sequence[int] | None = None,
) -> list[tuple[int, float]]:
    """`version` is the corpus's current index_version, which keys the term statistics."""
    if query.is_empty or limit <= 0:
        return []
    # One snapshot on SQLite: the score bounds must describe the rows the query ranks.
    snapshot = transaction.atomic() if connection.vendor == "sqlite" else contextlib.nullcontext()
    with snapshot, connection.cursor() as cursor:
        stats = term_statistics.for_corpus(cursor, corpus_id, version)
        query = _informative(cursor, stats, query)
        if connection.vendor == "postgresql":
            return _pg_rank(cursor, stats, query, limit, document_ids)
        essential = _essential(cursor, stats, query, limit) if document_ids is None else None
        return _fts5_rank(
            cursor,
            stats.scope,
            fts5_any(query),
            limit,
            document_ids,
            essential=fts5_any(essential) if essential else None,
        )


def lexical_by_document(
    *,
    corpus_id: int,
    version: int,
    query: ParsedQuery,
    document_ids: Sequence[int],
    scope: Sequence[int] | None,
) -> tuple[dict[int, list[tuple[int, float]]], float]:
    """The term index's by_document() from the full-text index, for corpora too large for a
    term index: ({document id: [(passage id, score)]}, the best score over `scope`'s
    documents (None: the corpus)), at most BY_DOCUMENT_MAX_ROWS passages in all."""
    common = {"corpus_id": corpus_id, "version": version, "query": query}
    ranked = lexical_ranking(**common, limit=BY_DOCUMENT_MAX_ROWS, document_ids=document_ids)
    top = lexical_ranking(**common, limit=1, document_ids=scope)
    best = top[0][1] if top else 0.0
    grouped: dict[int, list[tuple[int, float]]] = {}
    if ranked:
        scores = dict(ranked)
        placeholders = ", ".join(["%s"] * len(scores))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, document_id FROM corpora_passage WHERE id IN ({placeholders})",
                list(scores),
            )
            for pid, document in cursor.fetchall():
                grouped.setdefault(int(document), []).append((int(pid), scores[pid]))
    return grouped, best


def document_frequencies(*, corpus_id: int, version: int, words: Sequence[str]) -> tuple[dict[str, int], int]:
    """({word: passages of the corpus holding it}, passages in the corpus) from the full-text
    index (cached while the corpus's passages stay the same), for corpora too large for a
    term index."""
    with connection.cursor() as cursor:
        stats = term_statistics.for_corpus(cursor, corpus_id, version)
        return stats.document_frequencies(cursor, words), stats.rows


def phrase_candidates(
    *, corpus_id: int, tokens: list[str], limit: int, document_ids: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """Passages whose index holds the phrase's tokens in sequence: the caller still checks
    the literal text, since stemming and punctuation make this a superset."""
    if not tokens or limit <= 0:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return _pg_phrase(cursor, corpus_id, " ".join(tokens), limit, document_ids)
        scope = Fts5Scope(corpus_id)
        return _fts5_rank(cursor, scope, "text : " + fts5_phrase(tokens), limit, document_ids)


# --- Term statistics ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ScoreProfile:
    """A term's best bm25 scores on its own in one corpus: scores[i] is the SCORE_RANKS[i]-th
    best, 0.0 when fewer passages hold the term. In a query of several terms a passage's score
    is the sum of each term's contribution, and that contribution is exactly this score."""

    scores: tuple[float, ...]

    @property
    def best(self) -> float:
        return self.scores[0]

    def reached_by(self, limit: int) -> float:
        """A score that at least `limit` passages reach with this term alone."""
        for rank, score in zip(SCORE_RANKS, self.scores, strict=True):
            if rank >= limit:
                return score
        return 0.0


@dataclasses.dataclass
class _CorpusTerms:
    """Passage count, term document frequencies and score profiles of one corpus, read at one
    index_version. Frequencies and lengths are keyed by the corpus's passages (`extent`: their
    count and the sum of their ids, on SQLite also their first and last id) rather than the
    version, which every embedding batch bumps: passages are never edited, only added (a new,
    higher id) or deleted (a lower count), so the extent changes exactly when what is counted
    can, and a corpus being embedded (a day for a million passages on a CPU) keeps its counts,
    each on SQLite a scan of the term's passages."""

    corpus_id: int
    version: int
    rows: int
    scope: Fts5Scope
    cache: "TermStatistics"
    extent: tuple

    def document_frequency(self, cursor, term: str) -> int:
        return self.document_frequencies(cursor, [term])[term]

    def document_frequencies(self, cursor, terms: Sequence[str]) -> dict[str, int]:
        """{term: passages of the corpus holding it}. On PostgreSQL from the lexeme counts the
        triggers keep (one indexed read for every term not yet known); a term PostgreSQL
        parses into several lexemes, and every term on SQLite, is counted from the full-text
        index, through the cache shared by processes."""
        found: dict[str, int] = {}
        missing = []
        for term in dict.fromkeys(terms):
            value = self.cache.get(("df", self.corpus_id, self.extent, term))
            if value is None:
                missing.append(term)
            else:
                found[term] = value
        if not missing:
            return found
        postgresql = connection.vendor == "postgresql"
        stored = _pg_lexeme_counts(cursor, self.corpus_id, missing) if postgresql else {}
        for term in missing:
            key = ("df", self.corpus_id, self.extent, term)
            value = stored.get(term)
            if value is None:
                value = _shared_count(key)
            if value is None:
                value = _count_matches(cursor, self.scope, term)
                _shared_count_save(key, value)
            self.cache.put(key, value)
            found[term] = value
        return found

    def idf(self, cursor, term: str) -> float:
        """BM25's IDF, as FTS5 computes it."""
        df = self.document_frequency(cursor, term)
        return math.log((self.rows - df + 0.5) / (df + 0.5))

    def score_profile(self, cursor, fingerprint: tuple, term: str) -> ScoreProfile:
        """FTS5 scores with the whole table's statistics, which other corpora change too:
        profiles are keyed by the table's fingerprint rather than this corpus's version."""
        key = ("profile", self.corpus_id, fingerprint, term)
        found = self.cache.get(key)
        if found is None:
            found = _fts5_score_profile(cursor, self.scope, term)
            self.cache.put(key, found)
        return found


class TermStatistics:
    """A bounded, thread-safe cache of per-corpus statistics; entries are keyed by the
    corpus's index_version (which every ingest and embedding batch bumps), by its passages'
    extent (see _CorpusTerms) or by the lexical index's fingerprint."""

    max_entries = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple, Any] = {}

    def get(self, key: tuple) -> Any:
        with self._lock:
            return self._cache.get(key)

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[key] = value

    def for_corpus(self, cursor, corpus_id: int, version: int) -> _CorpusTerms:
        key = ("corpus", corpus_id, version)
        found = self.get(key)
        if found is None:
            found = _corpus_extent(cursor, corpus_id)
            self.put(key, found)
        rows, scope, extent = found
        return _CorpusTerms(
            corpus_id=corpus_id, version=version, rows=rows, scope=scope, cache=self, extent=extent
        )

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


term_statistics = TermStatistics()


def _corpus_extent(cursor, corpus_id: int) -> tuple[int, Fts5Scope, tuple]:
    """The corpus's passage count, its FTS5 scope and its extent (on SQLite count, first id,
    last id and sum of ids: a deletion and an insertion of as many passages change the sum; on
    PostgreSQL count and sum, from the stored tally). Stays true until the corpus's
    index_version moves: passage ids only grow, so no other corpus's passage can later land
    between its first and last id."""
    if connection.vendor == "postgresql":
        # PostgreSQL has no use for a rowid range, and keeps the count and sum.
        rows, id_sum = stored_passage_tally(cursor, corpus_id)
        return rows, Fts5Scope(corpus_id), (rows, id_sum)
    cursor.execute(
        "SELECT count(*), min(id), max(id), sum(id) FROM corpora_passage WHERE corpus_id = %s", [corpus_id]
    )
    rows, first_id, last_id, id_sum = cursor.fetchone()
    extent = (rows, first_id, last_id, int(id_sum or 0))
    if not rows:
        return 0, Fts5Scope(corpus_id), extent
    if rows != last_id - first_id + 1:
        # Gaps: deleted passages are harmless, another corpus's are not.
        cursor.execute("SELECT count(*) FROM corpora_passage WHERE id BETWEEN %s AND %s", [first_id, last_id])
        if cursor.fetchone()[0] != rows:
            return rows, Fts5Scope(corpus_id), extent
    return rows, Fts5Scope(corpus_id, first_id, last_id), extent


def stored_passage_tally(cursor, corpus_id: int) -> tuple[int, int]:
    """PostgreSQL: (the corpus's passages, the sum of their ids) as the triggers keep them in
    corpora_passage_tally (corpora/retrieval/schema.py): one indexed read instead of an
    aggregate over the corpus's passages."""
    cursor.execute("SELECT passages, id_sum FROM corpora_passage_tally WHERE corpus_id = %s", [corpus_id])
    row = cursor.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _shared_key(key: tuple) -> str:
    """The cache key of a count shared between processes: the database's name in it, so that
    deployments sharing one Redis never read each other's counts."""
    database = connection.settings_dict.get("NAME")
    digest = hashlib.sha256(repr((str(database), *key)).encode()).hexdigest()
    return f"deepcite:lexical:{digest}"


def _shared_count(key: tuple) -> int | None:
    """A term count another process made (Django's cache: Redis in production), or None: for
    the terms counted in the full-text index (SQLite's, and PostgreSQL's of several lexemes).
    A count scans the term's passages, and each web and worker process would otherwise make
    its own; a cache that fails is skipped."""
    try:
        found = cache.get(_shared_key(key))
    except Exception:
        _shared_cache_failed()
        return None
    return found if isinstance(found, int) else None


def _shared_count_save(key: tuple, count: int) -> None:
    try:
        cache.set(_shared_key(key), count, timeout=SHARED_COUNT_SECONDS)
    except Exception:
        _shared_cache_failed()


_shared_cache_warned = threading.Event()


def _shared_cache_failed() -> None:
    """Logged once per process: searches go on, each process counting its own terms."""
    if not _shared_cache_warned.is_set():
        _shared_cache_warned.set()
        logger.warning("the shared cache is unavailable; term counts stay per process", exc_info=True)


def _pg_lexeme_counts(cursor, corpus_id: int, terms: Sequence[str]) -> dict[str, int]:
    """{term: passages holding it} from corpora_lexeme_count (corpora/retrieval/schema.py) for
    the terms that are one lexeme (0 for a stopword, which matches nothing); a term that
    parses into several lexemes (plainto_tsquery ANDs them) is left out."""
    cursor.execute(
        "SELECT t.term, CASE WHEN numnode(q) = 0 THEN 0 "
        "WHEN numnode(q) = 1 AND cardinality(v) = 1 THEN coalesce(("
        "SELECT c.passages FROM corpora_lexeme_count c WHERE c.corpus_id = %s AND c.lexeme = v[1]"
        "), 0) END "
        "FROM unnest(%s::text[]) AS t(term), plainto_tsquery('english', t.term) AS q, "
        "tsvector_to_array(to_tsvector('english', t.term)) AS v",
        [corpus_id, list(terms)],
    )
    return {term: int(count) for term, count in cursor.fetchall() if count is not None}


def _count_matches(cursor, scope: Fts5Scope, term: str) -> int:
    if connection.vendor == "postgresql":
        cursor.execute(
            "SELECT count(*) FROM corpora_passage "
            "WHERE corpus_id = %s AND search_vector @@ plainto_tsquery('english', %s)",
            [scope.corpus_id, term],
        )
    else:
        rowid_sql, rowid_params = scope.rowid_clause("rowid")
        cursor.execute(
            f"SELECT count(*) FROM corpora_passage_fts WHERE corpora_passage_fts MATCH %s{rowid_sql}",
            [scope.match(f"text : {fts5_phrase([term])}"), *rowid_params],
        )
    return cursor.fetchone()[0]


def _informative(cursor, stats: _CorpusTerms, query: ParsedQuery) -> ParsedQuery:
    """Drop terms found in a third of the corpus's passages or more: their BM25 IDF is at most
    log(2) (zero past half), so they barely move a ranking, yet scoring their huge posting
    lists was most of a query's time (bench/retrieval.py measured no recall change on CUAD).
    Small corpora are fast anyway and their statistics mean little, so they keep every term;
    so does a query whose rarer terms match nothing."""
    if len(query.terms) < 2 or stats.rows < PRUNE_MIN_PASSAGES:
        return query
    frequencies = stats.document_frequencies(cursor, query.terms)
    kept = tuple(t for t in query.terms if frequencies[t] < COMMON_TERM_SHARE * stats.rows)
    if not any(frequencies[t] for t in kept):
        return query
    return dataclasses.replace(query, terms=kept)


def _essential(cursor, stats: _CorpusTerms, query: ParsedQuery, limit: int) -> ParsedQuery | None:
    """The query's terms a passage must hold to reach its top `limit` (MaxScore), or None
    when every matching passage must be scored.

    A passage's bm25 is the sum of its terms' contributions. A rare term's `limit`-th best
    score on its own is a score that `limit` passages reach, so the query's `limit`-th result
    scores at least that much. A passage holding only common terms, whose largest possible
    contributions add up to less, cannot make the cut and need not be scored: the ranking is
    the same, and scoring (about 1 us a matching passage) is what a query costs."""
    if len(query.terms) < 2 or stats.rows < PRUNE_MIN_PASSAGES or limit > SCORE_RANKS[-1]:
        return None
    fingerprint = _fts5_fingerprint(cursor)
    frequencies = stats.document_frequencies(cursor, query.terms)
    # Profiling a term scores every passage that holds it: worth it for rare terms only.
    # Common terms get the bm25 formula's ceiling instead.
    profiled = [t for t in query.terms if frequencies[t] <= PROFILE_MAX_SHARE * stats.rows]
    profiles = {t: stats.score_profile(cursor, fingerprint, t) for t in profiled}
    if not profiles:
        return None
    cut = max(p.reached_by(limit) for p in profiles.values()) * (1 - _SCORE_BOUND_SLACK)
    table_rows_at_most = fingerprint[1]
    best = {
        t: profiles[t].best if t in profiles else _bm25_ceiling(table_rows_at_most, frequencies[t])
        for t in query.terms
    }
    skipped: set[str] = set()
    ceiling = 0.0
    # The strongest term always stays: something must match.
    for term in sorted(query.terms, key=best.__getitem__)[:-1]:
        ceiling += best[term]
        if ceiling >= cut:
            break
        skipped.add(term)
    if not skipped:
        return None
    return dataclasses.replace(query, terms=tuple(t for t in query.terms if t not in skipped))


def _bm25_ceiling(table_rows_at_most: int, passages_at_least: int) -> float:
    """The most a term can add to an FTS5 bm25 score: its IDF (FTS5 counts the whole table;
    more rows and fewer passages holding it only raise it) times k1 + 1, the limit of the
    term-frequency factor."""
    idf = math.log((table_rows_at_most - passages_at_least + 0.5) / (passages_at_least + 0.5))
    return max(idf, _FTS5_IDF_FLOOR) * (_FTS5_K1 + 1)


# --- SQLite FTS5 ----------------------------------------------------------------------------
def _fts5_rank(
    cursor, scope: Fts5Scope, match: str, limit: int, document_ids, essential: str | None = None
) -> list[tuple[int, float]]:
    """`essential`, when given, is a MATCH expression the scored rows must also satisfy; the
    full `match` still decides each row's bm25."""
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    join = " JOIN corpora_passage p ON p.id = f.rowid" if doc_sql else ""
    rowid_sql, rowid_params = scope.rowid_clause("f.rowid")
    # The unary plus keeps SQLite from handing the IN list to FTS5 as one lookup per rowid:
    # a single MATCH scan with a membership test per row is the fast plan.
    essential_sql = (
        " AND +f.rowid IN (SELECT rowid FROM corpora_passage_fts WHERE corpora_passage_fts MATCH %s)"
        if essential
        else ""
    )
    sql = (
        f"SELECT f.rowid, bm25(corpora_passage_fts, {_FTS5_WEIGHTS}) AS rank "
        f"FROM corpora_passage_fts f{join} "
        "WHERE corpora_passage_fts MATCH %s"
        f"{rowid_sql}{essential_sql}{doc_sql} ORDER BY rank LIMIT %s"
    )
    params = [scope.match(match), *rowid_params, *([essential] if essential else []), *doc_params, limit]
    cursor.execute(sql, params)
    return [(row[0], -float(row[1])) for row in cursor.fetchall()]


def _fts5_fingerprint(cursor) -> tuple[bytes, int]:
    """Changes whenever bm25's inputs can: FTS5 keeps the table's row count and token totals
    in its averages record (rowid 1 of the _data shadow table), and passage ids only grow."""
    cursor.execute(
        "SELECT (SELECT block FROM corpora_passage_fts_data WHERE id = 1), "
        "(SELECT max(id) FROM corpora_passage)"
    )
    block, max_id = cursor.fetchone()
    return bytes(block or b""), max_id or 0


def _fts5_score_profile(cursor, scope: Fts5Scope, term: str) -> ScoreProfile:
    # The term exactly as fts5_any writes it (any column), so its scores are its contributions.
    rowid_sql, rowid_params = scope.rowid_clause("rowid")
    cursor.execute(
        f"SELECT bm25(corpora_passage_fts, {_FTS5_WEIGHTS}) AS rank FROM corpora_passage_fts "
        f"WHERE corpora_passage_fts MATCH %s{rowid_sql} ORDER BY rank LIMIT %s",
        [scope.match(fts5_phrase([term])), *rowid_params, SCORE_RANKS[-1]],
    )
    scores = [-float(row[0]) for row in cursor.fetchall()]
    return ScoreProfile(tuple(scores[rank - 1] if rank <= len(scores) else 0.0 for rank in SCORE_RANKS))


# --- PostgreSQL -----------------------------------------------------------------------------
def _pg_rank(
    cursor, stats: _CorpusTerms, query: ParsedQuery, limit: int, document_ids
) -> list[tuple[int, float]]:
    """BM25 from the posting lists (_pg_postings_rank); a query with a phrase, or kept to some
    documents (a small set of passages: the document sweep, BY_DOCUMENT_MAX_ROWS), is ranked
    over the matching passages' tsvectors (_pg_rank_matching)."""
    if query.phrases or document_ids is not None:
        return _pg_rank_matching(cursor, stats, query, limit, document_ids)
    return _pg_postings_rank(cursor, stats, query, limit)


def _pg_postings_rank(cursor, stats: _CorpusTerms, query: ParsedQuery, limit: int) -> list[tuple[int, float]]:
    """BM25 over the corpus's posting lists (corpora_posting, corpora/retrieval/schema.py): the
    query's lexemes' segments read in one query, each posting's contribution computed and
    summed per passage in numpy, the best `limit` kept. The ranking is exact BM25 over every
    passage holding a query term, with the term index's formula (Lucene's IDF from the lexeme
    counts, k1, b, headings at half weight, the mean length from the tally), and it reads
    ~14 bytes a posting rather than each passage's tsvector. Postings of deleted passages
    stay in the lists until their corpus is deleted: the best are checked against the
    passages table and those gone are passed over."""
    cursor.execute(
        "SELECT q.lexeme, coalesce(c.passages, 0) FROM ("
        "SELECT DISTINCT l AS lexeme FROM unnest(%s::text[]) AS t(term), "
        "unnest(tsvector_to_array(to_tsvector('english', t.term))) AS l) q "
        "LEFT JOIN corpora_lexeme_count c ON c.corpus_id = %s AND c.lexeme = q.lexeme",
        [list(query.terms), stats.corpus_id],
    )
    idf = {lexeme: _lucene_idf(stats.rows, int(held)) for lexeme, held in cursor.fetchall() if held}
    if not idf:
        return []
    average = _pg_average_length(cursor, stats)
    # A binary cursor on the same connection (and transaction): the lists arrive as bytes
    # rather than hex text twice their size.
    postings = psycopg.Cursor(connection.connection)
    postings.execute(
        "SELECT lexeme, ids, frequencies, lengths FROM corpora_posting "
        "WHERE corpus_id = %s AND lexeme = ANY(%s)",
        [stats.corpus_id, list(idf)],
        binary=True,
    )
    ids, contributions = [], []
    for lexeme, id_bytes, frequency_bytes, length_bytes in postings:
        # Stored doubled (2 x text positions + heading positions): headings weigh
        # _BM25_HEADING_WEIGHT, a half.
        tf = np.frombuffer(frequency_bytes, dtype=">i2").astype(np.float64) * 0.5
        length = np.frombuffer(length_bytes, dtype=">i4").astype(np.float64)
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average)
        ids.append(np.frombuffer(id_bytes, dtype=">i8"))
        contributions.append(idf[lexeme] * tf * (_BM25_K1 + 1) / (tf + norm))
    postings.close()
    if not ids:
        return []
    passages, scores = _sum_by_passage(np.concatenate(ids), np.concatenate(contributions))
    return _existing_best(cursor, stats.corpus_id, passages, scores, limit)


def _sum_by_passage(ids: np.ndarray, contributions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(passage ids, summed scores) of postings that may repeat a passage (one per term):
    a bincount over the id range when the range is dense enough, else through np.unique."""
    ids = ids.astype(np.int64)
    first, last = int(ids.min()), int(ids.max())
    if last - first < max(POSTINGS_DENSE_RANGE_FACTOR * len(ids), POSTINGS_DENSE_RANGE_MIN):
        totals = np.bincount(ids - first, weights=contributions)
        held = np.flatnonzero(totals)
        return held + first, totals[held]
    passages, inverse = np.unique(ids, return_inverse=True)
    return passages, np.bincount(inverse, weights=contributions)


def _existing_best(cursor, corpus_id: int, passages: np.ndarray, scores: np.ndarray, limit: int):
    """The best `limit` of (passages, scores), highest score then lowest id first, leaving out
    passages deleted since their postings were written. Only the best are sorted (a full sort
    of a common term's hundreds of thousands of passages took most of a query's time)."""
    ranked: list[tuple[int, float]] = []
    taken = 0
    window = limit + POSTINGS_DELETED_SLACK
    while len(ranked) < limit and taken < len(scores):
        chosen = _best_positions(passages, scores, taken + window)[taken:]
        wanted = [int(i) for i in passages[chosen]]
        cursor.execute(
            "SELECT id FROM corpora_passage WHERE corpus_id = %s AND id = ANY(%s)", [corpus_id, wanted]
        )
        alive = {row[0] for row in cursor.fetchall()}
        ranked += [(pid, float(scores[i])) for pid, i in zip(wanted, chosen, strict=True) if pid in alive]
        taken += len(chosen)
        window *= 2
    return ranked[:limit]


def _best_positions(passages: np.ndarray, scores: np.ndarray, count: int) -> np.ndarray:
    """Positions of the best `count` scores, highest first, equal scores by lowest id: the
    `count`-th best score bounds the candidates (ties at it included), and only they are
    sorted."""
    if count < len(scores):
        floor = scores[np.argpartition(-scores, count - 1)[count - 1]]
        candidates = np.flatnonzero(scores >= floor)
    else:
        candidates = np.arange(len(scores))
    order = np.lexsort((passages[candidates], -scores[candidates]))
    return candidates[order][:count]


def _pg_rank_matching(
    cursor, stats: _CorpusTerms, query: ParsedQuery, limit: int, document_ids
) -> list[tuple[int, float]]:
    """The passages holding any of the query's terms (or a phrase), ranked by IDF-weighted
    ts_rank over all the query's terms; without phrases, its top candidates are then ranked by
    BM25 (_pg_bm25)."""
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    score_sql, score_params = [], []
    for term in query.terms:
        score_sql.append("%s * ts_rank(p.search_vector, plainto_tsquery('english', %s), 1)")
        score_params += [max(stats.idf(cursor, term), _PG_IDF_FLOOR), term]
    for phrase in query.phrases:
        # A phrase counts as much as its rarest word.
        weight = max([stats.idf(cursor, word) for word in phrase] + [_PG_IDF_FLOOR])
        score_sql.append("%s * ts_rank(p.search_vector, phraseto_tsquery('english', %s), 1)")
        score_params += [weight, " ".join(phrase)]
    candidates = (
        f"SELECT p.id, p.search_vector, ({' + '.join(score_sql)}) AS rank "
        "FROM corpora_passage p, websearch_to_tsquery('english', %s) q "
        "WHERE p.corpus_id = %s AND p.search_vector @@ q"
        f"{doc_sql} ORDER BY rank DESC, p.id LIMIT %s"
    )
    params = [*score_params, websearch_any(query), stats.corpus_id, *doc_params]
    if query.phrases:
        cursor.execute(f"SELECT id, rank FROM ({candidates}) c", [*params, limit])
        return [(row[0], float(row[1])) for row in cursor.fetchall()]
    depth = max(limit * PG_BM25_CANDIDATES_FACTOR, PG_BM25_CANDIDATES_MIN)
    return _pg_bm25(cursor, stats, query, candidates, [*params, depth], limit)


def _pg_bm25(
    cursor, stats: _CorpusTerms, query: ParsedQuery, candidates: str, params: list, limit: int
) -> list[tuple[int, float]]:
    """BM25 over the candidates' tsvectors, as the in-memory term index scores (Lucene's IDF,
    k1 and b, heading words at half weight, stopwords left out), so that a corpus searched
    without a term index ranks alike: ts_rank has no document-length normalisation against
    the corpus's average and saturates term frequency its own way, and hybrid search with it
    found fewer gold excerpts in the top 10 (bench/retrieval.py). A term's frequency in a
    passage is the count of its positions (text 'A', headings 'C' at half weight), a
    passage's length the sum over its lexemes. Scoring unnests each candidate's tsvector, so
    only the ts_rank top `params[-1]` are scored."""
    idf = [_lucene_idf(stats.rows, stats.document_frequency(cursor, term)) for term in query.terms]
    sql = (
        f"WITH candidates AS MATERIALIZED ({candidates}), "
        "terms AS (SELECT l AS lexeme, max(q.idf) AS idf "
        "FROM unnest(%s::text[], %s::float8[]) AS q(term, idf), "
        "unnest(tsvector_to_array(to_tsvector('english', q.term))) AS l GROUP BY l), "
        # One pass over each candidate's lexemes: its length, and its matching terms'
        # frequencies with their IDFs.
        "scored AS (SELECT c.id, c.rank, sum(cardinality(u.positions)) AS dl, "
        "array_agg(t.idf) FILTER (WHERE t.idf IS NOT NULL) AS idfs, "
        "array_agg(coalesce(cardinality(array_positions(u.weights, 'A')), 0) "
        "+ %s * coalesce(cardinality(array_positions(u.weights, 'C')), 0)) "
        "FILTER (WHERE t.idf IS NOT NULL) AS tfs "
        "FROM candidates c CROSS JOIN unnest(c.search_vector) u LEFT JOIN terms t ON t.lexeme = u.lexeme "
        "GROUP BY c.id, c.rank) "
        "SELECT id, coalesce((SELECT sum(z.idf * z.tf * %s / (z.tf + %s * (1 - %s + %s * dl / %s))) "
        "FROM unnest(idfs, tfs) AS z(idf, tf)), 0) AS score "
        "FROM scored ORDER BY score DESC, rank DESC, id LIMIT %s"
    )
    k1, b = _BM25_K1, _BM25_B
    average = _pg_average_length(cursor, stats)
    cursor.execute(
        sql,
        [*params, list(query.terms), idf, _BM25_HEADING_WEIGHT, k1 + 1, k1, b, b, average, limit],
    )
    return [(row[0], float(row[1])) for row in cursor.fetchall()]


def _lucene_idf(rows: int, holding: int) -> float:
    return math.log(1 + (rows - holding + 0.5) / (holding + 0.5))


def _pg_average_length(cursor, stats: _CorpusTerms) -> float:
    """The corpus's mean passage length in tsvector positions, from the tally the triggers
    keep (corpora/retrieval/schema.py); cached per extent (see _CorpusTerms)."""
    key = ("avgdl", stats.corpus_id, stats.extent)
    found = stats.cache.get(key)
    if found is None:
        cursor.execute(
            "SELECT positions / nullif(passages, 0) FROM corpora_passage_tally WHERE corpus_id = %s",
            [stats.corpus_id],
        )
        row = cursor.fetchone()
        found = float(row[0]) if row and row[0] else 1.0
        stats.cache.put(key, found)
    return found


def _pg_phrase(cursor, corpus_id: int, text: str, limit: int, document_ids) -> list[tuple[int, float]]:
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    sql = (
        "SELECT p.id, ts_rank(p.search_vector, q, 1) AS rank "
        "FROM corpora_passage p, phraseto_tsquery('english', %s) q "
        "WHERE p.corpus_id = %s AND p.search_vector @@ q"
        f"{doc_sql} ORDER BY rank DESC, p.id LIMIT %s"
    )
    cursor.execute(sql, [text, corpus_id, *doc_params, limit])
    return [(row[0], float(row[1])) for row in cursor.fetchall()]
