"""manage.py embed --corpus NAME | --all: compute the vectors that ingestion deferred, and
re-embed passages whose vector is another model's (after EMBEDDING_MINILM_RUNTIME or the model
changed)."""

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from config.exceptions import ApplicationError
from corpora.embedding import get_embedder
from corpora.models import Corpus, Passage
from corpora.selectors import cli_user_get, corpus_get_for_user, corpus_stats
from corpora.services import passage_embed_pending

from ._cli import add_user_argument, dumps, fail, stderr_is_tty


class Command(BaseCommand):
    help = (
        "Embed a corpus's passages that have no vector from the configured model (none yet, or "
        "another model's); prints the corpus stats as JSON, one line per corpus with --all."
    )

    def add_arguments(self, parser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--corpus")
        which.add_argument(
            "--all", action="store_true", help="every corpus with passages to embed (an operator's run)"
        )
        parser.add_argument("--limit", type=int, default=None, help="embed at most this many per corpus")
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        try:
            if options["all"]:
                corpora = self._pending_corpora()
                if not corpora:
                    self.stderr.write("every passage has the configured model's vector: nothing to do")
            else:
                user = cli_user_get(username=options["user"])
                corpora = [corpus_get_for_user(user=user, name=options["corpus"])]
            for corpus in corpora:
                done = self._embed(corpus, limit=options["limit"])
                self.stdout.write(dumps({**corpus_stats(corpus=corpus), "embedded_now": done}))
        except ApplicationError as error:
            raise fail(error) from error

    @staticmethod
    def _pending_corpora() -> list[Corpus]:
        # As the beat sweep finds them: every corpus, whoever owns it (--all is the operator's).
        embedder = get_embedder()
        if embedder is None:
            raise CommandError("[embedding_off] EMBEDDING_BACKEND is none: nothing embeds")
        pending = Passage.objects.exclude(embedding_model=embedder.name).values("corpus_id")
        return list(Corpus.objects.filter(pk__in=pending).order_by("pk"))

    @staticmethod
    def _embed(corpus: Corpus, *, limit: int | None) -> int:
        stats = corpus_stats(corpus=corpus)
        bar = tqdm(
            total=stats["passages"] - stats["embedded_passages"],
            unit="passage",
            desc=corpus.name,
            disable=not stderr_is_tty(),
            file=sys.stderr,
        )
        try:
            return passage_embed_pending(corpus=corpus, limit=limit, progress=lambda n: bar.update(n - bar.n))
        finally:
            bar.close()
