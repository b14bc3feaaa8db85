"""Retrieval benchmark on CUAD: ingestion and embedding throughput, search latency per mode,
and recall of the gold clause excerpts against a bm25s baseline over the very same passages.

    .venv/bin/python bench/retrieval.py [--dense-contracts 100] [--seed 13] [--out FILE]

Prints one JSON object. Reads ../shared/data/cuad (never copied into the repo) and works in a
fresh temporary SQLite database. Figures are for ratios: the machine is shared and noisy."""

import argparse
import ast
import atexit
import csv
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import interleaved_times, percentile, temporary_postgres

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cuad"
QUERIES_FILE = Path(__file__).resolve().parent / "cuad_queries.json"
KS = (10, 50, 100)
CONTRACT_RECALL_K = 50


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="CUAD folder (contracts/, master_clauses.csv)"
    )
    parser.add_argument("--contracts", type=int, default=0, help="ingest only this many contracts (0 = all)")
    parser.add_argument(
        "--dense-contracts", type=int, default=150, help="seeded subset embedded for dense/hybrid"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--latency-queries", type=int, default=200, help="at least this many latency queries")
    parser.add_argument("--raw-sample", type=int, default=0, help="raw-throughput sample size (0 = all)")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="run on a fresh temporary database created on this PostgreSQL server "
        "(e.g. postgres://postgres@127.0.0.1:5432/postgres) instead of SQLite",
    )
    return parser.parse_args()


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ.setdefault("EMBEDDING_BACKEND", "minilm")
    os.environ["LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import logging

    from django.core.management import call_command

    logging.getLogger("bm25s").setLevel(logging.WARNING)

    call_command("migrate", verbosity=0)


# --- Gold ------------------------------------------------------------------------------------
def file_key(name: str) -> str:
    """master_clauses.csv names match the files after dropping case, punctuation and suffix."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\.(pdf|txt)$", "", name.strip().lower()))


def normalize(text: str) -> str:
    return " ".join(text.lower().split())


def load_gold(data: Path, categories: list[str]) -> dict[str, dict[str, list[str]]]:
    """{category: {file_key: [normalized excerpts]}}"""
    csv.field_size_limit(1 << 30)
    gold: dict[str, dict[str, list[str]]] = {c: {} for c in categories}
    with (data / "master_clauses.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = file_key(row["Filename"])
            for category in categories:
                excerpts = ast.literal_eval(row[category] or "[]")
                excerpts = [normalize(e) for e in excerpts if normalize(e)]
                if excerpts:
                    gold[category][key] = excerpts
    return gold


# --- Measurements ----------------------------------------------------------------------------
def ingest(corpus, paths: list[Path]) -> dict:
    from corpora.services import document_ingest

    started = time.perf_counter()
    passages = 0
    for path in paths:
        result = document_ingest(corpus=corpus, path=path, schedule_embedding=False)
        passages += result.passages if result.created else 0
    seconds = time.perf_counter() - started
    return {
        "documents": len(paths),
        "passages": passages,
        "seconds": round(seconds, 2),
        "documents_per_second": round(len(paths) / seconds, 2),
        "passages_per_second": round(passages / seconds, 1),
    }


def latency(fns: dict, queries: list[str]) -> dict:
    """p50/p95 per function, interleaved (common.interleaved_times); the first query warms the
    caches (dense matrix, term statistics) as a running server's would be."""
    times = interleaved_times(fns, queries, warmup=queries[:1])
    return {
        name: {
            "p50_ms": round(statistics.median(t), 2),
            "p95_ms": round(percentile(t, 95), 2),
            "queries": len(t),
        }
        for name, t in times.items()
    }


def latency_queries(spec: dict, minimum: int) -> list[str]:
    queries = [q for c in spec.values() for q in c["keywords"] + c["questions"]]
    templates = [
        "{}",
        "Which contracts contain a {} clause?",
        "What does the agreement say about {}?",
        "{} obligations",
        "Summarize the {} provisions",
    ]
    names = list(spec)
    i = 0
    while len(queries) < minimum:
        queries.append(
            templates[i % len(templates)].format(names[(i // len(templates)) % len(names)].lower())
        )
        i += 1
    return queries


class Bm25sBaseline:
    """bm25s (Lucene BM25) with an English Snowball stemmer and stopwords: a good BM25."""

    def __init__(self, passages: list[tuple[int, str]]):
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.ids = [pid for pid, _ in passages]
        tokens = bm25s.tokenize(
            [t for _, t in passages], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[int]:
        tokens = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        results, scores = self.retriever.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(i)] for i, s in zip(results[0], scores[0], strict=True) if s > 0]


def recall_stats(ranked: list[int], passages: dict[int, tuple[str, str]], gold: dict[str, list[str]]) -> dict:
    """Excerpt recall@k and contract recall@50 for one query's ranked passage ids."""
    total = sum(len(v) for v in gold.values())
    out = {}
    for k in KS:
        found = set()
        for pid in ranked[:k]:
            key, text = passages[pid]
            for i, excerpt in enumerate(gold.get(key, ())):
                if excerpt in text:
                    found.add((key, i))
        out[f"recall@{k}"] = len(found) / total if total else 0.0
    contracts = set()
    for pid in ranked[:CONTRACT_RECALL_K]:
        key, text = passages[pid]
        if any(e in text or text in e for e in gold.get(key, ())):
            contracts.add(key)
    out[f"contract_recall@{CONTRACT_RECALL_K}"] = len(contracts) / len(gold) if gold else 0.0
    return out


def bootstrap_ratio(a: list[float], b: list[float], rounds: int, rng: random.Random) -> list[float]:
    """95% interval of mean(a)/mean(b), resampling categories."""
    n = len(a)
    ratios = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        denominator = sum(b[i] for i in idx)
        if denominator:
            ratios.append(sum(a[i] for i in idx) / denominator)
    return [round(percentile(ratios, 2.5), 3), round(percentile(ratios, 97.5), 3)]


def evaluate(corpus, spec, gold, baseline, passages, args) -> dict:
    from corpora.selectors import passage_search

    modes = {
        "bm25s": lambda q: baseline.search(q, max(KS)),
        "lexical": lambda q: [
            h.passage.pk for h in passage_search(corpus=corpus, query=q, top_k=max(KS), mode="lexical")
        ],
        "dense": lambda q: [
            h.passage.pk for h in passage_search(corpus=corpus, query=q, top_k=max(KS), mode="dense")
        ],
        "hybrid": lambda q: [
            h.passage.pk for h in passage_search(corpus=corpus, query=q, top_k=max(KS), mode="hybrid")
        ],
    }
    # per_category[kind][mode][metric] = [one value per category (mean over its phrasings)]
    metrics = [f"recall@{k}" for k in KS] + [f"contract_recall@{CONTRACT_RECALL_K}"]
    per_category = {kind: {m: {x: [] for x in metrics} for m in modes} for kind in ("keywords", "questions")}
    used = []
    ceiling = []
    for category, phrasings in spec.items():
        category_gold = gold[category]
        if not category_gold:
            continue
        used.append(category)
        ceiling.append(_ceiling(category_gold, passages))
        for kind in ("keywords", "questions"):
            for mode, fn in modes.items():
                stats = [recall_stats(fn(q), passages, category_gold) for q in phrasings[kind]]
                for metric in metrics:
                    per_category[kind][mode][metric].append(statistics.mean(s[metric] for s in stats))
    rng = random.Random(args.seed)
    result = {
        "categories": len(used),
        "category_names": used,
        "phrasings_per_category": {k: len(next(iter(spec.values()))[k]) for k in ("keywords", "questions")},
        "gold_excerpts": sum(len(v) for c in used for v in gold[c].values()),
        "gold_contained_in_some_passage": round(statistics.mean(ceiling), 3),
    }
    for kind in ("keywords", "questions"):
        block = {}
        for mode in modes:
            block[mode] = {m: round(statistics.mean(v), 4) for m, v in per_category[kind][mode].items()}
        ratios = {}
        for mode in ("lexical", "dense", "hybrid"):
            ratios[mode] = {}
            for metric in metrics:
                ours, base = per_category[kind][mode][metric], per_category[kind]["bm25s"][metric]
                mean_base = statistics.mean(base)
                ratios[mode][metric] = {
                    "ratio": round(statistics.mean(ours) / mean_base, 3) if mean_base else None,
                    "ci95": bootstrap_ratio(ours, base, args.bootstrap, rng),
                }
        block["vs_bm25s"] = ratios
        result[kind] = block
    return result


def _ceiling(category_gold: dict[str, list[str]], passages: dict[int, tuple[str, str]]) -> float:
    """Share of gold excerpts that fit inside one passage: the best recall any ranking can get."""
    by_key: dict[str, list[str]] = {}
    for key, text in passages.values():
        by_key.setdefault(key, []).append(text)
    total = found = 0
    for key, excerpts in category_gold.items():
        for excerpt in excerpts:
            total += 1
            found += any(excerpt in text for text in by_key.get(key, ()))
    return found / total if total else 0.0


def main() -> None:
    args = parse_args()
    contracts_dir = args.data / "contracts"
    if not contracts_dir.is_dir():
        sys.exit(f"CUAD not found at {args.data} (expected ../shared/data/cuad beside the checkout)")
    spec = {k: v for k, v in json.loads(QUERIES_FILE.read_text()).items() if not k.startswith("_")}

    if args.postgres:
        database_url, drop = temporary_postgres(args.postgres, "deepcite_bench")
        atexit.register(drop)
    else:
        database_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='deepcite-bench-')) / 'bench.sqlite3'}"
    setup_django(database_url)
    import torch
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from corpora.embedding import embed_query_async, get_embedder, inference_thread
    from corpora.models import Passage
    from corpora.retrieval.query import parse_query
    from corpora.selectors import passage_search
    from corpora.services import corpus_create, passage_embed_pending, passage_embedding_input

    user = get_user_model().objects.create_user(username="bench")
    files = sorted(contracts_dir.glob("*.txt"))
    if args.contracts:
        files = files[: args.contracts]
    out: dict = {
        "benchmark": "retrieval",
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch_threads": inference_thread(settings.EMBEDDING_THREADS).torch_threads,
        },
        "database": "postgresql (fresh temporary database)"
        if args.postgres
        else "sqlite (fresh temporary file)",
    }

    # 1. All contracts, embeddings deferred: ingested and lexically searchable.
    full = corpus_create(creator=user, name="cuad-all")
    started = time.perf_counter()
    out["ingest_all"] = ingest(full, files)
    first_hit = passage_search(corpus=full, query="governing law", top_k=1, mode="lexical")
    out["ingest_all"]["searchable_after_seconds"] = round(time.perf_counter() - started, 2)
    out["ingest_all"]["lexical_hit_immediately"] = bool(first_hit)

    # 2. A seeded subset, embedded by the same pipeline the background task runs.
    subset_files = sorted(random.Random(args.seed).sample(files, min(args.dense_contracts, len(files))))
    subset = corpus_create(creator=user, name="cuad-subset")
    ingest_stats = ingest(subset, subset_files)
    embedder = get_embedder()
    embedder.embed_query("warm up the model")
    started = time.perf_counter()
    embedded = passage_embed_pending(corpus=subset, embedder=embedder)
    embed_seconds = time.perf_counter() - started
    rows = list(Passage.objects.filter(corpus=subset).order_by("pk").values_list("text", "heading_path"))
    inputs = [passage_embedding_input(text=t, heading_path=h) for t, h in rows]
    raw_inputs = (
        inputs
        if not args.raw_sample
        else random.Random(args.seed).sample(inputs, min(args.raw_sample, len(inputs)))
    )
    started = time.perf_counter()
    for i in range(0, len(raw_inputs), settings.EMBEDDING_BATCH_SIZE):
        embedder.embed_documents(raw_inputs[i : i + settings.EMBEDDING_BATCH_SIZE])
    raw_seconds = time.perf_counter() - started
    pipeline_rate = embedded / embed_seconds
    raw_rate = len(raw_inputs) / raw_seconds
    out["dense_subset"] = {
        "contracts": len(subset_files),
        "seed": args.seed,
        "selection": "random.Random(seed).sample of sorted file names",
        "ingest": ingest_stats,
        "embedding_model": embedder.name,
        # The runtime that computed them: torch's pipeline and the float32 ONNX one store
        # the same vectors under one name.
        "embedding_runtime": {
            "setting": settings.EMBEDDING_MINILM_RUNTIME,
            "embedder": type(embedder).__name__,
            "file": getattr(getattr(embedder, "path", None), "name", None),
        },
        "pipeline_passages_per_second": round(pipeline_rate, 2),
        "raw_model_passages_per_second": round(raw_rate, 2),
        "raw_sample_passages": len(raw_inputs),
        "pipeline_vs_raw": round(pipeline_rate / raw_rate, 3),
        "embedding_seconds": round(embed_seconds, 1),
        "share_of_time_embedding": round(embed_seconds / (embed_seconds + ingest_stats["seconds"]), 3),
    }

    # 3. Latency. Lexical alone on every contract, as a lexical-only workload runs; then all
    # modes interleaved query by query, so that their ratios share the machine's state.
    queries = latency_queries(spec, args.latency_queries)
    # Two passes: the first pays for each new term's document frequency (cached per corpus
    # until its index_version moves), the second is a server's steady state.
    lexical_fns = {
        "all_contracts": lambda q: passage_search(corpus=full, query=q, top_k=10, mode="lexical"),
        "subset": lambda q: passage_search(corpus=subset, query=q, top_k=10, mode="lexical"),
    }
    out["latency_lexical_alone"] = {
        f"{name}_{phase}": latency({name: fn}, queries)[name]
        for name, fn in lexical_fns.items()
        for phase in ("first_pass", "second_pass")
    }
    # The same traced query encoder on one torch thread of its own, as search ran it before
    # the inference thread (corpora.embedding.InferenceThread): the other way to embed a query.
    one_thread_pool = ThreadPoolExecutor(max_workers=1, initializer=lambda: torch.set_num_threads(1))
    # What search embeds of each query (parsed outside the timings).
    embedded_text = {q: parse_query(q).text for q in queries}
    interleaved = latency(
        {
            "lexical_subset": lambda q: passage_search(corpus=subset, query=q, top_k=10, mode="lexical"),
            "dense_subset": lambda q: passage_search(corpus=subset, query=q, top_k=10, mode="dense"),
            "hybrid_subset": lambda q: passage_search(corpus=subset, query=q, top_k=10, mode="hybrid"),
            # The query embedding alone, as search runs it: on the model's inference thread,
            # all cores.
            "query_embedding_alone": lambda q: embed_query_async(embedder, embedded_text[q]).result(),
            "query_embedding_one_thread": lambda q: one_thread_pool.submit(
                embedder._embed_query, embedded_text[q]
            ).result(),
        },
        queries,
    )
    # The floor is the faster of the two ways to embed the query.
    floor = min(
        interleaved["query_embedding_alone"]["p50_ms"], interleaved["query_embedding_one_thread"]["p50_ms"]
    )
    for mode in ("hybrid", "dense"):
        interleaved[f"{mode}_p50_vs_query_embedding_p50"] = round(
            interleaved[f"{mode}_subset"]["p50_ms"] / floor, 3
        )
    out["latency_interleaved"] = interleaved
    out["latency_queries"] = {
        "total": len(queries),
        "keywords": sum(1 for q in queries if not parse_query(q).is_question),
        "questions": sum(1 for q in queries if parse_query(q).is_question),
    }

    # 4. Quality on the embedded subset, against bm25s over the very same passages.
    passages = {
        pk: (file_key(source), normalize(text))
        for pk, source, text in Passage.objects.filter(corpus=subset).values_list(
            "pk", "document__source_name", "text"
        )
    }
    baseline = Bm25sBaseline(
        [(pk, t) for pk, t in Passage.objects.filter(corpus=subset).values_list("pk", "text")]
    )
    subset_keys = {file_key(p.name) for p in subset_files}
    gold_all = load_gold(args.data, list(spec))
    gold = {c: {k: v for k, v in g.items() if k in subset_keys} for c, g in gold_all.items()}
    out["quality"] = evaluate(subset, spec, gold, baseline, passages, args)
    out["settings"] = {
        "fusion_lexical_weight": settings.SEARCH_FUSION_LEXICAL_WEIGHT,
        "fusion_dense_weight_keywords": settings.SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS,
        "fusion_dense_weight_question": settings.SEARCH_FUSION_DENSE_WEIGHT_QUESTION,
    }
    text = json.dumps(out)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
