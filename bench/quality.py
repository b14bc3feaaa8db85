"""Research quality benchmark: does a report on a question about a whole collection cite the
documents that answer it? One JSON line per dataset and engine (and the single-shot baseline),
all in one run on the same corpora.

    .venv/bin/python bench/quality.py [--depth standard]
        [--datasets contractnli,cuad,cuad-held-out] [--database FILE] [--out FILE]

Datasets (bench/quality_data.py, read from ../shared/data, never copied into the repo):
ContractNLI dev (61 NDAs as one corpus, its 17 hypotheses asked as corpus-wide questions; gold
documents are those annotated Entailment or Contradiction, with their evidence spans) and five
seeded CUAD rooms of 40 contracts (six clause categories asked per room; gold documents are
the contracts annotated with that clause, with its excerpts). cuad-held-out asks the same rooms
about other, rarer clause categories, written once and never tuned to (its own JSON line): does
the engine carry beyond the questions it was measured on?

Per question the engine runs as a user's run does (research.services.report_start; with no
broker the run goes to this process's research pool; offline engine unless RESEARCH_MODEL says
otherwise) and its
report is scored: document recall and precision of the cited documents against the gold ones,
evidence recall (a gold excerpt overlaps a cited passage), fabricated citations (a citation
that is not a passage this run retrieved, or whose quote is not at its offsets), verbatim
quotes, citations, steps, seconds. The single-shot baseline is one hybrid search of the
question whose top k passages are cited as they are, k = the engine's number of cited passages
for that question. Figures are means over the questions of a dataset.

--database FILE keeps the ingested and embedded corpora in a SQLite file and reuses them on the
next run (ingesting and embedding ~20,000 passages takes ~10 minutes on this machine's CPU)."""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import quality_data

ROOT = Path(__file__).resolve().parent.parent
USERNAME = "quality-bench"
SHINGLE_WORDS = 8
DATASETS = {"contractnli", "cuad", "cuad-held-out"}
# The lines that are not an engine's: the single-shot baseline, and for a question asked in the
# negative, listing every document.
REFERENCES = {"single-shot", "every-document"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--depth", default="standard", help="comma-separated depths to run")
    parser.add_argument(
        "--datasets",
        default="contractnli,cuad,cuad-held-out",
        help="comma-separated: contractnli, cuad, cuad-held-out",
    )
    parser.add_argument("--database", type=Path, help="SQLite file to keep (and reuse) the corpora in")
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions of each dataset")
    parser.add_argument("--prepare-only", action="store_true", help="ingest and embed, then stop")
    parser.add_argument(
        "--clause-phrasing",
        action="store_true",
        help="ask the CUAD categories as 'Which contracts have a <category> clause?' (lines '…-clause')",
    )
    parser.add_argument(
        "--request-phrasing",
        action="store_true",
        help="ask 'Which contracts ...?' and 'Do these agreements ...?' as requests, 'List the contracts "
        "that ...' (lines '…-request')",
    )
    parser.add_argument(
        "--negated-phrasing",
        action="store_true",
        help="ask the CUAD questions in the negative, 'Which contracts do not ...?', scored on the report's "
        "list of documents without it against the contracts without the clause (lines '…-negated'; "
        "ContractNLI is not asked)",
    )
    parser.add_argument("--out", type=Path, help="also append the JSON lines here")
    return parser.parse_args()


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ.setdefault("EMBEDDING_BACKEND", "minilm")
    os.environ.setdefault("RESEARCH_MODEL", "offline")
    os.environ["CELERY_BROKER_URL"] = ""
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["DEBUG"] = "0"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# --- Corpora ---------------------------------------------------------------------------------
def prepared_corpus(dataset: quality_data.Dataset):
    """The dataset's corpus, ingested and embedded (reused when a kept database has it)."""
    from corpora.models import Corpus, Passage
    from corpora.services import cli_user_ensure, corpus_create, document_ingest, passage_embed_pending

    user = cli_user_ensure(username=USERNAME)
    corpus = Corpus.objects.filter(name=dataset.name, creator=user).first()
    if corpus is None:
        corpus = corpus_create(creator=user, name=dataset.name)
    present = set(corpus.documents.values_list("source_name", flat=True))
    for name, text in dataset.documents.items():
        if name not in present:
            document_ingest(
                corpus=corpus, content=text.encode("utf-8"), filename=name, schedule_embedding=False
            )
    started = time.perf_counter()
    embedded = passage_embed_pending(corpus=corpus)
    if embedded:
        print(
            f"# {dataset.name}: embedded {embedded} passages in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return user, corpus, Passage.objects.filter(corpus=corpus).count()


# --- Scoring ---------------------------------------------------------------------------------
def shingles(text: str) -> set[str]:
    tokens = re.findall(r"\w+", text.lower())
    if len(tokens) < SHINGLE_WORDS:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + SHINGLE_WORDS]) for i in range(len(tokens) - SHINGLE_WORDS + 1)}


