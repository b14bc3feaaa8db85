"""manage.py embedding_export: export the bundled MiniLM to its ONNX model now (at install or
image build) rather than on the first embedding: int8 (EMBEDDING_MINILM_RUNTIME=onnx or auto) by
default, float32 (onnx-fp32) with --precision fp32."""

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ._cli import dumps


class Command(BaseCommand):
    help = (
        "Export the bundled model to ONNX with int8 weights (or float32 with --precision fp32) into "
        "EMBEDDING_ONNX_DIR, unless it is there already; prints {path, exported, seconds} as JSON."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-available",
            action="store_true",
            help="exit 0, saying why, when onnxruntime is not installed or the export fails",
        )
        parser.add_argument(
            "--precision",
            choices=("int8", "fp32"),
            default="int8",
            help="int8 for EMBEDDING_MINILM_RUNTIME=onnx or auto, fp32 for onnx-fp32 (default: %(default)s)",
        )

    def handle(self, *args, **options) -> None:
        started = time.perf_counter()
        try:
            from corpora.onnx_embedding import onnx_model_ensure

            path, exported = onnx_model_ensure(Path(settings.EMBEDDING_ONNX_DIR), options["precision"])
        except Exception as exc:  # no onnxruntime, an unwritable folder, a failed export
            if not options["if_available"]:
                raise CommandError(f"[embedding_export_failed] {exc}") from exc
            self.stdout.write(dumps({"path": None, "exported": False, "reason": str(exc)}))
            return
        seconds = round(time.perf_counter() - started, 1)
        self.stdout.write(dumps({"path": str(path), "exported": exported, "seconds": seconds}))
