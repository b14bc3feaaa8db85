"""The bundled MiniLM's runtimes side by side: torch (sentence-transformers) and the int8 and
float32 ONNX exports (corpora/onnx_embedding.py), on the same CUAD passages: passages/s, query
latency, and how close their vectors are (cosine per passage).

    .venv/bin/python bench/embedding.py [--passages 300] [--rounds 2] [--out FILE]

Prints one JSON object. Reads ../shared/data/cuad (never copied into the repo); the passages
are the project's own chunks (corpora.chunking) of a seeded sample of contracts, as ingestion
makes them, heading path included. Rounds alternate the runtimes so that they share the
machine's state; figures are medians over rounds. Exports the ONNX model into a temporary
folder (timed) unless --onnx-dir names one."""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cuad"
QUERIES_FILE = Path(__file__).resolve().parent / "cuad_queries.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CUAD folder (contracts/)")
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-sizes", default="16,32,64", help="ONNX model batches to time")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--onnx-dir", type=Path, help="use (or export into) this folder")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args()


def sample_passages(data: Path, count: int, seed: int) -> list[str]:
    from corpora.chunking import chunk_text
    from corpora.extraction import normalize_text
    from corpora.services import passage_embedding_input

    files = sorted((data / "contracts").glob("*.txt"))
    passages: list[str] = []
    for path in random.Random(seed).sample(files, len(files)):
        text = normalize_text(path.read_text(encoding="utf-8", errors="replace"))
        for span in chunk_text(text):
            passages.append(
                passage_embedding_input(
                    text=text[span.start : span.end], heading_path=list(span.heading_path)
                )
            )
        if len(passages) >= 4 * count:
            break
    return random.Random(seed).sample(passages, count)


def rate(embed, texts: list[str]) -> float:
    started = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import numpy as np
    from django.conf import settings

    from corpora.embedding import MiniLMEmbedder, inference_thread
    from corpora.onnx_embedding import OnnxMiniLMEmbedder, onnx_model_ensure

    texts = sample_passages(args.data, args.passages, args.seed)
    words = [len(t.split()) for t in texts]
    spec = json.loads(QUERIES_FILE.read_text())
    queries = [q for name, kinds in spec.items() if name != "_about" for qs in kinds.values() for q in qs]
    queries = queries[: args.queries]
    onnx_dir = args.onnx_dir or Path(tempfile.mkdtemp(prefix="deepcite-onnx-"))
    started = time.perf_counter()
    path, exported = onnx_model_ensure(onnx_dir)
    export_seconds = time.perf_counter() - started
    started = time.perf_counter()
    fp32_path, fp32_exported = onnx_model_ensure(onnx_dir, "fp32")
    fp32_export_seconds = time.perf_counter() - started

    threads = settings.EMBEDDING_THREADS
    torch_embedder = MiniLMEmbedder(threads=threads)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    onnx_embedders = {b: OnnxMiniLMEmbedder(path=path, batch_size=b, threads=threads) for b in batch_sizes}
    default = OnnxMiniLMEmbedder(path=path, threads=threads)
    fp32 = OnnxMiniLMEmbedder(path=fp32_path, precision="fp32", threads=threads)
    unsorted = onnx_embedders.get(default.batch_size, default)
    runner = default._load()

    def onnx_unsorted(batch: list[str]) -> None:
        # The same model batches without the sort by length: what padding costs.
        ids = runner.tokenize(batch)
        for i in range(0, len(ids), unsorted.batch_size):
            inference_thread(threads).submit(
                runner.run, ids[i : i + unsorted.batch_size], priority=1
            ).result()

    torch_vectors = torch_embedder.embed_documents(texts[:8])  # loads and warms up both
    default.embed_documents(texts[:8])
    fp32.embed_documents(texts[:8])
    rates: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        rates.setdefault("torch", []).append(rate(torch_embedder.embed_documents, texts))
        for b, embedder in onnx_embedders.items():
            rates.setdefault(f"onnx_batch_{b}", []).append(rate(embedder.embed_documents, texts))
        rates.setdefault(f"onnx_batch_{unsorted.batch_size}_unsorted", []).append(rate(onnx_unsorted, texts))
        rates.setdefault(f"onnx_fp32_batch_{fp32.batch_size}", []).append(rate(fp32.embed_documents, texts))

    torch_vectors = torch_embedder.embed_documents(texts)
    onnx_vectors = default.embed_documents(texts)
    cosines = np.sum(torch_vectors * onnx_vectors, axis=1)
    query_cosines = [float(torch_embedder.embed_query(q) @ default.embed_query(q)) for q in queries]
    fp32_cosines = np.sum(torch_vectors * fp32.embed_documents(texts), axis=1)
    fp32_query_cosines = [float(torch_embedder.embed_query(q) @ fp32.embed_query(q)) for q in queries]
    latency: dict[str, list[float]] = {"torch": [], "onnx": [], "onnx_fp32": []}
    for query in queries:  # interleaved, query by query
        for name, embedder in (("torch", torch_embedder), ("onnx", default), ("onnx_fp32", fp32)):
            started = time.perf_counter()
            embedder.embed_query(query)
            latency[name].append((time.perf_counter() - started) * 1000)

    medians = {name: round(statistics.median(values), 1) for name, values in rates.items()}
    best_onnx = max(v for k, v in medians.items() if k.startswith("onnx_batch") and "unsorted" not in k)
    fp32_rate = medians[f"onnx_fp32_batch_{fp32.batch_size}"]
    out = {
        "benchmark": "embedding",
        "machine": {
            "cpu_count": os.cpu_count(),
            "threads": inference_thread(threads).torch_threads,
            "platform": platform.platform(),
        },
        "passages": len(texts),
        "words": {"mean": round(statistics.mean(words), 1), "median": statistics.median(words)},
        "onnx_model": {
            "file": path.name,
            "megabytes": round(path.stat().st_size / 1e6, 1),
            "exported_now": exported,
            "export_seconds": round(export_seconds, 1),
        },
        "onnx_fp32_model": {
            "file": fp32_path.name,
            "megabytes": round(fp32_path.stat().st_size / 1e6, 1),
            "exported_now": fp32_exported,
            "export_seconds": round(fp32_export_seconds, 1),
        },
        "passages_per_second": medians,
        "rounds": {name: [round(v, 1) for v in values] for name, values in rates.items()},
        "onnx_default_batch_size": default.batch_size,
        "onnx_vs_torch": round(medians[f"onnx_batch_{default.batch_size}"] / medians["torch"], 2)
        if f"onnx_batch_{default.batch_size}" in medians
        else None,
        "best_onnx_vs_torch": round(best_onnx / medians["torch"], 2),
        "onnx_fp32_vs_torch": round(fp32_rate / medians["torch"], 2),
        "cosine_onnx_fp32_torch": {
            "passages_min": round(float(fp32_cosines.min()), 6),
            "queries_min": round(min(fp32_query_cosines), 6),
        },
        "cosine_onnx_torch": {
            "passages_min": round(float(cosines.min()), 4),
            "passages_mean": round(float(cosines.mean()), 4),
            "queries_min": round(min(query_cosines), 4),
            "queries_mean": round(statistics.mean(query_cosines), 4),
        },
        "query_ms_p50": {name: round(statistics.median(values), 2) for name, values in latency.items()},
    }
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