def evidence_found(question: quality_data.Question, cited: list[tuple[str, str]]) -> tuple[int, int]:
    """(gold excerpts overlapped by a cited passage of their document, gold excerpts)."""
    found = total = 0
    by_document: dict[str, list[set[str]]] = {}
    for source, text in cited:
        by_document.setdefault(source, []).append(shingles(text))
    for source, excerpts in question.gold.items():
        for excerpt in excerpts:
            total += 1
            grams = shingles(excerpt)
            if any(grams & passage for passage in by_document.get(source, [])):
                found += 1
    return found, total


def document_scores(question: quality_data.Question, cited_documents: set[str]) -> tuple[float, float]:
    gold = set(question.gold)
    hit = len(cited_documents & gold)
    recall = hit / len(gold) if gold else 0.0
    precision = hit / len(cited_documents) if cited_documents else 0.0
    return recall, precision


def score_report(report, question: quality_data.Question) -> dict[str, Any]:
    from corpora.models import Document, Passage

    citations = report.citations
    passages = {p.pk: p for p in Passage.objects.filter(pk__in=[c["passage_id"] for c in citations])}
    documents = dict(
        Document.objects.filter(pk__in={c["document_id"] for c in citations}).values_list("pk", "source_name")
    )
    texts = dict(Document.objects.filter(pk__in=documents).values_list("pk", "text"))
    retrieved = set(report.retrieved_passage_ids)
    fabricated = sum(
        1
        for c in citations
        if c["passage_id"] not in retrieved
        or c["passage_id"] not in passages
        or texts.get(c["document_id"], "")[c["start"] : c["end"]] != c["quote"]
    )
    verbatim = sum(1 for c in citations if c["quote"] and c["quote"] in passages[c["passage_id"]].text)
    cited = [(documents[c["document_id"]], passages[c["passage_id"]].text) for c in citations]
    recall, precision = document_scores(question, {source for source, _ in cited})
    found, total = evidence_found(question, cited)
    duration = (report.completed_at - report.started_at).total_seconds() if report.started_at else None
    return {
        "status": report.status,
        "strategy": report.strategy,
        "swept": bool((report.engine_state or {}).get("sweep_candidates")),
        "document_recall": recall,
        "document_precision": precision,
        "evidence_recall": found / total if total else 0.0,
        "fabricated": fabricated,
        "verbatim": verbatim,
        "citations": len(citations),
        "cited_documents": len({source for source, _ in cited}),
        "steps": report.step_count,
        "seconds": duration,
    }


def single_shot(corpus, question: quality_data.Question, k: int) -> dict[str, Any]:
    """One hybrid search of the question, its top k passages cited as they are."""
    from corpora.constants import SEARCH_MAX_TOP_K
    from corpora.selectors import passage_search

    hits = passage_search(corpus=corpus, query=question.text, top_k=max(1, min(k, SEARCH_MAX_TOP_K)))
    cited = [(h.passage.document.source_name, h.passage.text) for h in hits[:k]] if k else []
    recall, precision = document_scores(question, {source for source, _ in cited})
    found, total = evidence_found(question, cited)
    return {
        "document_recall": recall,
        "document_precision": precision,
        "evidence_recall": found / total if total else 0.0,
        "fabricated": 0,
        "verbatim": len(cited),
        "citations": len(cited),
        "cited_documents": len({source for source, _ in cited}),
    }


def score_absent(report, question: quality_data.Question) -> dict[str, Any]:
    """A question asked in the negative is answered by the report's list of the documents
    without it (its "Documents without it" section), scored against the contracts without the
    clause; the citations (the documents with it) are checked as any report's are."""
    from corpora.models import Document

    section = report.content.split("\n## Documents without it:", 1)
    listed = (
        re.findall(r"^- \*(.+)\*$", section[1].split("\n## ", 1)[0], re.MULTILINE) if len(section) > 1 else []
    )
    sources = set(
        Document.objects.filter(corpus_id=report.corpus_id, title__in=listed).values_list(
            "source_name", flat=True
        )
    )
    recall, precision = document_scores(question, sources)
    return {
        "document_recall": recall,
        "document_precision": precision,
        "evidence_recall": None,
        "listed_documents": len(sources),
    }


def every_document(dataset: quality_data.Dataset, question: quality_data.Question) -> dict[str, Any]:
    """The reference for a negated question: listing every document of the corpus (recall 1, at
    the share of documents without the clause)."""
    recall, precision = document_scores(question, set(dataset.documents))
    return {
        "document_recall": recall,
        "document_precision": precision,
        "evidence_recall": None,
        "fabricated": 0,
        "verbatim": 0,
        "citations": 0,
        "cited_documents": 0,
        "listed_documents": len(dataset.documents),
    }


