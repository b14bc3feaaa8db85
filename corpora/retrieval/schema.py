"""The lexical index lives outside the ORM (an FTS5 table on SQLite, a generated tsvector on
PostgreSQL). Migrations call install(); a future migration that rebuilds corpora_passage on
SQLite must call it again, since SQLite drops triggers with the old table.

On PostgreSQL, corpora_lexeme_count keeps how many of a corpus's passages hold each lexeme, and
corpora_passage_tally its passage count, id sum and tsvector positions, kept by triggers in
the transaction that writes the passages (install_lexeme_counts). BM25 needs a term's document
frequency and the mean passage length, and computing them from the passages reads every
passage holding the term (~350 ms for a common term at a million passages), or a sample of the
corpus, once per term and process and again whenever the corpus changes. Writers of passages
lock the corpus row first (corpora.services); the triggers also take a per-corpus advisory
lock, so that two transactions never update the same counts in opposite orders."""

SQLITE_INSTALL = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS corpora_passage_fts USING fts5("
    "text, headings, corpus_key, tokenize = 'porter unicode61 remove_diacritics 2')",
    "DROP TRIGGER IF EXISTS corpora_passage_fts_ai",
    "DROP TRIGGER IF EXISTS corpora_passage_fts_ad",
    "DROP TRIGGER IF EXISTS corpora_passage_fts_au",
    """CREATE TRIGGER corpora_passage_fts_ai AFTER INSERT ON corpora_passage BEGIN
        INSERT INTO corpora_passage_fts(rowid, text, headings, corpus_key) VALUES (
            new.id, new.text,
            (SELECT group_concat(value, ' ') FROM json_each(new.heading_path)),
            'c' || new.corpus_id);
    END""",
    """CREATE TRIGGER corpora_passage_fts_ad AFTER DELETE ON corpora_passage BEGIN
        DELETE FROM corpora_passage_fts WHERE rowid = old.id;
    END""",
    """CREATE TRIGGER corpora_passage_fts_au AFTER UPDATE OF text, heading_path, corpus_id
    ON corpora_passage BEGIN
        DELETE FROM corpora_passage_fts WHERE rowid = old.id;
        INSERT INTO corpora_passage_fts(rowid, text, headings, corpus_key) VALUES (
            new.id, new.text,
            (SELECT group_concat(value, ' ') FROM json_each(new.heading_path)),
            'c' || new.corpus_id);
    END""",
    # Rows that existed before the index did.
    """INSERT INTO corpora_passage_fts(rowid, text, headings, corpus_key)
        SELECT p.id, p.text,
            (SELECT group_concat(value, ' ') FROM json_each(p.heading_path)),
            'c' || p.corpus_id
        FROM corpora_passage p
        WHERE p.id NOT IN (SELECT rowid FROM corpora_passage_fts)""",
]
SQLITE_UNINSTALL = [
    "DROP TRIGGER IF EXISTS corpora_passage_fts_ai",
    "DROP TRIGGER IF EXISTS corpora_passage_fts_ad",
    "DROP TRIGGER IF EXISTS corpora_passage_fts_au",
    "DROP TABLE IF EXISTS corpora_passage_fts",
]
POSTGRES_INSTALL = [
    """ALTER TABLE corpora_passage ADD COLUMN IF NOT EXISTS search_vector tsvector
        GENERATED ALWAYS AS (
            setweight(to_tsvector('english'::regconfig, text), 'A')
            || setweight(to_tsvector('english'::regconfig, heading_path), 'C')
        ) STORED""",
    "CREATE INDEX IF NOT EXISTS corpora_passage_search_gin ON corpora_passage USING gin (search_vector)",
]
POSTGRES_UNINSTALL = [
    "DROP INDEX IF EXISTS corpora_passage_search_gin",
    "ALTER TABLE corpora_passage DROP COLUMN IF EXISTS search_vector",
]


