"""PostgreSQL keeps, per corpus and lexeme, the passages where the lexeme weighs most in BM25
(corpora_lexeme_top, kept by the lexeme counts' triggers: corpora/retrieval/schema.py), and a
corpus larger than SEARCH_DATABASE_LEXICAL_MAX_ROWS is ranked from them
(corpora.retrieval.lexical._pg_rank). The tests install the same triggers with lists of a few
postings, so that a small corpus has lists that leave passages out."""

import random

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpora.models import Corpus, Passage
from corpora.retrieval import schema
from corpora.retrieval.lexical import lexical_ranking, term_statistics
from corpora.retrieval.query import parse_query
from corpora.services import corpus_create, document_delete
from tests.factories import ingest_text

# How many of the corpus's sections hold each word (one section, one passage).
WORDS = {"zeppelin": 2, "indemnity": 6, "warranty": 14, "supplier": 30, "notice": 45}
SECTIONS = 60
FILLER = "the parties agree that this section applies as written between them".split()
LIST = 8


@pytest.fixture
def postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("top postings are PostgreSQL's (FTS5 prunes with score profiles)")


@pytest.fixture
def short_lists(postgres, monkeypatch):
    """The triggers with lists of LIST postings, in the test's transaction."""
    with connection.cursor() as cursor:
        for statement in schema.count_trigger_functions(top_postings=LIST):
            cursor.execute(statement)
    monkeypatch.setattr(schema, "TOP_POSTINGS", LIST)


def _sections(seed: int) -> str:
    """SECTIONS sections, each a passage, each holding a seeded mix of WORDS (some several
    times) among filler, so that the words' BM25 contributions differ from passage to passage."""
    rng = random.Random(seed)
    holders = {word: set(rng.sample(range(SECTIONS), count)) for word, count in WORDS.items()}
    sections = []
    for i in range(SECTIONS):
        words = [rng.choice(FILLER) for _ in range(rng.randint(40, 130))]
        for word, held_by in holders.items():
            if i in held_by:
                for _ in range(rng.randint(1, 3)):
                    words.insert(rng.randrange(len(words) + 1), word)
        sections.append(f"## Section {i}\n\n" + " ".join(words) + ".")
    return "\n\n".join(sections) + "\n"


def _stored(corpus_id: int) -> dict[str, tuple[list[int], list[float], float]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, passage_ids, impacts, bound FROM corpora_lexeme_top WHERE corpus_id = %s",
            [corpus_id],
        )
        return {lexeme: (ids, impacts, bound) for lexeme, ids, impacts, bound in cursor.fetchall()}


