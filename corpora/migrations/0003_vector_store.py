import django.db.models.deletion
from django.db import migrations, models

from corpora.retrieval import pgvector


class Migration(migrations.Migration):
    """The pgvector table (corpora/retrieval/pgvector.py), created in SQL where the server has
    the extension and filled from the stored embeddings; nothing on SQLite or on a PostgreSQL
    without it. Django's state knows the table's plain columns (see PassageVector)."""

    dependencies = [
        ("corpora", "0002_lexical_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="PassageVector",
                    fields=[
                        (
                            "passage",
                            models.OneToOneField(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="corpora.passage",
                            ),
                        ),
                        ("corpus_id", models.BigIntegerField()),
                        ("document_id", models.BigIntegerField()),
                        ("model", models.CharField(max_length=200)),
                    ],
                ),
            ],
            database_operations=[migrations.RunPython(pgvector.migrate_install, pgvector.migrate_uninstall)],
        ),
    ]
