"""manage.py research --corpus NAME "prompt": start a research run and wait for its report,
its progress on stderr. Without a broker the run happens in this process; with one it is queued
for the Celery workers and this command waits for it (or, with --no-wait, prints the report id
and returns)."""

import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.exceptions import ApplicationError
from corpora.management.commands._cli import add_user_argument, corpus_for_cli, dumps, fail
from corpora.selectors import cli_user_get
from research.constants import DEFAULT_DEPTH, DEPTH_PRESETS
from research.models import ReportStatus, ResearchReport
from research.selectors import report_answers_data
from research.services import report_cancel, report_start

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Research a corpus and print the cited report."

    def add_arguments(self, parser) -> None:
        parser.add_argument("prompt", help="what to research")
        parser.add_argument("--corpus", required=True, help="corpus name or numeric id")
        parser.add_argument("--depth", choices=list(DEPTH_PRESETS), default=DEFAULT_DEPTH)
        parser.add_argument("--max-steps", type=int, help="model requests allowed (default by depth)")
        parser.add_argument("--breadth", type=int, help="sub-questions at the first level (default by depth)")
        parser.add_argument(
            "--time-limit", type=int, help="the run's time limit in seconds (default by depth)"
        )
        parser.add_argument("--model", default="", help="a model this server offers, for this run only")
        parser.add_argument("--rubric", default="", help="what the report must satisfy")
        parser.add_argument("--title", default="", help="report title (default: from the prompt)")
        parser.add_argument(
            "--documents", default="", help="comma-separated document ids to limit the search"
        )
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
        parser.add_argument("--no-wait", action="store_true", help="queue the run and print its id only")
        parser.add_argument(
            "--timeout", type=float, default=0, help="stop waiting after S seconds (0 = never)"
        )
        add_user_argument(parser)

    def handle(self, *args, **options) -> None:
        if options["no_wait"] and not settings.CELERY_BROKER_URL:
            raise CommandError(
                "[no_broker] --no-wait needs CELERY_BROKER_URL: without a broker the run lives here"
            )
        corpus = corpus_for_cli(options["user"], options["corpus"])
        user = cli_user_get(username=options["user"])
        try:
            report = report_start(
                user=user,
                corpus=corpus,
                prompt=options["prompt"],
                title=options["title"] or None,
                depth=options["depth"],
                max_steps=options["max_steps"],
                rubric=options["rubric"],
                document_ids=_ids(options["documents"]),
                breadth=options["breadth"],
                time_limit_seconds=options["time_limit"],
                model=options["model"] or None,
            )
        except ApplicationError as error:
            raise fail(error) from error
        if options["no_wait"]:
            self.stdout.write(
                dumps({"report_id": report.pk, "status": report.status})
                if options["json"]
                else str(report.pk)
            )
            return
        report = self._wait(user, report.pk, options["timeout"])
        self.stdout.write(dumps(report_json(report)) if options["json"] else report_text(report))
        if report.status != ReportStatus.COMPLETED:
            sys.exit(1)

    def _wait(self, user, report_id: int, timeout: float) -> ResearchReport:
        started = time.monotonic()
        cancelled = False
        shown = None
        while True:
            try:
                report = ResearchReport.objects.get(pk=report_id)
                line = progress_line(report, time.monotonic() - started)
                stage = line.rsplit(" · ", 1)[0]  # all but the seconds: a line when it changes
                if stage != shown:
                    self.stderr.write(f"report {report_id}: {line}")
                    shown = stage
                if report.is_terminal:
                    return report
                if timeout and time.monotonic() - started > timeout:
                    raise CommandError(
                        f"[timeout] report {report_id} is still {report.status.lower()}; it keeps running"
                    )
                time.sleep(POLL_SECONDS)
            except KeyboardInterrupt:
                if cancelled:
                    raise
                cancelled = True
                self.stderr.write(
                    "cancelling: the findings so far will be kept (Ctrl-C again to stop waiting)"
                )
                report_cancel(user=user, report_id=report_id)


def _ids(raw: str) -> list[int] | None:
    if not raw.strip():
        return None
    try:
        return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise CommandError("[document_scope_invalid] --documents takes comma-separated ids") from exc


def report_json(report: ResearchReport) -> dict:
    started = report.started_at or report.created
    duration = (report.completed_at - started).total_seconds() if report.completed_at else None
    return {
        "report_id": report.pk,
        "slug": report.slug,
        "title": report.title,
        "status": report.status,
        "depth": report.depth,
        "content": report.content,
        "citations": report.citations,
        **report_answers_data(report=report),
        "findings": len(report.findings),
        "warnings": report.warnings,
        "error": report.error,
        "model_usage": report.model_usage,
        "duration_seconds": round(duration, 3) if duration is not None else None,
        "retry_count": report.retry_count,
        "strategy": report.strategy or None,
        "progress": report.progress,
    }


def progress_line(report: ResearchReport, elapsed: float) -> str:
    """ "running · sweeping · level 1/2 · 12/61 documents · 5 findings · 9s"."""
    progress = report.progress or {}
    parts = [report.status.lower()]
    if progress.get("phase") and progress["phase"] != report.status.lower():
        parts.append(progress["phase"])
    if progress.get("level") and progress.get("levels"):
        parts.append(f"level {progress['level']}/{progress['levels']}")
    if progress.get("documents_total"):
        parts.append(f"{progress.get('documents_swept', 0)}/{progress['documents_total']} documents")
    if progress.get("documents_reread"):
        parts.append(f"{progress['documents_reread']} read again")
    findings = len(report.findings)
    parts += [f"{findings} finding{'' if findings == 1 else 's'}", f"{elapsed:.0f}s"]
    return " · ".join(parts)


def report_text(report: ResearchReport) -> str:
    lines = [report.content.rstrip(), "", f"-- report {report.pk} ({report.slug}): {report.status}"]
    if report.error:
        lines.append(f"-- error: {report.error}")
    if report.warnings:
        lines.append(f"-- warnings: {', '.join(report.warnings[:10])}")
    return "\n".join(lines)
