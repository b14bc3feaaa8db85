from django.db import migrations

from corpora.retrieval import schema


class Migration(migrations.Migration):
    """PostgreSQL: each corpus's top postings per lexeme, kept by the same triggers as the
    counts (corpora/retrieval/schema.py), filled from the passages already stored. Nothing on
    SQLite."""

    dependencies = [("corpora", "0004_lexeme_counts")]

    operations = [migrations.RunPython(schema.install_top_postings, schema.uninstall_top_postings)]
