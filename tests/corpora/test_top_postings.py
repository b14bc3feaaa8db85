"""PostgreSQL keeps, per corpus and lexeme, the passages where the lexeme weighs most in BM25
(corpora_lexeme_top, kept by the lexeme counts' triggers: corpora/retrieval/schema.py), and a
corpus larger than SEARCH_DATABASE_LEXICAL_MAX_ROWS is ranked from them
(corpora.retrieval.lexical._pg_rank). Lists are kept for corpora past TOP_POSTINGS_MIN_PASSAGES;
the tests install the same triggers for every corpus, most with lists of a few postings so that
a small corpus has lists that leave passages out."""

import random
import threading

import pytest
from django.core.management import call_command
from django.db import connection, connections
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


def _install(top_postings: int) -> None:
    """The triggers keeping lists of `top_postings` for every corpus, in the test's transaction."""
    with connection.cursor() as cursor:
        for statement in schema.count_trigger_functions(top_postings=top_postings, min_passages=0):
            cursor.execute(statement)


@pytest.fixture
def short_lists(postgres, monkeypatch):
    _install(LIST)
    monkeypatch.setattr(schema, "TOP_POSTINGS", LIST)


@pytest.fixture
def full_lists(postgres):
    _install(schema.TOP_POSTINGS)


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
    # when one document is ingested (one statement, which gives the corpus its lists)
    ingest_text(corpus, "words.txt", _sections(7), schedule_embedding=False)
    stored, postings = _stored(corpus.pk), _postings(corpus.pk)
    # then each lexeme's list is its LIST best postings, and the bound is the best impact left out
    assert stored.keys() == postings.keys()
    for lexeme, best in postings.items():
        ids, impacts, bound = stored[lexeme]
        listed = sorted(zip(impacts, ids, strict=True), key=lambda p: (-p[0], p[1]))
        assert [pid for _, pid in listed] == [pid for pid, _ in best[:LIST]], lexeme
        assert [impact for impact, _ in listed] == pytest.approx(
            [impact for _, impact in best[:LIST]], rel=1e-6
        )
        assert bound == pytest.approx(best[LIST][1] if len(best) > LIST else 0, rel=1e-6)
    assert len(stored["zeppelin"][0]) == WORDS["zeppelin"] and stored["notic"][2] > 0


def test_a_corpus_gets_lists_when_it_passes_the_size(postgres, corpus):
    with connection.cursor() as cursor:
        for statement in schema.count_trigger_functions(top_postings=LIST, min_passages=SECTIONS + 10):
            cursor.execute(statement)
    # when a corpus is below the size, then it has no lists
    ingest_text(corpus, "a.txt", _sections(1), schedule_embedding=False)
    assert _stored(corpus.pk) == {}
    # when a document takes it past the size, then its lists are the best postings of both
    ingest_text(corpus, "b.txt", _sections(2), schedule_embedding=False)
    stored, postings = _stored(corpus.pk), _postings(corpus.pk)
    assert stored.keys() == postings.keys()
    for lexeme, best in postings.items():
        assert set(stored[lexeme][0]) == {pid for pid, _ in best[:LIST]}, lexeme
    assert len(stored["zeppelin"][0]) == 2 * WORDS["zeppelin"]


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
    # then no list holds a deleted passage, none holds more than twice LIST, and a posting a
    # list leaves out is within a few percent of its bound (written at an earlier mean length) ...
    assert not listed_anywhere & gone
    for lexeme, best in postings.items():
        ids, impacts, bound = stored[lexeme]
        assert len(ids) <= 2 * LIST and all(impact >= bound for impact in impacts)
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
def test_ranking_from_full_lists_is_the_full_ranking(full_lists, corpus, settings, query, limit):
    # given lists of TOP_POSTINGS (longer than this corpus's), and a corpus over the budget
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


def test_the_migration_fills_the_lists_of_corpora_past_the_size(transactional_db, user, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("top postings are PostgreSQL's")
    small, large = (corpus_create(creator=user, name=name) for name in ("Small", "Large"))
    ingest_text(small, "words.txt", _sections(3), schedule_embedding=False)
    for seed in (1, 2):
        ingest_text(large, f"w{seed}.txt", _sections(seed), schedule_embedding=False)
    # when the lists' migration is reverted and applied again with a size between the corpora's
    call_command("migrate", "corpora", "0004", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('corpora_lexeme_top') IS NULL")
        assert cursor.fetchone()[0]
    monkeypatch.setattr(schema, "TOP_POSTINGS", LIST)
    monkeypatch.setattr(schema, "TOP_POSTINGS_MIN_PASSAGES", SECTIONS + 10)
    try:
        call_command("migrate", "corpora", verbosity=0)
        # then only the larger corpus has lists, and they are its best postings
        assert _stored(small.pk) == {}
        stored, postings = _stored(large.pk), _postings(large.pk)
        assert stored.keys() == postings.keys()
        for lexeme, best in postings.items():
            ids, _, bound = stored[lexeme]
            assert set(ids) == {pid for pid, _ in best[:LIST]}, lexeme
            assert bound == pytest.approx(best[LIST][1] if len(best) > LIST else 0, rel=1e-6)
        # and a write that leaves the small corpus under the size still keeps none
        ingest_text(small, "more.txt", "One more clause about notice.\n", schedule_embedding=False)
        assert _stored(small.pk) == {}
    finally:
        # the triggers as every other test expects them
        monkeypatch.undo()
        with connection.cursor() as cursor:
            for statement in schema.top_postings_statements():
                if "FUNCTION" in statement:
                    cursor.execute(statement)


def test_concurrent_writers_keep_the_lists(transactional_db, user):
    """Ingestions and a deletion in one corpus with lists at once, each in its own connection
    and transaction: none deadlocks or fails, and the lists hold no deleted passage and leave
    out nothing above their bounds."""
    if connection.vendor != "postgresql":
        pytest.skip("top postings are PostgreSQL's")
    corpus = corpus_create(creator=user, name="Busy")
    try:
        with connection.cursor() as cursor:
            for statement in schema.count_trigger_functions(top_postings=LIST, min_passages=0):
                cursor.execute(statement)
        doomed = ingest_text(corpus, "doomed.txt", _sections(9), schedule_embedding=False).document
        gone = set(Passage.objects.filter(document=doomed).values_list("id", flat=True))
        errors: list[BaseException] = []
        start = threading.Barrier(4)

        def run(work) -> None:
            try:
                start.wait()
                work()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                connections.close_all()

        def ingest(first: int) -> None:
            mine = Corpus.objects.get(pk=corpus.pk)
            for seed in range(first, first + 3):
                ingest_text(mine, f"d{seed}.txt", _sections(seed), schedule_embedding=False)

        threads = [threading.Thread(target=run, args=(lambda k=k: ingest(10 * k),)) for k in range(3)]
        threads.append(
            threading.Thread(target=run, args=(lambda: document_delete(user=user, document=doomed),))
        )
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors
        stored, postings = _stored(corpus.pk), _postings(corpus.pk)
        assert stored.keys() >= postings.keys()
        assert not {pid for ids, _, _ in stored.values() for pid in ids} & gone
        for lexeme, best in postings.items():
            ids, _, bound = stored[lexeme]
            assert all(impact <= bound * 1.05 for pid, impact in best if pid not in ids), lexeme
    finally:
        with connection.cursor() as cursor:
            for statement in schema.top_postings_statements():
                if "FUNCTION" in statement:
                    cursor.execute(statement)
