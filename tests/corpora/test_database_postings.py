"""PostgreSQL's posting lists (corpora_posting, corpora/retrieval/schema.py) and the lexical
ranking read from them (corpora.retrieval.lexical._pg_postings_rank): the trigger keeps every
passage of each lexeme with its frequency and length, merges small segments into larger ones,
and the ranking is BM25 over every passage holding a query term, passing over deleted ones."""

import json
import random
import struct
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from corpora.models import Corpus
from corpora.retrieval import lexical
from corpora.retrieval.lexical import lexical_ranking, term_statistics
from corpora.retrieval.query import parse_query
from corpora.retrieval.schema import POSTING_MERGE_FANOUT
from corpora.services import document_delete
from tests.factories import ingest_text

# How many of the corpus's sections hold each word (one section, one passage).
WORDS = {"zeppelin": 2, "indemnity": 6, "warranty": 14, "supplier": 30, "notice": 45}
SECTIONS = 60
FILLER = "the parties agree that this section applies as written between them".split()


@pytest.fixture
def postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("posting lists are PostgreSQL's (SQLite's FTS5 table is its own index)")


def _sections(rng: random.Random, count: int) -> list[str]:
    """`count` sections, each a passage holding a seeded mix of WORDS (some several times)
    among filler, so that the words' BM25 contributions differ from passage to passage."""
    holders = {word: set(rng.sample(range(count), min(held, count))) for word, held in WORDS.items()}
    sections = []
    for i in range(count):
        words = [rng.choice(FILLER) for _ in range(rng.randint(100, 130))]
        for word, held_by in holders.items():
            if i in held_by:
                for _ in range(rng.randint(1, 3)):
                    words.insert(rng.randrange(len(words) + 1), word)
        sections.append(f"## Section {i}\n\n" + " ".join(words) + ".")
    return sections


@pytest.fixture
def corpus_of_words(postgres, corpus):
    ingest_text(
        corpus,
        "words.txt",
        "\n\n".join(_sections(random.Random(7), SECTIONS)) + "\n",
        schedule_embedding=False,
    )
    assert corpus.passages.count() == SECTIONS  # one passage a section, as WORDS counts
    term_statistics.clear()
    return corpus


