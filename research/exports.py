"""A report exported as its reader takes it away: Markdown (the report as written, its footnotes
and Sources block with each cited quote, and a line saying where it came from) or JSON (the
report with its findings, citations, warnings and model usage, for other tools). A report still
running exports what it has: its findings so far, until its text is written."""

from typing import Any

from django.utils.text import slugify

from research.citations import markdown_inline
from research.models import ResearchReport
from research.selectors import corpus_document_titles

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
        "warnings": report.warnings,
        "error": report.error,
        "model_usage": report.model_usage,
    }


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
            f'passage {finding["passage_id"]}: "{markdown_inline(finding["quote"])}"'
        )
    return "\n".join(lines)
