"""Reads of research reports, each applying visibility: a report is seen by its creator only,
superusers included (they read other people's in the admin); everyone else gets the not-found
error a missing report gets."""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from corpora.models import Corpus, Passage
from research.citations import CitablePassage
from research.exceptions import ReportNotFound
from research.models import ReportStatus, ResearchReport

User = AbstractBaseUser | AnonymousUser


def report_list(
    *, user: User, corpus: Corpus | None = None, status: str | None = None
) -> QuerySet[ResearchReport]:
    if not user.is_authenticated:
        return ResearchReport.objects.none()
    queryset = ResearchReport.objects.select_related("corpus").filter(creator=user)
    if corpus is not None:
        queryset = queryset.filter(corpus=corpus)
    if status is not None:
        if status not in ReportStatus.values:
            return ResearchReport.objects.none()
        queryset = queryset.filter(status=status)
    return queryset


def report_get(*, user: User, report_id: int | None = None, slug: str | None = None) -> ResearchReport:
    queryset = report_list(user=user)
    report = None
    if report_id is not None:
        report = queryset.filter(pk=report_id).first()
    elif slug:
        report = queryset.filter(slug=slug).first()
    if report is None:
        raise ReportNotFound("report not found")
    return report


def report_cancel_pending(*, report_id: int) -> bool:
    """True when the run should stop at its next step (cheap: one indexed column read)."""
    status = ResearchReport.objects.filter(pk=report_id).values_list("status", flat=True).first()
    return status in (None, ReportStatus.CANCELLING, ReportStatus.CANCELLED)


def citable_passages(*, corpus_id: int, passage_ids: Iterable[int]) -> dict[int, CitablePassage]:
    """What the renderer needs of each passage; ids that are deleted or belong to another
    corpus are simply absent."""
    ids = {int(i) for i in passage_ids}
    if not ids:
        return {}
    rows = (
        Passage.objects.filter(corpus_id=corpus_id, pk__in=ids)
        .values_list(
            "pk",
            "document_id",
            "document__title",
            "document__source_name",
            "ordinal",
            "page",
            "start",
            "text",
            "is_heading",
        )
        .order_by()
    )
    return {row[0]: CitablePassage(*row) for row in rows}


def report_progress_summary(*, report: ResearchReport) -> dict[str, Any]:
    """How far a run has got, as the API (`progress`), the CLI and the report page show it."""
    progress = report.progress or {}
    return {
        "step_count": report.step_count,
        "tool_call_count": report.tool_call_count,
        "findings_count": len(report.findings),
        "sources_count": len(report.citations) or len({f["document_id"] for f in report.findings}),
        "max_steps": report.max_steps,
        "last_progress_at": report.last_progress_at,
        "phase": progress.get("phase"),
        "level": progress.get("level"),
        "levels": progress.get("levels"),
        "documents_swept": progress.get("documents_swept"),
        "documents_total": progress.get("documents_total"),
        "direction": progress.get("direction"),
        "model_requests": report.model_usage.get("requests"),
    }
