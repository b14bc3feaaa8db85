"""The lexical index lives outside the ORM (an FTS5 table on SQLite, a generated tsvector on
PostgreSQL). Migrations call install(); a future migration that rebuilds corpora_passage on
SQLite must call it again, since SQLite drops triggers with the old table."""

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
