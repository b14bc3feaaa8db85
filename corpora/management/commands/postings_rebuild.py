"""manage.py postings_rebuild: write PostgreSQL's posting lists again from the passages, which
drops the postings of deleted passages (the lists keep them until then; the ranking passes
over them)."""

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from corpora.models import Corpus

from ._cli import add_user_argument, corpus_for_cli, dumps


class Command(BaseCommand):
    help = (
        "Write the posting lists of every corpus (of one with --corpus) again from its passages, one "
        "transaction a corpus, during which its ingestion waits (about 90 s at a million passages); "
        "prints, per corpus, the postings dropped and the seconds taken, as JSON."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", help="only this corpus (name or id, as --user sees it)")
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.vendor != "postgresql":
            raise CommandError(
                "[postings_unavailable] posting lists are PostgreSQL's; SQLite's FTS5 keeps its own"
            )
        if options["corpus"]:
            corpus_ids = [corpus_for_cli(options["user"], options["corpus"]).pk]
        else:
            corpus_ids = list(Corpus.objects.order_by("pk").values_list("pk", flat=True))
        rebuilt = []
        for corpus_id in corpus_ids:
            started = time.perf_counter()
            with transaction.atomic(using=DEFAULT_DB_ALIAS), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT coalesce(sum(postings), 0) FROM corpora_posting WHERE corpus_id = %s", [corpus_id]
                )
                before = int(cursor.fetchone()[0])
                cursor.execute("SELECT corpora_posting_rebuild(%s)", [corpus_id])
                passages = int(cursor.fetchone()[0])
                cursor.execute(
                    "SELECT coalesce(sum(postings), 0) FROM corpora_posting WHERE corpus_id = %s", [corpus_id]
                )
                after = int(cursor.fetchone()[0])
            rebuilt.append(
                {
                    "corpus_id": corpus_id,
                    "passages": passages,
                    "postings": after,
                    "dropped": before - after,
                    "seconds": round(time.perf_counter() - started, 2),
                }
            )
        self.stdout.write(dumps({"corpora": rebuilt}))