# Top postings per (corpus, lexeme): the passages where the lexeme weighs most in BM25, so that a
# ranking at a million passages reads a few thousand list entries instead of every passage
# holding the query's terms (corpora.retrieval.lexical._pg_top_candidates). A posting's impact is
# BM25's term-frequency factor (the IDF, the same for all of a lexeme's postings, left out),
# computed with the corpus's mean length when the posting was written. A list holds at least the
# TOP_POSTINGS best postings it has seen and at most twice as many, in no order, and its `bound`
# is at least the impact of every posting of the lexeme it does not hold: a list takes a new
# posting only above it, and a deleted passage leaves its lists. A corpus gets lists when its
# passages first exceed TOP_POSTINGS_MIN_PASSAGES (smaller corpora score every matching passage,
# and keeping lists would make their ingestion several times slower); the tally's
# `top_postings` says it has them. Migration 0005 adds them (install_top_postings).
TOP_POSTINGS = 1000
TOP_POSTINGS_MIN_PASSAGES = 10_000
# The term index's BM25 (corpora.retrieval.lexical): k1, b, and the weight of heading words.
BM25_K1, BM25_B, BM25_HEADING_WEIGHT = 1.2, 0.75, 0.5
# The advisory lock's first key names these counts (a constant of our own), its second the corpus.
_LOCK_KEY = 1818583908