def run_question(user, corpus, question: quality_data.Question, depth: str):
    from research.models import ResearchReport
    from research.services import report_start
    from tasks.research import in_process_pool

    # One run per question, started as a user's is (with no broker it runs in this process's
    # research pool), waited for to its end.
    report = report_start(user=user, corpus=corpus, prompt=question.text, depth=depth)
    in_process_pool.wait()
    return ResearchReport.objects.get(pk=report.pk)


def summary(name: str, engine: str, depth: str | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return round(statistics.fmean(values), 3) if values else None

    citations = sum(r["citations"] for r in rows)
    line = {
        "dataset": name,
        "engine": engine,
        "depth": depth,
        "questions": len(rows),
        "document_recall": mean("document_recall"),
        "document_precision": mean("document_precision"),
        "evidence_recall": mean("evidence_recall"),
        "fabricated_citation_rate": round(sum(r["fabricated"] for r in rows) / citations, 4)
        if citations
        else 0.0,
        "verbatim_quote_rate": round(sum(r["verbatim"] for r in rows) / citations, 4) if citations else 1.0,
        "citations_mean": mean("citations"),
        "cited_documents_mean": mean("cited_documents"),
    }
    if any("listed_documents" in r for r in rows):
        line["listed_documents_mean"] = mean("listed_documents")
    if engine not in REFERENCES:
        line |= {
            "steps_mean": mean("steps"),
            "seconds_mean": mean("seconds"),
            "seconds_max": round(max(r["seconds"] for r in rows), 2) if rows else None,
            "completed": sum(1 for r in rows if r["status"] == "COMPLETED"),
            "deep_strategy": sum(1 for r in rows if r["strategy"] == "deep"),
            "swept": sum(1 for r in rows if r["swept"]),
        }
    return line


def main() -> None:
    args = parse_args()
    wanted = {d.strip() for d in args.datasets.split(",")}
    unknown = wanted - DATASETS
    if unknown:
        raise SystemExit(
            f"unknown datasets: {', '.join(sorted(unknown))} (known: {', '.join(sorted(DATASETS))})"
        )
    database = args.database or Path(tempfile.mkdtemp(prefix="deepcite-quality-")) / "quality.sqlite3"
    database.parent.mkdir(parents=True, exist_ok=True)
    setup_django(database)
    from django.conf import settings

    phrasing = {
        "clause_phrasing": args.clause_phrasing,
        "request_phrasing": args.request_phrasing,
        "negated_phrasing": args.negated_phrasing,
    }
    datasets = (
        (
            [quality_data.contractnli(request_phrasing=args.request_phrasing)]
            if "contractnli" in wanted and not args.negated_phrasing
            else []
        )
        + (quality_data.cuad_rooms(**phrasing) if "cuad" in wanted else [])
        + (quality_data.cuad_rooms(held_out=True, **phrasing) if "cuad-held-out" in wanted else [])
    )
    prepared = [(dataset, *prepared_corpus(dataset)) for dataset in datasets]
    if args.prepare_only:
        return
    engine = "offline" if settings.RESEARCH_MODEL == "offline" else settings.RESEARCH_MODEL
    groups: dict[str, list] = {}
    for dataset, user, corpus, passages in prepared:
        groups.setdefault(dataset.group, []).append((dataset, user, corpus, passages))
    for group, members in groups.items():
        for depth in [d.strip() for d in args.depth.split(",")]:
            engine_rows, baseline_rows = [], []
            for dataset, user, corpus, _passages in members:
                questions = dataset.questions[: args.questions] if args.questions else dataset.questions
                for question in questions:
                    report = run_question(user, corpus, question, depth)
                    row = score_report(report, question)
                    if question.negated:
                        row |= score_absent(report, question)
                        baseline_rows.append(every_document(dataset, question))
                    else:
                        baseline_rows.append(single_shot(corpus, question, row["citations"]))
                    engine_rows.append(row)
                    print(
                        json.dumps(
                            {
                                "dataset": dataset.name,
                                "question": question.key,
                                "depth": depth,
                                **row,
                                "baseline_recall": baseline_rows[-1]["document_recall"],
                                "baseline_precision": baseline_rows[-1]["document_precision"],
                            }
                        ),
                        file=sys.stderr,
                    )
            documents = sum(len(m[0].documents) for m in members)
            passages = sum(m[3] for m in members)
            extra = {"corpora": len(members), "documents": documents, "passages": passages}
            reference = "every-document" if group.endswith("-negated") else "single-shot"
            for line in (
                summary(group, engine, depth, engine_rows) | extra,
                summary(group, reference, depth, baseline_rows) | extra,
            ):
                text = json.dumps(line)
                print(text, flush=True)
                if args.out:
                    with args.out.open("a") as handle:
                        handle.write(text + "\n")


if __name__ == "__main__":
    main()
