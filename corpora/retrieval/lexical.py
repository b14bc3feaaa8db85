"""Lexical ranking on SQLite (FTS5 bm25) and PostgreSQL (tsvector + GIN). Both return
[(passage_id, score)], best first, higher is better; every value is a bound parameter."""

import dataclasses
import threading
from collections.abc import Sequence

from django.db import connection

from corpora.models import Corpus
from corpora.retrieval.query import ParsedQuery, fts5_any, fts5_phrase, websearch_any

# bm25 column weights: passage text, its heading path, the corpus filter key (never scored).
_FTS5_WEIGHTS = "1.0, 0.5, 0.0"


_PG_PARSERS = frozenset({"websearch_to_tsquery", "phraseto_tsquery"})


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
    *, corpus_id: int, query: ParsedQuery, limit: int, document_ids: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    if query.is_empty or limit <= 0:
        return []
    if connection.vendor == "postgresql":
        return _pg_rank(corpus_id, "websearch_to_tsquery", websearch_any(query), limit, document_ids)
    return _fts5_rank(corpus_id, fts5_any(_fts5_informative(corpus_id, query)), limit, document_ids)


class _Fts5Statistics:
    """Per-corpus passage counts and term document frequencies, valid for one index_version
    of the corpus (every ingest and embedding batch bumps it)."""

    max_entries = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, int, str], int] = {}

    def _cached(self, key: tuple[int, int, str], compute) -> int:
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[key] = value
        return value

    def rows(self, cursor, corpus_id: int, version: int) -> int:
        def compute() -> int:
            cursor.execute("SELECT count(*) FROM corpora_passage WHERE corpus_id = %s", [corpus_id])
            return cursor.fetchone()[0]

        return self._cached((corpus_id, version, ""), compute)

    def document_frequency(self, cursor, corpus_id: int, version: int, term: str) -> int:
        def compute() -> int:
            cursor.execute(
                "SELECT count(*) FROM corpora_passage_fts WHERE corpora_passage_fts MATCH %s",
                [f'corpus_key : "{corpus_key(corpus_id)}" AND text : {fts5_phrase([term])}'],
            )
            return cursor.fetchone()[0]

        return self._cached((corpus_id, version, term), compute)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


fts5_statistics = _Fts5Statistics()


def _fts5_informative(corpus_id: int, query: ParsedQuery) -> ParsedQuery:
    """Drop terms found in half the corpus's passages or more: bm25 clamps their IDF to ~0,
    so they barely move a ranking, yet scoring their huge doclists is most of a query's time."""
    if len(query.terms) < 2:
        return query
    version = Corpus.objects.filter(pk=corpus_id).values_list("index_version", flat=True).first()
    with connection.cursor() as cursor:
        rows = fts5_statistics.rows(cursor, corpus_id, version or 0)
        kept = tuple(
            t
            for t in query.terms
            if 2 * fts5_statistics.document_frequency(cursor, corpus_id, version or 0, t) < rows
        )
    if not kept and not query.phrases:
        return query
    return dataclasses.replace(query, terms=kept)


def phrase_candidates(
    *, corpus_id: int, tokens: list[str], limit: int, document_ids: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """Passages whose index holds the phrase's tokens in sequence: the caller still checks
    the literal text, since stemming and punctuation make this a superset."""
    if not tokens or limit <= 0:
        return []
    if connection.vendor == "postgresql":
        return _pg_rank(corpus_id, "phraseto_tsquery", " ".join(tokens), limit, document_ids)
    return _fts5_rank(corpus_id, "text : " + fts5_phrase(tokens), limit, document_ids)


def _fts5_rank(corpus_id: int, match: str, limit: int, document_ids) -> list[tuple[int, float]]:
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    join = " JOIN corpora_passage p ON p.id = f.rowid" if doc_sql else ""
    # Only constants and placeholders are interpolated; every value is a parameter.
    sql = (
        f"SELECT f.rowid, bm25(corpora_passage_fts, {_FTS5_WEIGHTS}) AS rank "
        f"FROM corpora_passage_fts f{join} "
        "WHERE corpora_passage_fts MATCH %s"
        f"{doc_sql} ORDER BY rank LIMIT %s"
    )
    expression = f'corpus_key : "{corpus_key(corpus_id)}" AND ({match})'
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, *doc_params, limit])
        return [(row[0], -float(row[1])) for row in cursor.fetchall()]


def _pg_rank(corpus_id: int, parser: str, text: str, limit: int, document_ids) -> list[tuple[int, float]]:
    if parser not in _PG_PARSERS:
        raise ValueError(f"unknown tsquery parser {parser!r}")
    doc_sql, doc_params = _documents_clause(document_ids, "p.document_id")
    sql = (
        "SELECT p.id, ts_rank(p.search_vector, q, 1) AS rank "
        f"FROM corpora_passage p, {parser}('english', %s) q "
        "WHERE p.corpus_id = %s AND p.search_vector @@ q"
        f"{doc_sql} ORDER BY rank DESC, p.id LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [text, corpus_id, *doc_params, limit])
        return [(row[0], float(row[1])) for row in cursor.fetchall()]