def count_trigger_functions(
    *, top_postings: int = 0, min_passages: int = TOP_POSTINGS_MIN_PASSAGES
) -> list[str]:
    """The trigger functions that keep the counts and the tally, and, when `top_postings` is
    positive (TOP_POSTINGS; tests use shorter lists), lists of that many postings a lexeme for
    the corpora of more than `min_passages` passages."""
    # Insertions append their postings to the lists (a corpus that has just passed
    # min_passages gets its lists built from all its passages instead); deletions take their
    # ids out.
    apply_top = f"""
        IF sign > 0 THEN
            SELECT coalesce(array_agg(corpus_id ORDER BY corpus_id), '{{}}') INTO filled
            FROM corpora_passage_tally
            WHERE corpus_id IN (SELECT corpus_id FROM changed_rows)
                AND passages > {min_passages} AND NOT top_postings;
            PERFORM corpora_top_fill(c, {top_postings}) FROM unnest(filled) AS c ORDER BY c;
            INSERT INTO corpora_lexeme_top AS t (corpus_id, lexeme, passage_ids, impacts, bound)
            SELECT r.corpus_id, x.lexeme, array_agg(r.id), array_agg(x.impact), 0
            FROM changed_rows r JOIN corpora_passage_tally a
                ON a.corpus_id = r.corpus_id AND a.top_postings AND a.corpus_id <> ALL(filled),
            corpora_passage_impacts(r.search_vector, a.positions / a.passages) AS x
            GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (corpus_id, lexeme) DO UPDATE SET (passage_ids, impacts, bound) = (
                SELECT * FROM corpora_top_add(t.passage_ids, t.impacts, t.bound,
                    excluded.passage_ids, excluded.impacts, {top_postings}))
            -- Most new postings of a common lexeme fall below its full list's bound.
            WHERE EXISTS (SELECT 1 FROM unnest(excluded.impacts) AS m WHERE m > t.bound);
        ELSE
            UPDATE corpora_lexeme_top t SET (passage_ids, impacts) = (
                SELECT * FROM corpora_top_without(t.passage_ids, t.impacts, d.ids))
            FROM (
                SELECT r.corpus_id, l AS lexeme, array_agg(r.id) AS ids
                FROM changed_rows r JOIN corpora_passage_tally a
                    ON a.corpus_id = r.corpus_id AND a.top_postings,
                unnest(tsvector_to_array(r.search_vector)) AS l GROUP BY 1, 2
            ) d
            WHERE t.corpus_id = d.corpus_id AND t.lexeme = d.lexeme AND t.passage_ids && d.ids;
        END IF;"""
    # An edited passage leaves its old lists, and its new postings raise their lexemes' bounds
    # rather than enter the lists: rankings score candidates from the passages themselves.
    update_top = """
        UPDATE corpora_lexeme_top t SET (passage_ids, impacts) = (
            SELECT * FROM corpora_top_without(t.passage_ids, t.impacts, ARRAY[OLD.id]))
        WHERE t.corpus_id = OLD.corpus_id AND t.lexeme = ANY(tsvector_to_array(OLD.search_vector))
            AND OLD.id = ANY(t.passage_ids);
        INSERT INTO corpora_lexeme_top AS t (corpus_id, lexeme, passage_ids, impacts, bound)
        SELECT NEW.corpus_id, x.lexeme, '{}', '{}', x.impact
        FROM corpora_passage_tally a,
        corpora_passage_impacts(NEW.search_vector, a.positions / a.passages) AS x
        WHERE a.corpus_id = NEW.corpus_id AND a.top_postings ORDER BY 2
        ON CONFLICT (corpus_id, lexeme) DO UPDATE SET bound = greatest(t.bound, excluded.bound);"""
    truncated = "corpora_lexeme_count, corpora_passage_tally"
    if top_postings:
        truncated += ", corpora_lexeme_top"
    corpus_top = "\n        DELETE FROM corpora_lexeme_top WHERE corpus_id = OLD.id;" if top_postings else ""
    return [
        # Insertions add (NEW TABLE), deletions take away (OLD TABLE): both triggers name their
        # transition table changed_rows.
        f"""CREATE OR REPLACE FUNCTION corpora_lexeme_count_apply() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
        filled bigint[];
    BEGIN
        PERFORM pg_advisory_xact_lock({_LOCK_KEY}, mod(c, 2147483647)::integer)
        FROM (SELECT DISTINCT corpus_id AS c FROM changed_rows ORDER BY 1) s;
        -- In key order, so that transactions meet on rows in one order.
        INSERT INTO corpora_lexeme_count AS t (corpus_id, lexeme, passages)
        SELECT r.corpus_id, l.lexeme, sign * count(*)
        FROM changed_rows r, unnest(tsvector_to_array(r.search_vector)) AS l(lexeme)
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (corpus_id, lexeme) DO UPDATE SET passages = t.passages + excluded.passages;
        PERFORM corpora_passage_tally_add(
            corpus_id, sign * count(*), sign * sum(id), sign * sum(corpora_tsvector_positions(search_vector))
        ) FROM changed_rows GROUP BY corpus_id ORDER BY corpus_id;{apply_top if top_postings else ""}
        RETURN NULL;
    END $$""",
        # Passages are not edited in place (ingestion adds, deletion removes), but an edit of
        # the indexed columns moves the counts all the same.
        f"""CREATE OR REPLACE FUNCTION corpora_lexeme_count_update() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock({_LOCK_KEY}, mod(c, 2147483647)::integer)
        FROM (SELECT DISTINCT c FROM (VALUES (OLD.corpus_id), (NEW.corpus_id)) v(c) ORDER BY 1) s;
        INSERT INTO corpora_lexeme_count AS t (corpus_id, lexeme, passages)
        SELECT corpus_id, lexeme, sum(n) FROM (
            SELECT OLD.corpus_id AS corpus_id, l AS lexeme, -1 AS n
            FROM unnest(tsvector_to_array(OLD.search_vector)) AS l
            UNION ALL
            SELECT NEW.corpus_id, l, 1 FROM unnest(tsvector_to_array(NEW.search_vector)) AS l
        ) d GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2
        ON CONFLICT (corpus_id, lexeme) DO UPDATE SET passages = t.passages + excluded.passages;
        PERFORM corpora_passage_tally_add(c, sum(n), sum(ids), sum(k)) FROM (VALUES
            (OLD.corpus_id, -1, -OLD.id, -corpora_tsvector_positions(OLD.search_vector)),
            (NEW.corpus_id, 1, NEW.id, corpora_tsvector_positions(NEW.search_vector))
        ) AS v(c, n, ids, k) GROUP BY c ORDER BY c;{update_top if top_postings else ""}
        RETURN NULL;
    END $$""",
        f"""CREATE OR REPLACE FUNCTION corpora_lexeme_count_truncate() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        TRUNCATE {truncated};
        RETURN NULL;
    END $$""",
        f"""CREATE OR REPLACE FUNCTION corpora_lexeme_count_corpus_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM corpora_lexeme_count WHERE corpus_id = OLD.id;
        DELETE FROM corpora_passage_tally WHERE corpus_id = OLD.id;{corpus_top}
        RETURN NULL;
    END $$""",
    ]


