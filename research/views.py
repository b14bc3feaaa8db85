"""The report page: server-rendered, sanitized, visible to the report's creator only; while a
run goes on it follows the run's progress (polling a JSON view, no reload), with Cancel, and
Resume for a failed or cancelled report. And the reports list: one's own reports, newest first,
paginated, filtered by status."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.exceptions import ApplicationError
from config.ratelimit import rate_limit_spent
from corpora.exceptions import CorpusNotFound
from corpora.selectors import corpus_get_for_user
from research.exceptions import ReportFilterInvalid, ReportNotFound
from research.exports import (
    report_csv_export,
    report_export_filename,
    report_json_export,
    report_markdown_export,
)
from research.models import ReportStatus
from research.pages import report_body_html, report_sources, research_form_keep
from research.selectors import REPORT_STATUS_FILTERS, report_get, report_list_rows, report_progress_summary
from research.services import report_cancel, report_resume, report_start

# The run's position, as the API's `progress` names it.
PROGRESS_FIELDS = (
    "phase",
    "level",
    "levels",
    "documents_swept",
    "documents_total",
    "documents_reread",
    "direction",
)
REPORTS_PER_PAGE = 25


@login_required
@require_GET
def report_list_page(request: HttpRequest) -> HttpResponse:
    status_filter = request.GET.get("status") or "all"
    context = {"filters": list(REPORT_STATUS_FILTERS), "status_filter": status_filter, "page": None}
    try:
        rows = report_list_rows(user=request.user, status_filter=status_filter)
    except ReportFilterInvalid as error:
        context.update(status_filter=None, error=f"{error.message} ({error.code})")
        return render(request, "research/report_list.html", context, status=400)
    context["page"] = Paginator(rows, REPORTS_PER_PAGE).get_page(request.GET.get("page"))
    context["page_query"] = f"status={status_filter}&" if status_filter != "all" else ""
    return render(request, "research/report_list.html", context)


@login_required
def report_detail(request: HttpRequest, slug: str) -> HttpResponse:
    report = _own(request, slug)
    summary = report_progress_summary(report=report)
    context = {
        "report": report,
        "body_html": report_body_html(report),
        "sources": report_sources(report),
        # as the progress view counts them, so the header the page's script updates starts alike
        "findings_count": summary["findings_count"],
        "sources_count": summary["sources_count"],
    }
    return render(request, "research/report_detail.html", context)


@login_required
@require_GET
def report_export_markdown(request: HttpRequest, slug: str) -> HttpResponse:
    """The report as a Markdown file (footnotes and Sources with their quotes)."""
    report = _own(request, slug)
    text = report_markdown_export(report, url=_absolute(request, report))
    return _download(HttpResponse(text, content_type="text/markdown; charset=utf-8"), report, "md")


@login_required
@require_GET
def report_export_json(request: HttpRequest, slug: str) -> HttpResponse:
    """The report with its findings, citations, warnings and model usage as a JSON file."""
    report = _own(request, slug)
    data = report_json_export(report, url=_absolute(request, report))
    return _download(JsonResponse(data, json_dumps_params={"indent": 2}), report, "json")


@login_required
@require_GET
def report_export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The report's answers as a CSV file: one row per sub-question and document."""
    report = _own(request, slug)
    return _download(
        HttpResponse(report_csv_export(report), content_type="text/csv; charset=utf-8"), report, "csv"
    )


def _absolute(request: HttpRequest, report) -> str:
    return request.build_absolute_uri(reverse("research:report-detail", args=[report.slug]))


def _download(response: HttpResponse, report, extension: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{report_export_filename(report, extension)}"'
    # Private: what a report holds is its creator's; a running report's export changes.
    add_never_cache_headers(response)
    response["Cache-Control"] += ", private"
    return response


@login_required
@require_GET
def report_progress(request: HttpRequest, slug: str) -> JsonResponse:
    """What the report page polls while a run goes on (static/research/progress.js)."""
    report = _own(request, slug)
    summary = report_progress_summary(report=report)
    response = JsonResponse(
        {
            "status": report.status,
            "status_display": report.get_status_display(),
            "terminal": report.is_terminal,
            **{key: summary[key] for key in PROGRESS_FIELDS},
            "steps": summary["step_count"],
            "findings": summary["findings_count"],
            "sources": summary["sources_count"],
            "elapsed_seconds": _elapsed(report),
        }
    )
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def report_cancel_view(request: HttpRequest, slug: str) -> HttpResponse:
    report = _own(request, slug)
    try:
        report = report_cancel(user=request.user, report_id=report.pk)
    except ApplicationError as error:
        messages.error(request, f"{error.message} ({error.code})")
    else:
        messages.success(
            request,
            "Cancelling: the run stops at its next step and keeps its findings."
            if report.status == ReportStatus.CANCELLING
            else "Cancelled.",
        )
    return redirect("research:report-detail", slug=report.slug)


@login_required
@require_POST
def report_resume_view(request: HttpRequest, slug: str) -> HttpResponse:
    report = _own(request, slug)
    try:
        with rate_limit_spent(scope="research", key=f"user:{request.user.pk}"):
            report_resume(user=request.user, report_id=report.pk)
    except ApplicationError as error:  # rate_limited among them
        messages.error(request, f"{error.message} ({error.code})")
    else:
        messages.success(request, "Resumed from its findings.")
    return redirect("research:report-detail", slug=report.slug)


def _own(request: HttpRequest, slug: str):
    try:
        return report_get(user=request.user, slug=slug)
    except ReportNotFound as exc:
        raise Http404("report not found") from exc


def _elapsed(report) -> float | None:
    if report.started_at is None:
        return None
    end = report.completed_at or timezone.now()
    return round((end - report.started_at).total_seconds(), 1)


@login_required
@require_http_methods(["GET", "POST"])
def report_new(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """The start-research form of a corpus page: prompt, depth, rubric, an optional subset of
    the corpus's documents. A corpus shared with the user can be researched too. Opened (as
    signing in again after the session ended does), the corpus page with the form."""
    if request.method == "GET":
        return redirect("corpora:detail", corpus_id=corpus_id)
    try:
        corpus = corpus_get_for_user(user=request.user, corpus_id=corpus_id)
    except CorpusNotFound as exc:
        raise Http404("corpus not found") from exc
    chosen = request.POST.getlist("documents")
    try:
        with rate_limit_spent(scope="research", key=f"user:{request.user.pk}"):
            if not all(c.isascii() and c.isdigit() for c in chosen):
                raise ApplicationError("choose documents from the list", code="document_ids_invalid")
            report = report_start(
                user=request.user,
                corpus=corpus,
                prompt=request.POST.get("prompt", ""),
                depth=request.POST.get("depth") or None,
                rubric=request.POST.get("rubric", ""),
                document_ids=[int(c) for c in chosen] or None,
            )
    except ApplicationError as error:  # rate_limited among them
        messages.error(request, f"{error.message} ({error.code})")
        # The corpus page fills the form in again with what was typed (research_form_pop).
        research_form_keep(request, corpus.pk, chosen)
    else:
        return redirect("research:report-detail", slug=report.slug)
    return redirect("corpora:detail", corpus_id=corpus.pk)
