"""manage.py ingest PATH... --corpus NAME: files or folders into a corpus, one document at a
time, each atomic; a bad file is reported and skipped. The last line is a JSON summary."""

import logging
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from config.exceptions import ApplicationError
from corpora.embedding import get_embedder
from corpora.exceptions import CorpusNotFound
from corpora.selectors import corpus_get_for_user, corpus_stats
from corpora.services import cli_user_ensure, corpus_create, document_ingest, passage_embed_pending
from tasks.embeddings import corpus_embedding_schedule

from ._cli import add_user_argument, dumps, fail, stderr_is_tty

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Ingest files (.txt .md .html .pdf .docx) or folders of them into a corpus."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="files or folders (searched recursively)")
        parser.add_argument("--corpus", required=True, help="corpus name; created if missing")
        add_user_argument(parser)
        parser.add_argument(
            "--no-embed",
            action="store_true",
            help="leave embeddings to the background worker (or a later `manage.py embed`)",
        )

    def handle(self, *args, **options) -> None:
        started = time.perf_counter()
        files, missing = _collect(options["paths"])
        if missing and not files:
            # Nothing to ingest (a mistyped path): no corpus is created for it.
            raise CommandError(f"[file_not_found] no such file or folder: {', '.join(map(str, missing))}")
        user = cli_user_ensure(username=options["user"])
        corpus = self._corpus(user, options["corpus"])
        for path in missing:
            self.stderr.write(f"not found: {path}")

        summary = {
            "corpus": corpus.name,
            "corpus_id": corpus.pk,
            "added": 0,
            "skipped": 0,
            "failed": len(missing),
            "passages": 0,
        }
        failures: list[dict[str, str]] = [
            {"path": str(p), "code": "file_not_found", "message": "no such file or folder"} for p in missing
        ]
        bar = tqdm(files, unit="file", disable=not stderr_is_tty(), file=sys.stderr)
        try:
            for path in bar:
                bar.set_postfix_str(path.name[:40])
                self._ingest_one(corpus, path, summary, failures, bar)
        except KeyboardInterrupt:
            # Each document is atomic: what was stored stays, the one in flight is gone.
            bar.close()
            summary.update(interrupted=True, failures=failures)
            summary["seconds"] = round(time.perf_counter() - started, 3)
            self.stdout.write(dumps(summary))
            raise SystemExit(130) from None
        bar.close()
        summary["ingest_seconds"] = round(time.perf_counter() - started, 3)
        summary["embedding"] = self._embed(corpus, options["no_embed"])
        summary["failures"] = failures
        summary["seconds"] = round(time.perf_counter() - started, 3)
        self.stdout.write(dumps(summary))
        if summary["failed"]:
            # The summary says which files and why; the exit status tells a script that some did.
            raise SystemExit(1)

    def _ingest_one(self, corpus, path: Path, summary: dict, failures: list, bar: tqdm) -> None:
        try:
            result = document_ingest(corpus=corpus, path=path, schedule_embedding=False)
        except ApplicationError as error:
            code, message = error.code, error.message
        except Exception as error:  # one bad file never stops the batch; its write rolled back
            logger.exception("ingesting %s failed", path)
            code, message = "ingest_failed", f"{path}: {error.__class__.__name__}: {error}"
        else:
            if result.created:
                summary["added"] += 1
                summary["passages"] += result.passages
            else:
                summary["skipped"] += 1
                self._say(f"{path}: {result.message}", bar)
            return
        summary["failed"] += 1
        failures.append({"path": str(path), "code": code, "message": message})
        self._say(f"failed [{code}]: {message}", bar)

    def _say(self, message: str, bar: tqdm) -> None:
        if bar.disable:
            self.stderr.write(message)
        else:
            bar.write(message, file=sys.stderr)

    def _corpus(self, user, name):
        try:
            return corpus_get_for_user(user=user, name=name)
        except CorpusNotFound:
            pass
        except ApplicationError as error:
            raise fail(error) from error
        try:
            corpus = corpus_create(creator=user, name=name)
        except ApplicationError as error:
            raise fail(error) from error
        self.stderr.write(f"created corpus {corpus.name!r} (id {corpus.pk}) owned by {user.get_username()!r}")
        return corpus

    def _embed(self, corpus, no_embed: bool) -> str:
        """Lexical search already works; with no broker, embed here so dense search works
        when the command returns; with a broker, a worker does it."""
        embedder = get_embedder()
        if embedder is None:
            return "off"
        if no_embed:
            return "deferred"
        if settings.CELERY_BROKER_URL:
            corpus_embedding_schedule(corpus_id=corpus.pk)
            return "queued"
        stats = corpus_stats(corpus=corpus)
        pending = stats["passages"] - stats["embedded_passages"]
        if pending <= 0:
            return "complete"
        self.stderr.write(f"embedding {pending} passages with {embedder.name} (lexical search is ready)")
        bar = tqdm(total=pending, unit="passage", disable=not stderr_is_tty(), file=sys.stderr)
        last = [0]

        def progress(done: int) -> None:
            bar.update(done - last[0])
            last[0] = done

        try:
            passage_embed_pending(corpus=corpus, embedder=embedder, progress=progress)
        except ApplicationError as error:
            bar.close()
            self.stderr.write(f"embedding stopped [{error.code}]: {error.message}")
            return "incomplete"
        bar.close()
        return "complete"


def _collect(raw_paths: list[str]) -> tuple[list[Path], list[Path]]:
    files: list[Path] = []
    missing: list[Path] = []
    for raw in raw_paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(path)
    return files, missing
