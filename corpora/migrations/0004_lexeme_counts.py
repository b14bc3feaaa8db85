from django.db import migrations

from corpora.retrieval import schema


class Migration(migrations.Migration):
    """PostgreSQL: per-corpus lexeme counts kept by triggers (corpora/retrieval/schema.py),
    filled from the passages already stored (a few minutes at a million passages). Nothing on
    SQLite, whose FTS5 counts a term's rows from its own index."""

    dependencies = [("corpora", "0003_vector_store")]

    operations = [migrations.RunPython(schema.install_lexeme_counts, schema.uninstall_lexeme_counts)]
