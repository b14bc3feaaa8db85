"""A report exported as its reader takes it away: Markdown (the report as written, its footnotes
and Sources block with each cited quote, and a line saying where it came from), JSON (the
report with its findings, citations, answers, warnings and model usage, for other tools) or CSV
(its answers, one row per sub-question and document, for a spreadsheet). A report still running
exports what it has: its findings so far, until its text is written."""

import csv
import io
from typing import Any

from django.utils.text import slugify

from research.citations import markdown_inline
from research.models import ResearchReport
from research.selectors import corpus_document_titles, report_answers_data

EXPORT_FIELDS = ("slug", "title", "prompt", "status", "depth", "strategy", "rubric")
TIMES = ("created", "started_at", "completed_at")


def report_export_filename(report: ResearchReport, extension: str) -> str:
    """A filename safe in any Content-Disposition: the slug's ASCII letters, digits and dashes."""
    return f"{slugify(report.slug)[:100] or 'report'}.{extension}"


def report_markdown_export(report: ResearchReport, *, url: str) -> str:
    """The report's Markdown as its page renders it, footnotes and Sources included, with a
    last line naming the corpus, status, depth, end time and the page's address."""
    ended = f", finished {report.completed_at:%Y-%m-%d %H:%M} UTC" if report.completed_at else ""
    origin = (
        f"Research report on {report.corpus.name}: {report.get_status_display().lower()}, "
        f"depth {report.depth}{ended}. {url}"
    )
    body = report.content.rstrip() or _findings_so_far(report)
    return f"{body}\n\n---\n\n{origin}\n"


def report_json_export(report: ResearchReport, *, url: str) -> dict[str, Any]:
    return {
        **{name: getattr(report, name) for name in EXPORT_FIELDS},
        **{name: value.isoformat() if (value := getattr(report, name)) else None for name in TIMES},
        "url": url,
        "corpus": {"id": report.corpus_id, "name": report.corpus.name},
        "markdown": report.content,
        "findings": report_findings_titled(report),
        "citations": report.citations,
        **report_answers_data(report=report),
        "warnings": report.warnings,
        "error": report.error,
        "model_usage": report.model_usage,
    }


CSV_COLUMNS = (
    "question",
    "asked",
    "document_id",
    "document",
    "addresses",
    "position",
    "quote",
    "footnotes",
)
# A cell a spreadsheet would run as a formula ("=HYPERLINK(...)", "+1+1", "@SUM(...)") starts
# with one of these; such a cell is written with a leading apostrophe, read as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def report_csv_export(report: ResearchReport) -> str:
    """The report's answers (selectors.report_answers_data) as CSV: one row per question of the
    request about two clauses and document answering both, then per sub-question and document,
    whether it addresses the question, the position and quote of its finding and the report's
    footnotes citing it. Text from documents and users cannot run as a formula."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    data = report_answers_data(report=report)
    for answer in [*data["conjunctions"], *data["answers"]]:
        for document in answer["documents"]:
            row = (
                answer["question"],
                answer.get("asked") or "",
                document["document_id"],
                document["title"] or "",
                "yes" if document["addresses"] else "no",
                document["position"] or "",
                document["quote"] or "",
                " ".join(str(n) for n in document["footnotes"]),
            )
            writer.writerow([_cell(value) for value in row])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def report_findings_titled(report: ResearchReport) -> list[dict[str, Any]]:
    """The report's findings, each with its document's title (null once the document is gone)."""
    titles = corpus_document_titles(
        corpus_id=report.corpus_id, document_ids=(f["document_id"] for f in report.findings)
    )
    return [{**finding, "document_title": titles.get(finding["document_id"])} for finding in report.findings]


def _findings_so_far(report: ResearchReport) -> str:
    """What a report whose text is not written yet has: its findings, each with its quote."""
    heading = f"# {markdown_inline(report.title)}"
    findings = report_findings_titled(report)
    if not findings:
        return f"{heading}\n\nThis report has no content yet."
    lines = [heading, "", "The report is not written yet. Its findings so far:", ""]
    for finding in findings:
        document = markdown_inline(finding["document_title"] or f"document {finding['document_id']}")
        lines.append(
            f"{finding['id']}. {markdown_inline(finding['claim'])} *{document}*, "
            f'passage id {finding["passage_id"]}: "{markdown_inline(finding["quote"])}"'
        )
    return "\n".join(lines)