# Counts per (corpus, lexeme). A lexeme's count reaching zero keeps its row (deleting it would
# cost a second pass); a deleted corpus takes its rows with it, a TRUNCATE of the passages all.
POSTGRES_LEXEME_COUNTS = [
    """CREATE TABLE IF NOT EXISTS corpora_lexeme_count (
        corpus_id bigint NOT NULL,
        lexeme text NOT NULL,
        passages integer NOT NULL,
        PRIMARY KEY (corpus_id, lexeme)
    )""",
    # Each corpus's passage count, id sum and tsvector positions: what BM25's IDF and mean
    # length and the statistics' cache keys need (corpora.retrieval.lexical), without an
    # aggregate over the corpus's passages (~400 ms at a million, at every version an
    # embedding batch makes).
    """CREATE TABLE IF NOT EXISTS corpora_passage_tally (
        corpus_id bigint PRIMARY KEY,
        passages bigint NOT NULL,
        id_sum numeric NOT NULL,
        positions numeric NOT NULL
    )""",
    # Adds to (or, with negative numbers, takes from) a corpus's tally.
    """CREATE OR REPLACE FUNCTION corpora_passage_tally_add(c bigint, n bigint, ids numeric, k numeric)
    RETURNS void LANGUAGE sql AS $$
        INSERT INTO corpora_passage_tally AS t (corpus_id, passages, id_sum, positions)
        VALUES (c, n, ids, k)
        ON CONFLICT (corpus_id) DO UPDATE
        SET passages = t.passages + excluded.passages, id_sum = t.id_sum + excluded.id_sum,
            positions = t.positions + excluded.positions
    $$""",
    # A passage's length as BM25 counts it: its tsvector's positions.
    """CREATE OR REPLACE FUNCTION corpora_tsvector_positions(v tsvector) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v) AS u
    $$""",
    *count_trigger_functions(),
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_ai ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_ad ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_au ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_at ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_cd ON corpora_corpus",
    """CREATE TRIGGER corpora_lexeme_count_ai AFTER INSERT ON corpora_passage
        REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
        EXECUTE FUNCTION corpora_lexeme_count_apply()""",
    """CREATE TRIGGER corpora_lexeme_count_ad AFTER DELETE ON corpora_passage
        REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
        EXECUTE FUNCTION corpora_lexeme_count_apply()""",
    """CREATE TRIGGER corpora_lexeme_count_au AFTER UPDATE OF id, text, heading_path, corpus_id
        ON corpora_passage FOR EACH ROW EXECUTE FUNCTION corpora_lexeme_count_update()""",
    """CREATE TRIGGER corpora_lexeme_count_at AFTER TRUNCATE ON corpora_passage
        FOR EACH STATEMENT EXECUTE FUNCTION corpora_lexeme_count_truncate()""",
    """CREATE TRIGGER corpora_lexeme_count_cd AFTER DELETE ON corpora_corpus
        FOR EACH ROW EXECUTE FUNCTION corpora_lexeme_count_corpus_delete()""",
    # The passages written before the table was.
    """INSERT INTO corpora_lexeme_count (corpus_id, lexeme, passages)
        SELECT p.corpus_id, l.lexeme, count(*)
        FROM corpora_passage p, unnest(tsvector_to_array(p.search_vector)) AS l(lexeme)
        GROUP BY 1, 2
        ON CONFLICT (corpus_id, lexeme) DO NOTHING""",
    """INSERT INTO corpora_passage_tally (corpus_id, passages, id_sum, positions)
        SELECT corpus_id, count(*), sum(id), sum(corpora_tsvector_positions(search_vector))
        FROM corpora_passage GROUP BY 1
        ON CONFLICT (corpus_id) DO NOTHING""",
]
POSTGRES_LEXEME_COUNTS_UNINSTALL = [
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_ai ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_ad ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_au ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_at ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_lexeme_count_cd ON corpora_corpus",
    "DROP FUNCTION IF EXISTS corpora_lexeme_count_apply()",
    "DROP FUNCTION IF EXISTS corpora_lexeme_count_update()",
    "DROP FUNCTION IF EXISTS corpora_lexeme_count_truncate()",
    "DROP FUNCTION IF EXISTS corpora_lexeme_count_corpus_delete()",
    "DROP TABLE IF EXISTS corpora_lexeme_count",
    "DROP TABLE IF EXISTS corpora_passage_tally",
    "DROP FUNCTION IF EXISTS corpora_passage_tally_add(bigint, bigint, numeric, numeric)",
    "DROP FUNCTION IF EXISTS corpora_tsvector_positions(tsvector)",
]


