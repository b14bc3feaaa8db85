"""Reads of research reports, each applying visibility: a report is seen by its creator only,
superusers included (they read other people's in the admin); everyone else gets the not-found
error a missing report gets."""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Func, IntegerField, QuerySet

from corpora.models import Corpus, Document, Passage
from research.citations import CitablePassage
from research.drafts import split_set_aside
from research.exceptions import ReportFilterInvalid, ReportNotFound
from research.models import ACTIVE_STATUSES, ReportStatus, ResearchReport

User = AbstractBaseUser | AnonymousUser

# The reports list's status filter: "running" is every status of a run that has not ended.
REPORT_STATUS_FILTERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "running": ACTIVE_STATUSES,
    "completed": (ReportStatus.COMPLETED,),
    "failed": (ReportStatus.FAILED,),
    "cancelled": (ReportStatus.CANCELLED,),
}
# What a row of the reports list shows; the heavy columns (findings, logs, content) stay unread.
_LIST_ROW_FIELDS = ("slug", "title", "status", "depth", "created", "completed_at", "corpus__name")


class JSONArrayLength(Func):
    """The length of a JSON array column counted by the database, so that a list of reports
    need not load every report's findings to count them."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra_context)


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


def report_list_rows(*, user: User, status_filter: str = "all") -> QuerySet[ResearchReport]:
    """The user's reports as the reports list shows them, newest first, with `findings_count`;
    `status_filter` is a key of REPORT_STATUS_FILTERS."""
    if status_filter not in REPORT_STATUS_FILTERS:
        choices = ", ".join(REPORT_STATUS_FILTERS)
        raise ReportFilterInvalid(f"Unknown status filter; choose one of: {choices}.", field="status")
    queryset = report_list(user=user)
    statuses = REPORT_STATUS_FILTERS[status_filter]
    if statuses is not None:
        queryset = queryset.filter(status__in=statuses)
    return (
        queryset.only(*_LIST_ROW_FIELDS)
        .annotate(findings_count=JSONArrayLength("findings"))
        .order_by("-created", "-pk")
    )


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


def corpus_document_titles(*, corpus_id: int, document_ids: Iterable[int]) -> dict[int, str]:
    """The titles of the corpus's documents among `document_ids`; a deleted one is absent."""
    ids = {int(i) for i in document_ids}
    if not ids:
        return {}
    return dict(
        Document.objects.filter(corpus_id=corpus_id, pk__in=ids).values_list("pk", "title").order_by()
    )


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
        "documents_reread": progress.get("documents_reread"),
        "direction": progress.get("direction"),
        "model_requests": report.model_usage.get("requests"),
    }


def report_answers(*, report: ResearchReport) -> list[dict[str, Any]]:
    """What the report answers, per sub-question of its plan, as data a tool can take away: for
    a question swept over the collection, each document the sweep judged, whether it addresses
    the question (the judge found so, or a cited finding for it quotes it), with the position,
    quote and footnotes of its finding; for another question, the documents its cited findings
    quote. A question asked in the negative (`asked`) is answered by the documents that do not
    address its affirmative `question`. Findings the sweep's judge overruled are left out, as the
    report leaves them out; a document deleted since is named by its id (title null)."""
    state = report.engine_state or {}
    sweep = state.get("sweep") or {}
    findings = split_set_aside(report.findings or [], state)[0]
    footnotes: dict[tuple[int, str], list[int]] = {}
    for citation in report.citations or []:
        key = (citation["passage_id"], " ".join(str(citation.get("quote", "")).split()))
        footnotes.setdefault(key, []).append(citation["footnote"])
    judged = {int(d) for entry in sweep.values() for d in (entry.get("judged") or [])}
    titles = corpus_document_titles(
        corpus_id=report.corpus_id, document_ids=judged | {f["document_id"] for f in findings}
    )
    by_id = {f["id"]: f for f in findings}
    # the position each finding's row shows (the writer's groups), for a model judge's own none
    positions = state.get("positions") or {}
    answers = []
    for index, step in enumerate(report.plan or []):
        if not isinstance(step, dict) or not step.get("question"):
            continue
        entry = sweep.get(str(index)) or {}
        own = [f for f in findings if f.get("question") == index]
        by_document: dict[int, list[dict[str, Any]]] = {}
        for finding in own:
            by_document.setdefault(finding["document_id"], []).append(finding)
        addressing = {int(d) for d in entry.get("addressing") or []} | set(by_document)
        # a document whose evidence is a quote recorded for another question (the same quote
        # answers both) has that finding here too
        for document, finding_id in (entry.get("shared") or {}).items():
            if int(document) in addressing and finding_id in by_id:
                by_document.setdefault(int(document), [by_id[finding_id]])
        examined = [int(d) for d in entry.get("judged") or []]
        documents = []
        for document in list(dict.fromkeys([*examined, *by_document])):
            cited = by_document.get(document, [])
            first = cited[0] if cited else None
            documents.append(
                {
                    "document_id": document,
                    "title": titles.get(document),
                    "addresses": document in addressing,
                    "position": ((first or {}).get("position") or positions.get(str((first or {}).get("id"))))
                    or None,
                    "quote": first["quote"] if first else None,
                    "footnotes": sorted(
                        {
                            n
                            for f in cited
                            for n in footnotes.get((f["passage_id"], " ".join(f["quote"].split())), [])
                        }
                    ),
                }
            )
        documents.sort(key=lambda d: (not d["addresses"], (d["title"] or "").lower(), d["document_id"]))
        answers.append(
            {
                "index": index,
                "question": step["question"],
                "asked": step.get("asked") or None,
                "swept": bool(step.get("sweep")),
                "documents_examined": len(examined),
                "documents": documents,
            }
        )
    return answers


def report_conjunctions(
    *, report: ResearchReport, answers: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The request's questions about two clauses ("Which contracts have both X and Y?", "... X
    but no Y?"): {question, of: [their two plan indices], documents}, the documents answering
    both of its questions (for one asked in the negative, those that do not address it), with
    the position, quote and footnotes of their finding for the first (report_answers)."""
    answers = report_answers(report=report) if answers is None else answers
    by_index = {answer["index"]: answer for answer in answers}
    found = []
    for entry in (report.engine_state or {}).get("both") or []:
        of = [i for i in entry.get("of") or [] if i in by_index]
        if len(of) != 2:
            continue
        sets = []
        for index in of:
            answer = by_index[index]
            wanted = answer["asked"] is None  # a question asked in the negative: those without it
            sets.append({d["document_id"]: d for d in answer["documents"] if d["addresses"] == wanted})
        shared = [document for document_id, document in sets[0].items() if document_id in sets[1]]
        found.append({"question": entry.get("question") or "", "of": of, "documents": shared})
    return found


def report_answers_data(*, report: ResearchReport) -> dict[str, Any]:
    """{answers, conjunctions} (report_answers, report_conjunctions): the report's answers as
    the JSON outputs give them."""
    answers = report_answers(report=report)
    return {"answers": answers, "conjunctions": report_conjunctions(report=report, answers=answers)}
