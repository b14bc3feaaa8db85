"""manage.py search --corpus NAME "query": passages as JSON. --queries FILE runs one query per
line in one process (the model loads once) and prints one JSON array per line. --vector-backend
overrides SEARCH_VECTOR_BACKEND for this run, so that one corpus's rankings from the in-memory
matrix and from pgvector can be compared."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from config.exceptions import ApplicationError
from corpora.constants import SEARCH_MODE_HYBRID, SEARCH_MODES
from corpora.retrieval.vector_store import BACKENDS, vector_store
from corpora.selectors import passage_search

from ._cli import add_user_argument, corpus_for_cli, dumps, fail


class Command(BaseCommand):
    help = "Search a corpus's passages (hybrid, lexical or dense)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("query", nargs="?", help="the query (or use --queries FILE)")
        parser.add_argument("--corpus", required=True, help="corpus name or numeric id")
        parser.add_argument("--top-k", type=int, default=10)
        parser.add_argument("--mode", choices=SEARCH_MODES, default=SEARCH_MODE_HYBRID)
        parser.add_argument("--queries", help="file with one query per line")
        parser.add_argument("--json", action="store_true", help="print JSON (the default for --queries)")
        parser.add_argument(
            "--vector-backend",
            choices=BACKENDS,
            help="where dense search finds its vectors for this run (default: SEARCH_VECTOR_BACKEND)",
        )
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        if options["vector_backend"]:
            with override_settings(SEARCH_VECTOR_BACKEND=options["vector_backend"]):
                try:
                    vector_store()  # a backend named here must be there, embeddings or not
                except ApplicationError as error:
                    raise fail(error) from error
                return self._handle(options)
        return self._handle(options)

    def _handle(self, options) -> None:
        if options["query"] and options["queries"]:
            raise CommandError("[invalid_arguments] give a query or --queries FILE, not both")
        if not options["queries"] and not (options["query"] or "").strip():
            raise CommandError("[invalid_arguments] give a query to search for (or --queries FILE)")
        corpus = corpus_for_cli(options["user"], options["corpus"])
        if options["queries"]:
            path = Path(options["queries"])
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"[unreadable] {path}: {exc}") from exc
            for line in lines:
                if line.strip():
                    self.stdout.write(dumps(self._search(corpus, line, options)))
            return
        hits = self._search(corpus, options["query"], options)
        if options["json"]:
            self.stdout.write(dumps(hits))
            return
        for rank, hit in enumerate(hits, start=1):
            where = hit["document_title"] + (f", p. {hit['page']}" if hit["page"] else "")
            self.stdout.write(f"{rank:>3}. [{hit['score']:.4f}] {where} (passage {hit['passage_id']})")
            self.stdout.write("     " + " ".join(hit["text"].split())[:300])

    def _search(self, corpus, query: str, options) -> list[dict]:
        try:
            hits = passage_search(corpus=corpus, query=query, top_k=options["top_k"], mode=options["mode"])
        except ApplicationError as error:
            raise fail(error) from error
        return [hit.as_dict() for hit in hits]