def top_postings_statements() -> list[str]:
    """Migration 0005's statements, with the module's sizes as they are when it runs."""
    return [
        """CREATE TABLE IF NOT EXISTS corpora_lexeme_top (
            corpus_id bigint NOT NULL,
            lexeme text NOT NULL,
            passage_ids bigint[] NOT NULL,
            impacts real[] NOT NULL,
            bound real NOT NULL,
            PRIMARY KEY (corpus_id, lexeme)
        )""",
        # Uncompressed: a list is rewritten whenever it takes a posting, and compressing it again
        # was most of what keeping the lists cost ingestion (ids and impacts barely compress).
        "ALTER TABLE corpora_lexeme_top "
        "ALTER passage_ids SET STORAGE EXTERNAL, ALTER impacts SET STORAGE EXTERNAL",
        "ALTER TABLE corpora_passage_tally "
        "ADD COLUMN IF NOT EXISTS top_postings boolean NOT NULL DEFAULT false",
        # Each lexeme of a passage with its impact: the term index's term frequency (body words
        # count 1, heading words less) and length (the tsvector's positions).
        # (PL/pgSQL, which the planner cannot inline: the length is computed once a passage rather
        # than once a lexeme.)
        f"""CREATE OR REPLACE FUNCTION corpora_passage_impacts(v tsvector, average_length float8)
        RETURNS TABLE (lexeme text, impact real) LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
            norm float8 := {BM25_K1}
                * (1 - {BM25_B} + {BM25_B} * corpora_tsvector_positions(v) / average_length);
        BEGIN
            RETURN QUERY SELECT u.lexeme, (f.tf * {BM25_K1 + 1} / (f.tf + norm))::real
            FROM unnest(v) AS u,
            LATERAL (SELECT coalesce(cardinality(array_positions(u.weights, 'A')), 0)
                + {BM25_HEADING_WEIGHT} * coalesce(cardinality(array_positions(u.weights, 'C')), 0) AS tf) f;
        END $$""",
        # A list's best `n`, its bound raised to the best left out.
        """CREATE OR REPLACE FUNCTION corpora_top_trim(
            ids bigint[], impacts real[], bound real, n integer,
            OUT kept_ids bigint[], OUT kept_impacts real[], OUT kept_bound real)
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT coalesce(array_agg(i) FILTER (WHERE r <= n), '{}'),
                coalesce(array_agg(m) FILTER (WHERE r <= n), '{}'),
                greatest(bound, max(m) FILTER (WHERE r > n))
            FROM (
                SELECT i, m, row_number() OVER (ORDER BY m DESC, i) AS r FROM unnest(ids, impacts) AS x(i, m)
            ) s
        $$""",
        # A list with the new postings above its bound appended; past twice `n` postings, trimmed
        # to its best `n` (a sort per `n` postings taken rather than one per write).
        """CREATE OR REPLACE FUNCTION corpora_top_add(
            ids bigint[], impacts real[], bound real, new_ids bigint[], new_impacts real[], n integer,
            OUT kept_ids bigint[], OUT kept_impacts real[], OUT kept_bound real)
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        BEGIN
            SELECT ids || coalesce(array_agg(i), '{}'), impacts || coalesce(array_agg(m), '{}')
            INTO kept_ids, kept_impacts
            FROM unnest(new_ids, new_impacts) AS x(i, m) WHERE m > bound;
            kept_bound := bound;
            IF cardinality(kept_ids) > 2 * n THEN
                SELECT * INTO kept_ids, kept_impacts, kept_bound
                FROM corpora_top_trim(kept_ids, kept_impacts, kept_bound, n);
            END IF;
        END $$""",
        # A corpus's lists built from all its passages, and the tally's flag set.
        """CREATE OR REPLACE FUNCTION corpora_top_fill(c bigint, n integer) RETURNS void
        LANGUAGE sql AS $$
            DELETE FROM corpora_lexeme_top WHERE corpus_id = c;
            INSERT INTO corpora_lexeme_top (corpus_id, lexeme, passage_ids, impacts, bound)
            SELECT c, lexeme, array_agg(id) FILTER (WHERE r <= n), array_agg(impact) FILTER (WHERE r <= n),
                coalesce(max(impact) FILTER (WHERE r > n), 0)
            FROM (
                SELECT x.lexeme, p.id, x.impact,
                    row_number() OVER (PARTITION BY x.lexeme ORDER BY x.impact DESC, p.id) AS r
                FROM corpora_passage p JOIN corpora_passage_tally a ON a.corpus_id = p.corpus_id,
                corpora_passage_impacts(p.search_vector, a.positions / a.passages) AS x
                WHERE p.corpus_id = c
            ) s
            GROUP BY lexeme;
            UPDATE corpora_passage_tally SET top_postings = true WHERE corpus_id = c;
        $$""",
        # A list without the `removed` passages, in its order.
        """CREATE OR REPLACE FUNCTION corpora_top_without(
            ids bigint[], impacts real[], removed bigint[], OUT kept_ids bigint[], OUT kept_impacts real[])
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT coalesce(array_agg(i ORDER BY o), '{}'), coalesce(array_agg(m ORDER BY o), '{}')
            FROM unnest(ids, impacts) WITH ORDINALITY AS x(i, m, o) WHERE i <> ALL(removed)
        $$""",
        *count_trigger_functions(top_postings=TOP_POSTINGS, min_passages=TOP_POSTINGS_MIN_PASSAGES),
        # The corpora already past the size.
        f"""SELECT corpora_top_fill(corpus_id, {TOP_POSTINGS}) FROM corpora_passage_tally
            WHERE passages > {TOP_POSTINGS_MIN_PASSAGES} ORDER BY corpus_id""",
    ]


