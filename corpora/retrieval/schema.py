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
lock, so that two transactions never update the same counts in opposite orders.

On PostgreSQL too, corpora_posting keeps per corpus and lexeme the posting lists BM25 is summed
from (corpora.retrieval.lexical._pg_postings_rank), written by a trigger in the same
transaction (POSTGRES_POSTINGS)."""

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


def _clearing_functions(prefix: str, tables: tuple[str, ...]) -> list[str]:
    """The trigger functions `<prefix>_truncate` (a TRUNCATE of the passages empties `tables`)
    and `<prefix>_corpus_delete` (a deleted corpus takes its rows of `tables`)."""
    deletes = "\n".join(f"        DELETE FROM {table} WHERE corpus_id = OLD.id;" for table in tables)  # noqa: S608
    return [
        f"""CREATE OR REPLACE FUNCTION {prefix}_truncate() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        TRUNCATE {", ".join(tables)};
        RETURN NULL;
    END $$""",
        f"""CREATE OR REPLACE FUNCTION {prefix}_corpus_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
{deletes}
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
    # Insertions add (NEW TABLE), deletions take away (OLD TABLE): both triggers name their
    # transition table changed_rows. The advisory lock's first key names these counts (a
    # constant of our own), its second the corpus.
    """CREATE OR REPLACE FUNCTION corpora_lexeme_count_apply() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    BEGIN
        PERFORM pg_advisory_xact_lock(1818583908, mod(c, 2147483647)::integer)
        FROM (SELECT DISTINCT corpus_id AS c FROM changed_rows ORDER BY 1) s;
        -- In key order, so that transactions meet on rows in one order.
        INSERT INTO corpora_lexeme_count AS t (corpus_id, lexeme, passages)
        SELECT r.corpus_id, l.lexeme, sign * count(*)
        FROM changed_rows r, unnest(tsvector_to_array(r.search_vector)) AS l(lexeme)
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (corpus_id, lexeme) DO UPDATE SET passages = t.passages + excluded.passages;
        PERFORM corpora_passage_tally_add(
            corpus_id, sign * count(*), sign * sum(id), sign * sum(corpora_tsvector_positions(search_vector))
        ) FROM changed_rows GROUP BY corpus_id ORDER BY corpus_id;
        RETURN NULL;
    END $$""",
    # Passages are not edited in place (ingestion adds, deletion removes), but an edit of the
    # indexed columns moves the counts all the same.
    """CREATE OR REPLACE FUNCTION corpora_lexeme_count_update() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(1818583908, mod(c, 2147483647)::integer)
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
        ) AS v(c, n, ids, k) GROUP BY c ORDER BY c;
        RETURN NULL;
    END $$""",
    *_clearing_functions("corpora_lexeme_count", ("corpora_lexeme_count", "corpora_passage_tally")),
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


# Postings per (corpus, lexeme): the passages holding the lexeme with what BM25 needs of each,
# so that a large corpus's lexical ranking reads a few packed lists instead of each matching
# passage's tsvector (~1.6 us of heap access a passage: 55-90 ms a query at a million
# passages, README). Each insert statement writes a batch: one segment per lexeme its passages
# hold. Once a corpus has POSTING_MERGE_FANOUT batches of one size class (tier:
# floor(log_fanout(passages))), they are merged into one batch of a higher class, every
# lexeme's segments concatenated in one statement. A lexeme's list is then at most
# fanout - 1 segments a tier, and each posting is rewritten about log_fanout(batches) times (a
# size-tiered merge, as Lucene's). Arrays are big-endian and aligned: ids int8, frequencies
# int2 (twice the text positions plus the heading positions: headings weigh half), lengths
# int4 (the passage's positions). Deleting passages leaves their postings (the ranking checks
# that its results still exist; the lexeme counts, which give IDF, are exact); a corpus's
# deletion or a TRUNCATE takes them, and corpora_posting_rebuild drops them. Passages are not
# edited in place (ingestion adds, deletion removes); an edit of the indexed columns reaches
# the lists only through a rebuild. Stored uncompressed: reading a list is the cost, not its
# size.
POSTING_MERGE_FANOUT = 8
# The segment of each (corpus, lexeme) in the rows of `source`, a relation of passages (id,
# corpus_id, search_vector), for the batch `batch` names. No ORDER BY in the aggregates: the three
# arrays stay aligned because one aggregate pass feeds them the same rows in the same order.
# OFFSET 0 keeps the subquery from being flattened into the join, which computed each
# passage's length once per lexeme it holds (8x the statement's time).
_SEGMENTS_OF = """INSERT INTO corpora_posting
    (corpus_id, lexeme, batch, postings, ids, frequencies, lengths)
    SELECT r.corpus_id, u.lexeme, r.batch, count(*),
        string_agg(int8send(r.id), ''::bytea),
        string_agg(int2send(corpora_posting_frequency(u.weights)), ''::bytea),
        string_agg(int4send(r.length), ''::bytea)
    FROM (
        SELECT id, corpus_id, search_vector, {batch} AS batch,
            least(corpora_tsvector_positions(search_vector), 2147483647)::integer AS length
        FROM {source}
        OFFSET 0
    ) r, unnest(r.search_vector) AS u
    GROUP BY r.corpus_id, r.batch, u.lexeme"""