def _postings(corpus_id: int) -> dict[str, list[tuple[int, float]]]:
    """Every posting of the corpus with its impact at the current mean length, best first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.lexeme, p.id, x.impact FROM corpora_passage p "
            "JOIN corpora_passage_tally a ON a.corpus_id = p.corpus_id, "
            "corpora_passage_impacts(p.search_vector, a.positions / a.passages) AS x "
            "WHERE p.corpus_id = %s ORDER BY x.lexeme, x.impact DESC, p.id",
            [corpus_id],
        )
        postings: dict[str, list[tuple[int, float]]] = {}
        for lexeme, pid, impact in cursor.fetchall():
            postings.setdefault(lexeme, []).append((pid, impact))
    return postings


def _lexemes(text: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [text])
        return cursor.fetchone()[0]


def _version(corpus) -> int:
    return Corpus.objects.values_list("index_version", flat=True).get(pk=corpus.pk)


def _ranking(corpus, settings, query: str, *, limit: int, budget: int) -> tuple[list, list[str]]:
    """(the ranking, the statements it ran)."""
    settings.SEARCH_DATABASE_LEXICAL_MAX_ROWS = budget
    parsed = parse_query(query)
    # the terms' counts first, so that only ranking statements are captured
    lexical_ranking(corpus_id=corpus.pk, version=_version(corpus), query=parsed, limit=1)
    with CaptureQueriesContext(connection) as captured:
        ranked = lexical_ranking(corpus_id=corpus.pk, version=_version(corpus), query=parsed, limit=limit)
    return ranked, [q["sql"] for q in captured.captured_queries]


def test_one_document_s_lists_are_its_best_postings(short_lists, corpus):
    # when one document is ingested (one statement: the mean length its impacts used is today's)
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    stored, postings = _stored(corpus.pk), _postings(corpus.pk)
    # then each lexeme's list is its LIST best postings, best first, and the bound is the best
    # impact left out
    assert stored.keys() == postings.keys()
    for lexeme, best in postings.items():
        ids, impacts, bound = stored[lexeme]
        assert ids == [pid for pid, _ in best[:LIST]], lexeme
        assert impacts == pytest.approx([impact for _, impact in best[:LIST]], rel=1e-6)
        assert bound == pytest.approx(best[LIST][1] if len(best) > LIST else 0, rel=1e-6)
    assert len(stored["zeppelin"][0]) == WORDS["zeppelin"] and stored["notic"][2] > 0


def test_writes_and_deletions_keep_every_left_out_posting_under_the_bound(short_lists, user, corpus):
    # when documents are added one by one (the mean length moves between them) and one is deleted
    documents = [
        ingest_text(corpus, f"words-{seed}.txt", _sections(seed), schedule_embedding=False).document
        for seed in (1, 2, 3)
    ]
    gone = set(Passage.objects.filter(document=documents[1]).values_list("id", flat=True))
    document_delete(document=documents[1], user=user)
    stored, postings = _stored(corpus.pk), _postings(corpus.pk)
    listed_anywhere = {pid for ids, _, _ in stored.values() for pid in ids}
    # then no list holds a deleted passage, each is best first and at most LIST long, and a
    # posting a list leaves out is within a few percent of its bound (written at an earlier
    # mean length) ...
    assert not listed_anywhere & gone
    for lexeme, best in postings.items():
        ids, impacts, bound = stored[lexeme]
        assert len(ids) <= LIST and impacts == sorted(impacts, reverse=True)
        left_out = [impact for pid, impact in best if pid not in ids]
        assert all(impact <= bound * 1.05 for impact in left_out), lexeme
    # ... and the deleted document's passages left lists, which its deletion made shorter
    assert any(len(ids) < min(LIST, len(postings[lexeme])) for lexeme, (ids, _, _) in stored.items())


def test_an_edited_passage_leaves_its_lists_and_raises_its_new_lexemes_bounds(short_lists, corpus):
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    passage = Passage.objects.filter(corpus=corpus, text__contains="zeppelin").first()
    # when a passage's text is edited in place
    Passage.objects.filter(pk=passage.pk).update(text="A dirigible clause about a dirigible.")
    stored = _stored(corpus.pk)
    # then it is in no list, and its new lexeme's bound covers its impact there
    assert all(passage.pk not in ids for ids, _, _ in stored.values())
    [lexeme] = _lexemes("dirigible")
    assert stored[lexeme][2] >= _postings(corpus.pk)[lexeme][0][1] * 0.95


@pytest.mark.parametrize(
    "query",
    [
        "zeppelin notice",
        "indemnity warranty supplier",
        "warranty supplier notice",
        "zeppelin indemnity warranty supplier notice",
        "notice",
    ],
)
@pytest.mark.parametrize("limit", [1, 3, 10])
def test_ranking_from_full_lists_is_the_full_ranking(postgres, corpus, settings, query, limit):
    # given the installed lists (TOP_POSTINGS, longer than this corpus), and a corpus over the budget
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    term_statistics.clear()
    # when a query is ranked from the lists and by scoring every matching passage
    listed, statements = _ranking(corpus, settings, query, limit=limit, budget=SECTIONS // 4)
    full, _ = _ranking(corpus, settings, query, limit=limit, budget=0)
    # then the lists were read, no passage was matched by a text search, and the passages and
    # their scores are the full ranking's
    assert any("corpora_lexeme_top" in sql for sql in statements)
    assert not any("websearch_to_tsquery" in sql for sql in statements)
    assert [pid for pid, _ in listed] == [pid for pid, _ in full]
    assert [round(s, 9) for _, s in listed] == [round(s, 9) for _, s in full]


@pytest.mark.parametrize("query", ["zeppelin notice", "indemnity warranty supplier", "notice"])
def test_short_lists_still_find_the_best_passages(short_lists, corpus, settings, query):
    # given lists of LIST postings, fewer than most words' passages
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    term_statistics.clear()
    # when the best three are asked for
    listed, statements = _ranking(corpus, settings, query, limit=3, budget=SECTIONS // 4)
    full, _ = _ranking(corpus, settings, query, limit=3, budget=0)
    # then they come from the lists and are the full ranking's
    assert not any("websearch_to_tsquery" in sql for sql in statements)
    assert listed == full


def test_a_ranking_short_of_the_limit_scores_every_matching_passage(short_lists, user, corpus, settings):
    documents = [
        ingest_text(corpus, f"w{seed}.txt", _sections(seed), schedule_embedding=False).document
        for seed in (1, 2)
    ]
    [lexeme] = _lexemes("warranty")
    listed = set(_stored(corpus.pk)[lexeme][0])
    # given a list a deletion shortened (the document holding most of its postings) while its
    # bound leaves postings out
    deleted = max(
        documents,
        key=lambda d: len(listed & set(Passage.objects.filter(document=d).values_list("id", flat=True))),
    )
    document_delete(document=deleted, user=user)
    ids, _, bound = _stored(corpus.pk)[lexeme]
    assert len(ids) < LIST and bound > 0
    term_statistics.clear()
    # when more passages are asked for than the list holds
    limit = len(ids) + 1
    ranked, statements = _ranking(corpus, settings, "warranty", limit=limit, budget=SECTIONS // 4)
    # then the passages holding the word are scored after the lists, and the answer is the
    # full ranking
    full, _ = _ranking(corpus, settings, "warranty", limit=limit, budget=0)
    assert any("corpora_lexeme_top" in sql for sql in statements)
    assert any("websearch_to_tsquery" in sql for sql in statements)
    assert len(ranked) == limit and ranked == full


def test_the_migration_fills_the_lists_of_passages_stored_before_it(transactional_db, user):
    corpus = corpus_create(creator=user, name="Before the lists")
    if connection.vendor != "postgresql":
        pytest.skip("top postings are PostgreSQL's")
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    built_by_triggers = _stored(corpus.pk)
    # when the lists' migration is reverted and applied again
    call_command("migrate", "corpora", "0004", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('corpora_lexeme_top') IS NULL")
        assert cursor.fetchone()[0]
    call_command("migrate", "corpora", verbosity=0)
    # then the lists are the ones the triggers had built
    filled = _stored(corpus.pk)
    assert filled.keys() == built_by_triggers.keys()
    for lexeme, (ids, impacts, bound) in built_by_triggers.items():
        assert filled[lexeme][0] == ids
        assert filled[lexeme][1] == pytest.approx(impacts, rel=1e-6)
        assert filled[lexeme][2] == pytest.approx(bound, rel=1e-6)
