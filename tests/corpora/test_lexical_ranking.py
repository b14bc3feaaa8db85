"""Lexical ranking on a corpus large enough for the shortcuts in corpora.retrieval.lexical to
apply: they must never change what a search returns. The document filter makes every
matching passage be scored, so a search filtered to all of a corpus's documents is the
reference ranking."""

import random

import pytest
from django.db import connection

from corpora.models import Passage
from corpora.retrieval import lexical
from corpora.retrieval.query import parse_query
from corpora.selectors import passage_search
from corpora.services import corpus_create
from tests.factories import ingest_text

# Share of passages holding each word, from everywhere-but-skipped to rare.
SHARES = {"alpha": 0.25, "beta": 0.15, "gamma": 0.08, "delta": 0.04, "epsilon": 0.015}
QUERIES = [
    "alpha delta",
    "alpha beta delta",
    "alpha beta gamma delta epsilon",
    "beta epsilon w17x",
    "alpha beta",
    '"alpha beta" delta',
    "Which passages mention gamma, delta or epsilon?",
]


def corpus_text(rng: random.Random, paragraphs: int) -> str:
    """About 100 words a paragraph (one passage each): filler words found in a few dozen
    passages each, and the words of SHARES, once to three times, in their share of them."""
    lines = []
    for _ in range(paragraphs):
        words = [f"w{rng.randrange(5000)}x" for _ in range(95)]
        for word, share in SHARES.items():
            if rng.random() < share:
                words += [word] * rng.randint(1, 3)
        rng.shuffle(words)
        lines.append(" ".join(words) + ".")
    return "\n\n".join(lines)


@pytest.fixture
def big(user):
    corpus = corpus_create(creator=user, name="Big")
    ingest_text(corpus, "words.txt", corpus_text(random.Random(7), lexical.PRUNE_MIN_PASSAGES + 100))
    return corpus


def ranking(corpus, query: str, top_k: int, *, reference: bool = False) -> list[tuple[int, float]]:
    document_ids = list(corpus.documents.values_list("pk", flat=True)) if reference else None
    hits = passage_search(corpus=corpus, query=query, top_k=top_k, mode="lexical", document_ids=document_ids)
    return [(h.passage.pk, round(h.score, 9)) for h in hits]


def assert_same_ranking(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    # Passages with equal scores may come in either order, and the last score may tie with
    # passages past the cut.
    assert [score for _, score in found] == [score for _, score in expected]
    last = expected[-1][1] if expected else None
    assert {pid for pid, score in found if score != last} == {pid for pid, score in expected if score != last}


@pytest.mark.parametrize("top_k", [1, 10, 50, 200])
def test_skipping_passages_that_cannot_reach_the_top_keeps_the_ranking(big, top_k):
    for query in QUERIES:
        found = ranking(big, query, top_k)
        expected = ranking(big, query, top_k, reference=True)

        assert found, query
        assert_same_ranking(found, expected)


def test_common_terms_are_not_scored_on_their_own_when_rare_ones_decide(big):
    if connection.vendor != "sqlite":
        pytest.skip("the score bounds are FTS5's")
    big.refresh_from_db()
    with connection.cursor() as cursor:
        stats = lexical.term_statistics.for_corpus(cursor, big.pk, big.index_version)
        essential = lexical._essential(cursor, stats, parse_query("alpha beta delta"), 10)

    # "delta" is rare enough that its 10th best passage outscores anything "alpha" can add.
    assert essential is not None
    assert essential.terms == ("beta", "delta")


def test_rankings_follow_changes_to_other_corpora(user, big):
    # FTS5 scores with statistics of the whole table, which another corpus changes; the
    # PostgreSQL ranking uses the corpus's own.
    query = "alpha gamma delta epsilon"
    before = ranking(big, query, 10)
    other = corpus_create(creator=user, name="Other")
    ingest_text(other, "more.txt", "\n\n".join(" ".join(["delta epsilon"] * 50) for _ in range(300)))

    after = ranking(big, query, 10)

    assert before
    assert_same_ranking(after, ranking(big, query, 10, reference=True))
    if connection.vendor == "sqlite":
        assert [score for _, score in after] != [score for _, score in before]
    else:
        assert after == before


def test_corpora_ingested_in_turns_stay_apart(user):
    first = corpus_create(creator=user, name="First")
    second = corpus_create(creator=user, name="Second")
    ingest_text(first, "a.txt", "The escrow agent holds the source code for the first licensee.")
    ingest_text(second, "b.txt", "The escrow agent holds the source code for the second licensee.")
    ingest_text(first, "c.txt", "An escrow release happens on the licensor's insolvency.")

    found = passage_search(corpus=first, query="escrow", top_k=10, mode="lexical")
    other = passage_search(corpus=second, query="escrow", top_k=10, mode="lexical")

    assert {h.passage.document.source_name for h in found} == {"a.txt", "c.txt"}
    assert {h.passage.corpus_id for h in other} == {second.pk}
    assert Passage.objects.filter(corpus=first).count() == 2


def test_postgresql_scores_bm25_as_the_term_index_does(corpus):
    # PostgreSQL ranks a query's ts_rank candidates by BM25 over their tsvectors, so that a
    # corpus too large for a term index ranks as the term index would.
    if connection.vendor != "postgresql":
        pytest.skip("FTS5 has its own bm25()")
    from corpora.models import Corpus
    from corpora.retrieval.term_index import term_indexes

    for name, text in (
        ("a.txt", "The supplier's liability is capped at the fees paid."),
        ("b.txt", "Either party may terminate this agreement for convenience."),
        ("c.txt", "Termination does not limit liability for breach."),
        ("d.txt", "Payment is due within thirty days of the invoice date."),
    ):
        ingest_text(corpus, name, text, schedule_embedding=False)
    version = Corpus.objects.get(pk=corpus.pk).index_version
    query = parse_query("terminating liabilities")

    found = lexical.lexical_ranking(corpus_id=corpus.pk, version=version, query=query, limit=10)
    expected = term_indexes.get(corpus_id=corpus.pk, version=version).rank(query.terms, limit=10)

    assert [pid for pid, _ in found] == [pid for pid, _ in expected]
    # the same formula and statistics; lengths differ a little, PostgreSQL's English stopword
    # list being another than the query parser's
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=0.1)