def _lists(corpus_id: int) -> dict[str, dict[int, tuple[int, int]]]:
    """{lexeme: {passage id: (stored frequency, stored length)}} decoded from the segments."""
    lists: dict[str, dict[int, tuple[int, int]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, postings, ids, frequencies, lengths FROM corpora_posting WHERE corpus_id = %s",
            [corpus_id],
        )
        for lexeme, n, ids, frequencies, lengths in cursor.fetchall():
            ids, frequencies, lengths = bytes(ids), bytes(frequencies), bytes(lengths)
            decoded = zip(
                struct.unpack(f">{n}q", ids),
                struct.unpack(f">{n}h", frequencies),
                struct.unpack(f">{n}i", lengths),
                strict=True,
            )
            for pid, frequency, length in decoded:
                assert pid not in lists.setdefault(lexeme, {}), "a passage twice in one list"
                lists[lexeme][pid] = (frequency, length)
    return lists


def _holders(corpus_id: int) -> dict[str, dict[int, tuple[int, int]]]:
    """The same, computed from the passages' tsvectors."""
    holders: dict[str, dict[int, tuple[int, int]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, p.id, cardinality(array_positions(u.weights, 'A')), "
            "cardinality(array_positions(u.weights, 'C')), corpora_tsvector_positions(p.search_vector) "
            "FROM corpora_passage p, unnest(p.search_vector) u WHERE p.corpus_id = %s",
            [corpus_id],
        )
        for lexeme, pid, text_positions, heading_positions, length in cursor.fetchall():
            holders.setdefault(lexeme, {})[pid] = (
                2 * (text_positions or 0) + (heading_positions or 0),
                length,
            )
    return holders


def _segments(corpus_id: int) -> dict[str, int]:
    """{lexeme: its segments}."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, count(*) FROM corpora_posting WHERE corpus_id = %s GROUP BY 1", [corpus_id]
        )
        return dict(cursor.fetchall())


def _batches_per_tier(corpus_id: int) -> dict[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tier, count(*) FROM corpora_posting_batch WHERE corpus_id = %s GROUP BY 1", [corpus_id]
        )
        return dict(cursor.fetchall())


def _rank(corpus, query: str, limit: int) -> list[tuple[int, float]]:
    version = Corpus.objects.values_list("index_version", flat=True).get(pk=corpus.pk)
    return lexical_ranking(corpus_id=corpus.pk, version=version, query=parse_query(query), limit=limit)


def _bm25_of_every_match(corpus, query: str, limit: int) -> list[tuple[int, float]]:
    """BM25 computed by PostgreSQL itself from the tsvectors of every passage holding a term
    (the re-scoring the ranking used before posting lists, which scores all of them when the
    corpus has fewer matching passages than its candidate depth, as here)."""
    version = Corpus.objects.values_list("index_version", flat=True).get(pk=corpus.pk)
    parsed = parse_query(query)
    with connection.cursor() as cursor:
        stats = term_statistics.for_corpus(cursor, corpus.pk, version)
        return lexical._pg_rank_matching(cursor, stats, parsed, limit, None)


def test_each_lexeme_lists_every_passage_holding_it_with_its_frequency_and_length(corpus_of_words):
    lists = _lists(corpus_of_words.pk)
    assert lists == _holders(corpus_of_words.pk)
    # the words' lists are as long as the passages WORDS puts them in
    assert {word: len(lists[word]) for word in ("zeppelin", "indemn", "warranti")} == {
        "zeppelin": WORDS["zeppelin"],
        "indemn": WORDS["indemnity"],
        "warranti": WORDS["warranty"],
    }


def test_small_segments_are_merged_and_every_posting_kept(postgres, corpus):
    # given twenty documents of three passages ingested one by one: twenty insert statements,
    # each a batch of a segment for every lexeme its passages hold
    rng = random.Random(11)
    for i in range(20):
        ingest_text(corpus, f"part-{i}.txt", "\n\n".join(_sections(rng, 3)) + "\n", schedule_embedding=False)
    tiers = _batches_per_tier(corpus.pk)
    # then no tier holds a full set of batches, the first eight and the next eight were merged
    # into one batch each, the filler's list is a segment a batch, and each list still holds
    # exactly its passages
    assert max(tiers.values()) < POSTING_MERGE_FANOUT and max(tiers) >= 1
    assert sum(tiers.values()) == 2 + 4
    assert _segments(corpus.pk)["parti"] == 2 + 4
    assert _lists(corpus.pk) == _holders(corpus.pk)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.lexeme, c.passages, (SELECT sum(p.postings) FROM corpora_posting p "
            "WHERE p.corpus_id = c.corpus_id AND p.lexeme = c.lexeme) FROM corpora_lexeme_count c "
            "WHERE c.corpus_id = %s",
            [corpus.pk],
        )
        assert all(counted == listed for _, counted, listed in cursor.fetchall())


@pytest.mark.parametrize(
    "query",
    [
        "zeppelin notice",
        "indemnity warranty supplier",
        "warranty supplier notice",
        "zeppelin indemnity warranty supplier notice",
        "section warranty",
    ],
)
@pytest.mark.parametrize("limit", [1, 5, 20])
def test_the_ranking_is_bm25_over_every_passage_holding_a_term(corpus_of_words, query, limit):
    ranked = _rank(corpus_of_words, query, limit)
    expected = _bm25_of_every_match(corpus_of_words, query, limit)
    assert len(ranked) == min(limit, len(expected)) and ranked
    # the same passages in the same order, at the same scores (ties broken by id)
    assert [pid for pid, _ in ranked] == [pid for pid, _ in expected]
    assert [round(s, 9) for _, s in ranked] == [round(s, 9) for _, s in expected]


def test_deleted_passages_are_passed_over(postgres, corpus):
    # given two documents, the first holding the best passages for the query
    keep = ingest_text(
        corpus, "keep.txt", "\n\n".join(_sections(random.Random(3), 30)) + "\n", schedule_embedding=False
    )
    drop = ingest_text(
        corpus,
        "drop.txt",
        "## Zeppelin\n\n" + " ".join(["zeppelin indemnity"] * 20) + ".\n",
        schedule_embedding=False,
    )
    term_statistics.clear()
    keep, drop = keep.document, drop.document
    dropped = set(drop.passages.values_list("id", flat=True))
    assert {pid for pid, _ in _rank(corpus, "zeppelin indemnity", 1)} <= dropped
    # when that document is deleted (its postings stay in the lists)
    document_delete(user=corpus.creator, document=drop)
    term_statistics.clear()
    # then the ranking holds none of its passages and is still as long as asked
    ranked = _rank(corpus, "zeppelin indemnity", 3)
    kept = set(keep.passages.values_list("id", flat=True))
    assert len(ranked) == 3 and {pid for pid, _ in ranked} <= kept


def test_a_deleted_corpus_takes_its_postings(corpus_of_words):
    assert _segments(corpus_of_words.pk) and _batches_per_tier(corpus_of_words.pk)
    Corpus.objects.filter(pk=corpus_of_words.pk).delete()
    assert _segments(corpus_of_words.pk) == {} and _batches_per_tier(corpus_of_words.pk) == {}


def test_a_rebuild_drops_the_postings_of_deleted_passages(postgres, corpus):
    keep = ingest_text(
        corpus, "keep.txt", "\n\n".join(_sections(random.Random(5), 12)) + "\n", schedule_embedding=False
    )
    drop = ingest_text(
        corpus, "drop.txt", "\n\n".join(_sections(random.Random(6), 8)) + "\n", schedule_embedding=False
    )
    document_delete(user=corpus.creator, document=drop.document)
    # the deleted passages' postings are still in the lists
    listed = sum(len(passages) for passages in _lists(corpus.pk).values())
    live = sum(len(passages) for passages in _holders(corpus.pk).values())
    assert listed > live
    out = StringIO()
    call_command(
        "postings_rebuild", "--corpus", str(corpus.pk), "--user", corpus.creator.username, stdout=out
    )
    (report,) = json.loads(out.getvalue())["corpora"]
    assert report["passages"] == keep.document.passages.count()
    assert (report["postings"], report["dropped"]) == (live, listed - live)
    assert _lists(corpus.pk) == _holders(corpus.pk)
    assert _batches_per_tier(corpus.pk) == {corpora_posting_tier(report["passages"]): 1}


def corpora_posting_tier(passages: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT corpora_posting_tier(%s)", [passages])
        return cursor.fetchone()[0]


def test_a_rebuild_on_sqlite_says_why_not(db):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's refusal")
    with pytest.raises(CommandError, match=r"\[postings_unavailable\]"):
        call_command("postings_rebuild")