POSTGRES_POSTINGS = [
    """CREATE TABLE IF NOT EXISTS corpora_posting_batch (
        id bigserial PRIMARY KEY,
        corpus_id bigint NOT NULL,
        tier smallint NOT NULL,
        passages bigint NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS corpora_posting_batch_corpus ON corpora_posting_batch (corpus_id, tier)",
    """CREATE TABLE IF NOT EXISTS corpora_posting (
        corpus_id bigint NOT NULL,
        lexeme text NOT NULL,
        batch bigint NOT NULL,
        postings integer NOT NULL,
        ids bytea NOT NULL,
        frequencies bytea NOT NULL,
        lengths bytea NOT NULL
    )""",
    "ALTER TABLE corpora_posting ALTER COLUMN ids SET STORAGE EXTERNAL",
    "ALTER TABLE corpora_posting ALTER COLUMN frequencies SET STORAGE EXTERNAL",
    "ALTER TABLE corpora_posting ALTER COLUMN lengths SET STORAGE EXTERNAL",
    "CREATE INDEX IF NOT EXISTS corpora_posting_lexeme ON corpora_posting (corpus_id, lexeme)",
    "CREATE INDEX IF NOT EXISTS corpora_posting_batch ON corpora_posting (batch)",
    f"""CREATE OR REPLACE FUNCTION corpora_posting_tier(n bigint) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT floor(log({POSTING_MERGE_FANOUT}, greatest(n, 1)) + 1e-9)::smallint
    $$""",
    # A lexeme's frequency in a passage as the postings keep it.
    """CREATE OR REPLACE FUNCTION corpora_posting_frequency(weights text[]) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT least(2 * coalesce(cardinality(array_positions(weights, 'A')), 0)
            + coalesce(cardinality(array_positions(weights, 'C')), 0), 32767)::smallint
    $$""",
    # Merges the corpus's tiers holding `fanout` batches or more, lowest first, until none does.
    f"""CREATE OR REPLACE FUNCTION corpora_posting_merge(c bigint) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
        full_tier smallint;
        merged bigint[];
        total bigint;
        target bigint;
    BEGIN
        LOOP
            SELECT tier INTO full_tier FROM corpora_posting_batch WHERE corpus_id = c
            GROUP BY tier HAVING count(*) >= {POSTING_MERGE_FANOUT} ORDER BY tier LIMIT 1;
            EXIT WHEN full_tier IS NULL;
            WITH gone AS (
                DELETE FROM corpora_posting_batch WHERE corpus_id = c AND tier = full_tier
                RETURNING id, passages
            )
            SELECT array_agg(id), sum(passages) INTO merged, total FROM gone;
            INSERT INTO corpora_posting_batch (corpus_id, tier, passages)
            VALUES (c, greatest(corpora_posting_tier(total), full_tier + 1), total)
            RETURNING id INTO target;
            WITH gone AS (
                DELETE FROM corpora_posting WHERE batch = ANY(merged)
                RETURNING corpus_id, lexeme, postings, ids, frequencies, lengths
            )
            INSERT INTO corpora_posting (corpus_id, lexeme, batch, postings, ids, frequencies, lengths)
            SELECT corpus_id, lexeme, target, sum(postings), string_agg(ids, ''::bytea),
                string_agg(frequencies, ''::bytea), string_agg(lengths, ''::bytea)
            FROM gone GROUP BY corpus_id, lexeme;
        END LOOP;
    END $$""",  # noqa: S608 (a constant)
    # A batch per corpus of the statement's new passages, then that corpus's merges.
    f"""CREATE OR REPLACE FUNCTION corpora_posting_add() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        c bigint;
        n bigint;
        batch_id bigint;
    BEGIN
        -- The lexeme counts' lock: one writer of a corpus's postings at a time.
        FOR c, n IN SELECT corpus_id, count(*) FROM changed_rows GROUP BY 1 ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1818583908, mod(c, 2147483647)::integer);
            INSERT INTO corpora_posting_batch (corpus_id, tier, passages)
            VALUES (c, corpora_posting_tier(n), n) RETURNING id INTO batch_id;
            {_SEGMENTS_OF.format(batch="batch_id", source="changed_rows WHERE corpus_id = c")};
            PERFORM corpora_posting_merge(c);
        END LOOP;
        RETURN NULL;
    END $$""",  # noqa: S608 (a constant)
    # A corpus's lists written again from its passages, as one batch: for the passages stored
    # before the lists were, and to drop the postings of deleted passages
    # (manage.py postings_rebuild).
    f"""CREATE OR REPLACE FUNCTION corpora_posting_rebuild(c bigint) RETURNS bigint
    LANGUAGE plpgsql AS $$
    DECLARE
        n bigint;
        batch_id bigint;
    BEGIN
        PERFORM pg_advisory_xact_lock(1818583908, mod(c, 2147483647)::integer);
        DELETE FROM corpora_posting WHERE corpus_id = c;
        DELETE FROM corpora_posting_batch WHERE corpus_id = c;
        SELECT count(*) INTO n FROM corpora_passage WHERE corpus_id = c;
        IF n > 0 THEN
            INSERT INTO corpora_posting_batch (corpus_id, tier, passages)
            VALUES (c, corpora_posting_tier(n), n) RETURNING id INTO batch_id;
            {_SEGMENTS_OF.format(batch="batch_id", source="corpora_passage WHERE corpus_id = c")};
        END IF;
        RETURN n;
    END $$""",  # noqa: S608 (a constant)
    *_clearing_functions("corpora_posting", ("corpora_posting", "corpora_posting_batch")),
    "DROP TRIGGER IF EXISTS corpora_posting_ai ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_posting_at ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_posting_cd ON corpora_corpus",
    """CREATE TRIGGER corpora_posting_ai AFTER INSERT ON corpora_passage
        REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
        EXECUTE FUNCTION corpora_posting_add()""",
    """CREATE TRIGGER corpora_posting_at AFTER TRUNCATE ON corpora_passage
        FOR EACH STATEMENT EXECUTE FUNCTION corpora_posting_truncate()""",
    """CREATE TRIGGER corpora_posting_cd AFTER DELETE ON corpora_corpus
        FOR EACH ROW EXECUTE FUNCTION corpora_posting_corpus_delete()""",
]
# The passages written before the table was: a batch per corpus (corpora_posting_rebuild).
POSTGRES_POSTINGS_FILL = ["SELECT corpora_posting_rebuild(id) FROM corpora_corpus ORDER BY id"]
POSTGRES_POSTINGS_UNINSTALL = [
    "DROP TRIGGER IF EXISTS corpora_posting_ai ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_posting_at ON corpora_passage",
    "DROP TRIGGER IF EXISTS corpora_posting_cd ON corpora_corpus",
    "DROP FUNCTION IF EXISTS corpora_posting_add()",
    "DROP FUNCTION IF EXISTS corpora_posting_truncate()",
    "DROP FUNCTION IF EXISTS corpora_posting_corpus_delete()",
    "DROP FUNCTION IF EXISTS corpora_posting_merge(bigint)",
    "DROP FUNCTION IF EXISTS corpora_posting_rebuild(bigint)",
    "DROP FUNCTION IF EXISTS corpora_posting_frequency(text[])",
    "DROP FUNCTION IF EXISTS corpora_posting_tier(bigint)",
    "DROP TABLE IF EXISTS corpora_posting",
    "DROP TABLE IF EXISTS corpora_posting_batch",
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


def install_postings(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, [*POSTGRES_POSTINGS, *POSTGRES_POSTINGS_FILL])


def uninstall_postings(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_POSTINGS_UNINSTALL)
