"""Server-side rendering of a report for the web page: markdown to sanitized HTML, footnote
markers to links, and each source with its passage and the quoted words highlighted."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import markdown
import nh3
from django.http import HttpRequest
from django.urls import reverse

from corpora.highlight import passage_marked_html
from research.citations import SOURCES_HEADING, passage_label
from research.models import ResearchReport

_MARKER = re.compile(r"\[\^(\d+)\]")
_ALLOWED_TAGS = {
    "a",
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "strong",
    "em",
    "code",
    "pre",
    "blockquote",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "br",
    "sup",
    "del",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "sup": {"id"}, "th": {"align"}, "td": {"align"}}


@dataclass(frozen=True)
class SourceView:
    footnote: int
    passage_id: int
    label: str  # "passage 3 (id 617)", as the report's Markdown and exports say it
    document_title: str
    source_name: str
    page: int | None
    passage_html: str
    document_url: str
    # the cited quote, kept with the report, for a passage since deleted with its document
    quote: str = ""


def report_body_html(report: ResearchReport) -> str:
    body = report.content.split(f"\n{SOURCES_HEADING}\n", 1)[0]
    if body.startswith(SOURCES_HEADING):
        body = ""
    known = {c["footnote"] for c in report.citations}
    anchored: set[int] = set()

    def marker(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in known:
            return ""
        link = f'<a href="#source-{number}">{number}</a>'
        if number in anchored:  # a footnote cited again: one element may carry its id
            return f"<sup>{link}</sup>"
        anchored.add(number)
        return f'<sup id="ref-{number}">{link}</sup>'

    return markdown_html(body, markers=lambda escaped: _MARKER.sub(marker, escaped))


_LESS_THAN = "\ue000"  # a private-use character: no text means anything by it


def markdown_html(text: str, *, markers: Callable[[str], str] | None = None) -> str:
    """Markdown from a model or a document as safe HTML. Markup in the text (a document's "<b>",
    a model's tags) is shown as text, never parsed: only markdown (and, through `markers`, our
    own footnote links) becomes HTML, and nh3 keeps only the tags and URL schemes allowed."""
    # Every "<" of the text stands in as a character Markdown leaves alone and comes back as
    # "&lt;": a "&lt;" in its place would show as typed inside a code span ("`POST /corpora/<id>`"
    # read "&lt;id>"), where Markdown escapes what it holds.
    escaped = text.replace(_LESS_THAN, "").replace("<", _LESS_THAN)
    if markers is not None:
        escaped = markers(escaped)
    rendered = markdown.markdown(escaped, extensions=["tables", "sane_lists"]).replace(_LESS_THAN, "&lt;")
    return nh3.clean(
        rendered,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https"},
        link_rel="noopener noreferrer nofollow",
    )


def report_sources(report: ResearchReport) -> list[SourceView]:
    texts: dict[int, Any] = {
        p.pk: p
        for p in report.cited_passages.defer("embedding").select_related("document").defer("document__text")
    }
    views = []
    for citation in report.citations:
        passage = texts.get(citation["passage_id"])
        views.append(
            SourceView(
                footnote=citation["footnote"],
                passage_id=citation["passage_id"],
                label=passage_label(citation),
                document_title=citation.get("document_title") or (passage.document.title if passage else ""),
                source_name=citation.get("source_name") or (passage.document.source_name if passage else ""),
                page=citation.get("page"),
                passage_html=_marked(passage, citation) if passage else "",
                document_url=_document_url(report, passage, citation) if passage else "",
                quote="" if passage else str(citation.get("quote") or ""),
            )
        )
    return views


def _marked(passage, citation: dict[str, Any]) -> str:
    span = (citation["start"], citation["end"]) if citation.get("quote") else None
    return passage_marked_html(passage.text, passage.start, span)


def _document_url(report: ResearchReport, passage, citation: dict[str, Any]) -> str:
    """The document view at the cited passage, its quote marked."""
    url = reverse("corpora:document", args=[report.corpus_id, passage.document_id])
    mark = f"&mark={citation['start']}-{citation['end']}" if citation.get("quote") else ""
    return f"{url}?passage={passage.pk}{mark}#passage-{passage.pk}"


# What the session keeps of a refused start-research form: enough to correct it, never more.
FORM_KEPT_CHARS = 20_000
FORM_KEPT_DOCUMENTS = 1_000


def _research_form_key(corpus_id: int) -> str:
    return f"research_form:{corpus_id}"


def research_form_keep(request: HttpRequest, corpus_id: int, documents: list[str]) -> None:
    """Keeps the start-research form as typed, for the corpus page to fill in again once."""
    request.session[_research_form_key(corpus_id)] = {
        "prompt": request.POST.get("prompt", "")[:FORM_KEPT_CHARS],
        "rubric": request.POST.get("rubric", "")[:FORM_KEPT_CHARS],
        "depth": request.POST.get("depth", "")[:20],
        "documents": [d for d in documents if d.isascii() and d.isdigit()][:FORM_KEPT_DOCUMENTS],
    }


def research_form_pop(request: HttpRequest, corpus_id: int) -> dict[str, Any]:
    """The start-research form as it was typed when it was refused, once; else empty."""
    return request.session.pop(_research_form_key(corpus_id), None) or {}
