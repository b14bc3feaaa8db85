from django.db import migrations

from corpora.retrieval import schema


class Migration(migrations.Migration):
    """PostgreSQL: per-corpus posting lists of each lexeme with what BM25 needs, kept by a
    trigger (corpora/retrieval/schema.py) and filled from the passages already stored. Nothing
    on SQLite, whose FTS5 table is its own inverted index."""

    dependencies = [("corpora", "0004_lexeme_counts")]

    operations = [migrations.RunPython(schema.install_postings, schema.uninstall_postings)]
