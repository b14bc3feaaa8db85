"""The report page: server-rendered, sanitized, visible to the report's creator only."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from research.exceptions import ReportNotFound
from research.pages import report_body_html, report_sources
from research.selectors import report_get


@login_required
def report_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        report = report_get(user=request.user, slug=slug)
    except ReportNotFound as exc:
        raise Http404("report not found") from exc
    context = {
        "report": report,
        "body_html": report_body_html(report),
        "sources": report_sources(report),
        "findings_count": len(report.findings),
    }
    return render(request, "research/report_detail.html", context)
