"""manage.py embed --corpus NAME: compute the vectors that ingestion deferred."""

import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm

from config.exceptions import ApplicationError
from corpora.selectors import cli_user_get, corpus_get_for_user, corpus_stats
from corpora.services import passage_embed_pending

from ._cli import add_user_argument, dumps, fail, stderr_is_tty


class Command(BaseCommand):
    help = "Embed a corpus's passages that have no vector yet; prints the corpus stats as JSON."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", required=True)
        parser.add_argument("--limit", type=int, default=None, help="embed at most this many")
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        try:
            user = cli_user_get(username=options["user"])
            corpus = corpus_get_for_user(user=user, name=options["corpus"])
            stats = corpus_stats(corpus=corpus)
            bar = tqdm(
                total=stats["passages"] - stats["embedded_passages"],
                unit="passage",
                disable=not stderr_is_tty(),
                file=sys.stderr,
            )
            done = passage_embed_pending(
                corpus=corpus, limit=options["limit"], progress=lambda n: bar.update(n - bar.n)
            )
            bar.close()
        except ApplicationError as error:
            raise fail(error) from error
        self.stdout.write(dumps({**corpus_stats(corpus=corpus), "embedded_now": done}))
