"""Lexical ranking on SQLite (FTS5 bm25) and PostgreSQL (tsvector + GIN). Both return
[(passage_id, score)], best first, higher is better; every value is a bound parameter.

PostgreSQL's ts_rank has no notion of how rare a word is, so there each query term's ts_rank is
weighted by its BM25 IDF in the corpus: the ranking then behaves like BM25 on both backends."""

import dataclasses
import math
import threading
from collections.abc import Sequence

from django.db import connection

from corpora.retrieval.query import ParsedQuery, fts5_any, fts5_phrase, websearch_any

# bm25 column weights: passage text, its heading path, the corpus filter key (never scored).
_FTS5_WEIGHTS = "1.0, 0.5, 0.0"
# Terms found in at least this share of a corpus's passages are left out of a query that has
# rarer terms (see _informative).
COMMON_TERM_SHARE = 0.33
PRUNE_MIN_PASSAGES = 1000
# Keeps a very common term from scoring exactly zero on PostgreSQL (FTS5 uses 1e-6).
_PG_IDF_FLOOR = 1e-3


def corpus_key(corpus_id: int) -> str:
    return f"c{corpus_id}"


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
    with connection.cursor() as cursor:
        stats = term_statistics.for_corpus(cursor, corpus_id, version)
        query = _informative(cursor, stats, query)
        if connection.vendor == "postgresql":
            return _pg_rank(cursor, stats, query, limit, document_ids)
        return _fts5_rank(cursor, corpus_id, fts5_any(query), limit, document_ids)


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
        return _fts5_rank(cursor, corpus_id, "text : " + fts5_phrase(tokens), limit, document_ids)


# --- Term statistics ------------------------------------------------------------------------
@dataclasses.dataclass
class _CorpusTerms:
    """Passage count and term document frequencies of one corpus at one index_version."""

    corpus_id: int
    version: int
    rows: int
    cache: "TermStatistics"

    def document_frequency(self, cursor, term: str) -> int:
        key = (self.corpus_id, self.version, term)
        found = self.cache.get(key)
        if found is None:
            found = _count_matches(cursor, self.corpus_id, term)
            self.cache.put(key, found)
        return found

    def idf(self, cursor, term: str) -> float:
        """BM25's IDF, as FTS5 computes it."""
        df = self.document_frequency(cursor, term)
        return math.log((self.rows - df + 0.5) / (df + 0.5))


class TermStatistics:
    """A bounded, thread-safe cache of per-corpus statistics; entries are keyed by the
    corpus's index_version, which every ingest and embedding batch bumps."""

    max_entries = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, int, str], int] = {}

    def get(self, key: tuple[int, int, str]) -> int | None:
        with self._lock:
            return self._cache.get(key)

    def put(self, key: tuple[int, int, str], value: int) -> None:
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[key] = value

    def for_corpus(self, cursor, corpus_id: int, version: int) -> _CorpusTerms:
        key = (corpus_id, version, "")
        rows = self.get(key)
        if rows is None:
            cursor.execute("SELECT count(*) FROM corpora_passage WHERE corpus_id = %s", [corpus_id])
            rows = cursor.fetchone()[0]
            self.put(key, rows)
        return _CorpusTerms(corpus_id=corpus_id, version=version, rows=rows, cache=self)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


term_statistics = TermStatistics()


def _count_matches(cursor, corpus_id: int, term: str) -> int:
    if connection.vendor == "postgresql":
        cursor.execute(
            "SELECT count(*) FROM corpora_passage "
            "WHERE corpus_id = %s AND search_vector @@ plainto_tsquery('english', %s)",
            [corpus_id, term],
        )
    else:
        cursor.execute(
            "SELECT count(*) FROM corpora_passage_fts WHERE corpora_passage_fts MATCH %s",
            [f'corpus_key : "{corpus_key(corpus_id)}" AND text : {fts5_phrase([term])}'],
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
    frequencies = {t: stats.document_frequency(cursor, t) for t in query.terms}
    kept = tuple(t for t in query.terms if frequencies[t] < COMMON_TERM_SHARE * stats.rows)
    if not any(frequencies[t] for t in kept):
        return query
    return dataclasses.replace(query, terms=kept)


# --- SQLite FTS5 ----------------------------------------------------------------------------
def _fts5_rank(cursor, corpus_id: int, match: str, limit: int, document_ids) -> list[tuple[int, float]]:
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    join = " JOIN corpora_passage p ON p.id = f.rowid" if doc_sql else ""
    sql = (
        f"SELECT f.rowid, bm25(corpora_passage_fts, {_FTS5_WEIGHTS}) AS rank "
        f"FROM corpora_passage_fts f{join} "
        "WHERE corpora_passage_fts MATCH %s"
        f"{doc_sql} ORDER BY rank LIMIT %s"
    )
    expression = f'corpus_key : "{corpus_key(corpus_id)}" AND ({match})'
    cursor.execute(sql, [expression, *doc_params, limit])
    return [(row[0], -float(row[1])) for row in cursor.fetchall()]


# --- PostgreSQL -----------------------------------------------------------------------------
def _pg_rank(
    cursor, stats: _CorpusTerms, query: ParsedQuery, limit: int, document_ids
) -> list[tuple[int, float]]:
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
    sql = (
        f"SELECT p.id, ({' + '.join(score_sql)}) AS rank "
        "FROM corpora_passage p, websearch_to_tsquery('english', %s) q "
        "WHERE p.corpus_id = %s AND p.search_vector @@ q"
        f"{doc_sql} ORDER BY rank DESC, p.id LIMIT %s"
    )
    cursor.execute(sql, [*score_params, websearch_any(query), stats.corpus_id, *doc_params, limit])
    return [(row[0], float(row[1])) for row in cursor.fetchall()]


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
