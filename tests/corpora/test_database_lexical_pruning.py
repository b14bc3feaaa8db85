"""PostgreSQL's lexical ranking in a corpus larger than SEARCH_DATABASE_LEXICAL_MAX_ROWS scores
only the passages holding the query's rarer terms, and only as far as the ranking stays the one
scoring every matching passage gives (corpora.retrieval.lexical._pg_rank). The budget is set
below this small corpus's size to take that path."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpora.models import Corpus
from corpora.retrieval import lexical
from corpora.retrieval.lexical import lexical_ranking, term_statistics
from corpora.retrieval.query import parse_query
from tests.factories import ingest_text

# How many of the corpus's sections hold each word (one section, one passage).
WORDS = {"zeppelin": 2, "indemnity": 6, "warranty": 14, "supplier": 30, "notice": 45}
SECTIONS = 60
FILLER = "the parties agree that this section applies as written between them".split()


@pytest.fixture
def postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("the row budget is PostgreSQL's (FTS5 prunes with score profiles)")


@pytest.fixture
def corpus_of_words(postgres, corpus, monkeypatch):
    """SECTIONS sections, each a passage, each holding a seeded mix of WORDS (some several
    times) among filler, so that the words' BM25 contributions differ from passage to passage."""
    rng = random.Random(7)
    holders = {word: set(rng.sample(range(SECTIONS), count)) for word, count in WORDS.items()}
    sections = []
    for i in range(SECTIONS):
        words = [rng.choice(FILLER) for _ in range(rng.randint(100, 130))]
        for word, held_by in holders.items():
            if i in held_by:
                for _ in range(rng.randint(1, 3)):
                    words.insert(rng.randrange(len(words) + 1), word)
        sections.append(f"## Section {i}\n\n" + " ".join(words) + ".")
    ingest_text(corpus, "words.txt", "\n\n".join(sections) + "\n", schedule_embedding=False)
    assert corpus.passages.count() == SECTIONS  # one passage a section, as WORDS counts
    term_statistics.clear()
    # budgets as small as this corpus needs (test_the_budget_is_at_least_ten_rows_a_result)
    monkeypatch.setattr(lexical, "PG_LEXICAL_ROWS_PER_RESULT", 1)
    return corpus


def _ranking(corpus, settings, query: str, *, budget: int, limit: int) -> tuple[list, list[str]]:
    """(the ranking, the websearch strings of the ranking statements it ran)."""
    settings.SEARCH_DATABASE_LEXICAL_MAX_ROWS = budget
    version = Corpus.objects.values_list("index_version", flat=True).get(pk=corpus.pk)
    parsed = parse_query(query)
    # the terms' counts first, so that only ranking statements are captured
    lexical_ranking(corpus_id=corpus.pk, version=version, query=parsed, limit=1)
    with CaptureQueriesContext(connection) as captured:
        ranked = lexical_ranking(corpus_id=corpus.pk, version=version, query=parsed, limit=limit)
    matched = [q["sql"] for q in captured.captured_queries if "websearch_to_tsquery" in q["sql"]]
    return ranked, matched


def _matched_terms(sql: str) -> set[str]:
    """The words of the websearch_to_tsquery argument in an executed statement."""
    argument = sql.split("websearch_to_tsquery('english', '", 1)[1].split("')", 1)[0]
    return set(argument.split(" or "))


