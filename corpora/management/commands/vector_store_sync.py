"""manage.py vector_store_sync: (re)build PostgreSQL's vector table from the stored embeddings,
for a deployment moving from the in-memory backend to pgvector."""

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections

from corpora.retrieval import pgvector
from corpora.retrieval.vector_store import forget

from ._cli import add_user_argument, corpus_for_cli, dumps


class Command(BaseCommand):
    help = (
        "Create the pgvector extension and table where missing, then make the table hold every "
        "stored embedding (of one corpus with --corpus), dropping the HNSW indexes of models no "
        "passage uses; prints counts as JSON."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", help="only this corpus (name or id, as --user sees it)")
        parser.add_argument(
            "--reindex",
            action="store_true",
            help="drop and build again every model's HNSW index (after changing "
            "SEARCH_PGVECTOR_HNSW_M or SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION, once the workers run "
            "with the new values: an embedding batch during the rebuild builds the index with its own)",
        )
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        if not pgvector.install(connection):
            raise CommandError(f"[vector_backend_unavailable] {pgvector.unavailable_reason(connection)}")
        corpus_ids = None
        if options["corpus"]:
            corpus_ids = [corpus_for_cli(options["user"], options["corpus"]).pk]
        result = pgvector.sync(connection, corpus_ids=corpus_ids, reindex=options["reindex"])
        forget()
        output = {"written": result.written, "removed": result.removed}
        if result.indexes_dropped:
            output["indexes_dropped"] = list(result.indexes_dropped)
        self.stdout.write(dumps(output))