POSTGRES_TOP_POSTINGS_UNINSTALL = [
    *count_trigger_functions(),
    "DROP TABLE IF EXISTS corpora_lexeme_top",
    "ALTER TABLE corpora_passage_tally DROP COLUMN IF EXISTS top_postings",
    "DROP FUNCTION IF EXISTS corpora_top_fill(bigint, integer)",
    "DROP FUNCTION IF EXISTS corpora_passage_impacts(tsvector, float8)",
    "DROP FUNCTION IF EXISTS corpora_top_trim(bigint[], real[], real, integer)",
    "DROP FUNCTION IF EXISTS corpora_top_add(bigint[], real[], real, bigint[], real[], integer)",
    "DROP FUNCTION IF EXISTS corpora_top_without(bigint[], real[], bigint[])",
]


def _run(schema_editor, statements: list[str]) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def install(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _run(schema_editor, SQLITE_INSTALL)
    elif vendor == "postgresql":
        _run(schema_editor, POSTGRES_INSTALL)
    else:
        raise NotImplementedError(f"no lexical index for the {vendor} backend")


def uninstall(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _run(schema_editor, SQLITE_UNINSTALL)
    elif vendor == "postgresql":
        _run(schema_editor, POSTGRES_UNINSTALL)


def install_lexeme_counts(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_LEXEME_COUNTS)


def uninstall_lexeme_counts(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_LEXEME_COUNTS_UNINSTALL)


def install_top_postings(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, top_postings_statements())


def uninstall_top_postings(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_TOP_POSTINGS_UNINSTALL)