def test_a_rare_term_decides_alone_when_no_other_passage_can_make_the_cut(corpus_of_words, settings):
    passages = corpus_of_words.passages.count()
    # when a query of a rare word and a common one asks for the best passage, in a corpus over
    # the budget
    ranked, statements = _ranking(corpus_of_words, settings, "zeppelin notice", budget=passages // 4, limit=1)
    full, _ = _ranking(corpus_of_words, settings, "zeppelin notice", budget=0, limit=1)
    # then one statement scored only the rare word's passages, and the answer is the full one
    assert len(statements) == 1 and _matched_terms(statements[0]) == {"zeppelin"}
    assert ranked == full


@pytest.mark.parametrize(
    "query",
    [
        "zeppelin notice",
        "indemnity warranty supplier",
        "warranty supplier notice",
        "zeppelin indemnity warranty supplier notice",
        "supplier notice",
    ],
)
@pytest.mark.parametrize("limit", [1, 5, 20])
def test_the_pruned_ranking_is_the_full_ranking(corpus_of_words, settings, query, limit):
    # given a budget below the corpus's passages, which widening can still reach in full
    budget = corpus_of_words.passages.count() // 4 + 1
    # when a query is ranked with the budget and without
    pruned, statements = _ranking(corpus_of_words, settings, query, budget=budget, limit=limit)
    full, _ = _ranking(corpus_of_words, settings, query, budget=0, limit=limit)
    # then the first round scored the passages of some of the terms only, and the passages
    # and their scores are the full ranking's
    assert _matched_terms(statements[0]) < set(parse_query(query).terms)
    assert [pid for pid, _ in pruned] == [pid for pid, _ in full]
    assert [round(s, 9) for _, s in pruned] == [round(s, 9) for _, s in full]


def test_a_deep_cut_takes_more_terms_in_a_second_round(corpus_of_words, settings):
    # given a budget that holds only the rarest words' passages
    budget = WORDS["zeppelin"] + WORDS["indemnity"]
    query = "zeppelin indemnity warranty"
    # when the query asks for more passages than those words' holders
    ranked, statements = _ranking(corpus_of_words, settings, query, budget=budget, limit=12)
    full, _ = _ranking(corpus_of_words, settings, query, budget=0, limit=12)
    # then the first round scored the rare words' passages, the second took the next word in
    # too, and the answer is the full ranking
    assert [_matched_terms(sql) for sql in statements] == [
        {"zeppelin", "indemnity"},
        {"zeppelin", "indemnity", "warranty"},
    ]
    assert [pid for pid, _ in ranked] == [pid for pid, _ in full]


def test_widening_stops_at_its_bound_with_the_best_it_scored(corpus_of_words, settings):
    # given a budget of one passage: widening reaches four at most, less than the next word's
    query = "zeppelin indemnity warranty"
    ranked, statements = _ranking(corpus_of_words, settings, query, budget=1, limit=1)
    # then only the rarest word was scored, and the answer is its best holder in the full ranking
    assert [_matched_terms(sql) for sql in statements] == [{"zeppelin"}]
    full, _ = _ranking(corpus_of_words, settings, query, budget=0, limit=SECTIONS)
    holders = {pid for pid, _ in _ranking(corpus_of_words, settings, "zeppelin", budget=0, limit=SECTIONS)[0]}
    assert [pid for pid, _ in ranked] == [pid for pid, _ in full if pid in holders][:1]


def test_an_answer_short_of_the_limit_takes_every_term(corpus_of_words, settings):
    # given a budget whose widening reaches no further than the two rarest words' passages
    query = "zeppelin indemnity notice"
    # when more passages are asked for than those words' holders
    ranked, statements = _ranking(corpus_of_words, settings, query, budget=1, limit=10)
    # then every word is scored, and the answer is the full ranking
    assert [_matched_terms(sql) for sql in statements] == [
        {"zeppelin", "indemnity"},
        {"zeppelin", "indemnity", "notice"},
    ]
    full, _ = _ranking(corpus_of_words, settings, query, budget=0, limit=10)
    assert ranked == full and len(ranked) == 10


def test_the_budget_is_at_least_ten_rows_a_result(corpus_of_words, settings, monkeypatch):
    monkeypatch.setattr(lexical, "PG_LEXICAL_ROWS_PER_RESULT", 10)
    # given a budget of one passage, and a query asking for three
    query = "zeppelin indemnity warranty supplier"
    _, statements = _ranking(corpus_of_words, settings, query, budget=1, limit=3)
    # then the first round took the words whose passages fit in thirty rows, not one
    assert _matched_terms(statements[0]) == {"zeppelin", "indemnity", "warranty"}
