"""manage.py embedding_export: export the bundled MiniLM to its ONNX model now (at install or
image build) rather than on the first embedding. By default the export the runtime setting runs
(float32 for EMBEDDING_MINILM_RUNTIME=auto or onnx-fp32, int8 for onnx); `--precision all`
exports both, as the image does, so a deployment may choose either without writing to it."""

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpora.embedding import onnx_precision
from corpora.onnx_embedding import PRECISIONS, onnx_model_ensure

from ._cli import dumps


class Command(BaseCommand):
    help = (
        "Export the bundled model to ONNX into EMBEDDING_ONNX_DIR, unless it is there already: the "
        "export EMBEDDING_MINILM_RUNTIME runs, or --precision int8 / fp32 / all; prints one "
        "{precision, path, exported, seconds} JSON line per export."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-available",
            action="store_true",
            help="exit 0, saying why, when onnxruntime is not installed or the export fails",
        )
        parser.add_argument(
            "--precision",
            choices=(*PRECISIONS, "all"),
            help="int8 (EMBEDDING_MINILM_RUNTIME=onnx), fp32 (auto, onnx-fp32) or all; "
            "default: the one EMBEDDING_MINILM_RUNTIME runs",
        )

    def handle(self, *args, **options) -> None:
        precision = options["precision"] or onnx_precision(settings.EMBEDDING_MINILM_RUNTIME)
        for one in PRECISIONS if precision == "all" else (precision,):
            started = time.perf_counter()
            try:
                path, exported = onnx_model_ensure(Path(settings.EMBEDDING_ONNX_DIR), one)
            except Exception as exc:  # no onnxruntime, an unwritable folder, a failed export
                if not options["if_available"]:
                    raise CommandError(f"[embedding_export_failed] {exc}") from exc
                self.stdout.write(
                    dumps({"precision": one, "path": None, "exported": False, "reason": str(exc)})
                )
                return
            seconds = round(time.perf_counter() - started, 1)
            self.stdout.write(
                dumps({"precision": one, "path": str(path), "exported": exported, "seconds": seconds})
            )
