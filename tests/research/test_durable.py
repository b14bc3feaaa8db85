"""Leases, retries, resume and the stall reaper, with real database writes and a real local
HTTP model server where a provider's failures are needed."""

from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic_ai import models as pydantic_ai_models

from corpora.models import Passage
from notifications.models import Notification
from research.engine.run import report_run
from research.exceptions import ReportAlreadyActive, ReportNotFound, ReportNotResumable
from research.models import ReportStatus, ResearchReport
from research.services import (
    LeaseLost,
    Outcome,
    ToolCall,
    finding_record,
    report_cancel,
    report_finalize,
    report_mark_running,
    report_resume,
    report_start,
    report_tool_call_record,
    reports_reap_stalled,
)
from tests.chat_server import ChatServer, RoleScript, tool_results

LIABILITY_SENTENCE = (
    "In no event shall either party be liable for any indirect, incidental or consequential damages."
)


@pytest.fixture
def allow_local_model(monkeypatch, settings):
    monkeypatch.setattr(pydantic_ai_models, "ALLOW_MODEL_REQUESTS", True)
    settings.RESEARCH_MODEL = "openai-compatible:local-model"
    settings.LLM_API_KEY = "sk-local"


def _stall(report: ResearchReport, seconds: int = 3600) -> None:
    past = timezone.now() - timedelta(seconds=seconds)
    ResearchReport.objects.filter(pk=report.pk).update(
        last_progress_at=past, lease_expires_at=past, updated=past
    )


def _finding_in_first_attempt(report) -> dict:
    passage = Passage.objects.get(text__contains="consequential damages")
    report_tool_call_record(
        report_id=report.pk, call=ToolCall("search_passages", {}, 1.0, "ok"), passage_ids=[passage.pk]
    )
    return finding_record(
        report_id=report.pk, claim="Damages excluded.", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk]
    ).finding


# --- Leases ---------------------------------------------------------------------------------
def test_a_task_delivered_twice_runs_once(report):
    first = report_mark_running(report_id=report.pk)
    assert first is not None and first.lease_token
    assert report_mark_running(report_id=report.pk) is None  # the lease is live
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.lease_token == first.lease_token


def test_an_expired_lease_is_taken_over_and_the_old_run_can_no_longer_write(report):
    first = report_mark_running(report_id=report.pk)
    _stall(report)
    second = report_mark_running(report_id=report.pk)
    assert second is not None and second.lease_token != first.lease_token
    with pytest.raises(LeaseLost):
        report_tool_call_record(
            report_id=report.pk,
            call=ToolCall("search_passages", {}, 1.0, "ok"),
            lease_token=first.lease_token,
        )
    with pytest.raises(LeaseLost):
        report_finalize(
            report_id=report.pk, outcome=Outcome.COMPLETED, draft="late", lease_token=first.lease_token
        )
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.RUNNING
    # the new holder finalizes, once
    report_finalize(
        report_id=report.pk, outcome=Outcome.COMPLETED, draft="# Done", lease_token=second.lease_token
    )
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.COMPLETED
    assert Notification.objects.filter(report=report).count() == 1


def test_cancel_racing_completion_ends_in_exactly_one_terminal_state(user, report):
    running = report_mark_running(report_id=report.pk)
    report_cancel(user=user, report_id=report.pk)  # the user cancels ...
    report_finalize(
        report_id=report.pk, outcome=Outcome.COMPLETED, draft="# Done", lease_token=running.lease_token
    )
    report_finalize(report_id=report.pk, outcome=Outcome.CANCELLED, lease_token=running.lease_token)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED
    assert Notification.objects.filter(report=report).count() == 1


# --- Every finding reaches the report -------------------------------------------------------
def test_findings_the_draft_leaves_out_are_listed_and_cited(report):
    running = report_mark_running(report_id=report.pk)
    _finding_in_first_attempt(report)
    report_finalize(
        report_id=report.pk,
        outcome=Outcome.COMPLETED,
        draft="# Short draft\n\nNothing cited.",
        lease_token=running.lease_token,
    )
    stored = ResearchReport.objects.get(pk=report.pk)
    assert "## Additional findings\n\n- Damages excluded.[^1]" in stored.content
    assert stored.citations[0]["quote"] == LIABILITY_SENTENCE


# --- Transient and permanent provider failures ----------------------------------------------
class FlakyResearcher:
    """Searches, records a finding, then answers 503 `failures` times before finishing."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self, body):
        self.calls += 1
        results = tool_results(body)
        if not results:
            return {
                "tool_calls": [("search_passages", {"query": "consequential damages", "mode": "lexical"})]
            }
        if len(results) == 1:
            hit = next(r for r in results[0]["results"] if "consequential" in r["text"])
            finding = {
                "claim": "Damages excluded.",
                "quote": LIABILITY_SENTENCE,
                "passage_ids": [hit["passage_id"]],
            }
            return {"tool_calls": [("record_finding", finding)]}
        if self.failures > 0:
            self.failures -= 1
            return {"status": 503}
        return {"tool_calls": [("finish_direction", {"follow_ups": []})]}


def test_two_503s_are_retried_in_line_and_the_run_completes(report, settings, allow_local_model):
    with ChatServer(RoleScript(FlakyResearcher(failures=2))) as server:
        settings.LLM_BASE_URL = server.url
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED, stored.error
    assert stored.model_usage["inline_retries"] == 2
    assert stored.retry_count == 0
    assert "Damages excluded.[^1]" in stored.content


def test_a_provider_down_longer_requeues_the_run_which_resumes_with_its_findings(
    report, settings, allow_local_model
):
    # 1 try + 2 in-line retries fail, then one more on resume
    with ChatServer(RoleScript(FlakyResearcher(failures=4))) as server:
        settings.LLM_BASE_URL = server.url
        report_run(report_id=report.pk)
        requeued = ResearchReport.objects.get(pk=report.pk)
        assert requeued.status == ReportStatus.QUEUED
        assert requeued.retry_count == 1
        assert requeued.not_before is not None
        assert any(
            w.startswith("retried:ModelHTTPError") or w.startswith("retried:Model") for w in requeued.warnings
        )
        assert len(requeued.findings) == 1  # the checkpoint
        report_run(report_id=report.pk)  # the re-queued delivery
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED, stored.error
    assert stored.retry_count == 1
    assert len(stored.findings) == 1
    assert "Damages excluded.[^1]" in stored.content
    assert stored.model_usage["inline_retries"] == 3


def test_an_authentication_error_fails_at_once(report, settings, allow_local_model):
    with ChatServer(lambda body: {"status": 401}) as server:
        settings.LLM_BASE_URL = server.url
        report_run(report_id=report.pk)
        assert len(server.requests) == 1
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert stored.retry_count == 0
    assert "401" in stored.error


# --- The stall reaper -----------------------------------------------------------------------
def test_the_reaper_resumes_a_stalled_run_and_counts_a_retry(report, django_capture_on_commit_callbacks):
    report_mark_running(report_id=report.pk)
    _finding_in_first_attempt(report)
    _stall(report)
    with django_capture_on_commit_callbacks() as callbacks:
        assert reports_reap_stalled() == {"resumed": 1, "failed": 0, "cancelled": 0, "requeued": 0}
    assert len(callbacks) == 1  # enqueued
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.status, stored.retry_count, stored.lease_token) == (ReportStatus.QUEUED, 1, "")
    # the resumed run finishes with the finding from before the stall
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert LIABILITY_SENTENCE in [c["quote"] for c in stored.citations]


def test_the_reaper_fails_a_stalled_run_past_its_retries_with_its_findings(report, settings):
    settings.RESEARCH_TASK_MAX_RETRIES = 0
    report_mark_running(report_id=report.pk)
    _finding_in_first_attempt(report)
    _stall(report)
    assert reports_reap_stalled()["failed"] == 1
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert "stalled" in stored.error
    assert "Damages excluded.[^1]" in stored.content


def test_the_reaper_ends_a_stalled_cancel_and_leaves_live_runs_alone(user, corpus, report):
    report_mark_running(report_id=report.pk)
    report_cancel(user=user, report_id=report.pk)
    _stall(report)
    assert reports_reap_stalled() == {"resumed": 0, "failed": 0, "cancelled": 1, "requeued": 0}
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLED
    live = report_start(user=user, corpus=corpus, prompt="live")
    report_mark_running(report_id=live.pk)
    assert reports_reap_stalled() == {"resumed": 0, "failed": 0, "cancelled": 0, "requeued": 0}
    assert ResearchReport.objects.get(pk=live.pk).status == ReportStatus.RUNNING


def test_the_reaper_enqueues_a_queued_run_whose_message_was_lost(report, django_capture_on_commit_callbacks):
    _stall(report)
    with django_capture_on_commit_callbacks() as callbacks:
        assert reports_reap_stalled()["requeued"] == 1
    assert len(callbacks) == 1
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED


# --- Resume on request ----------------------------------------------------------------------
def test_resume_continues_a_cancelled_report_from_its_findings(
    user, report, django_capture_on_commit_callbacks
):
    running = report_mark_running(report_id=report.pk)
    _finding_in_first_attempt(report)
    report_cancel(user=user, report_id=report.pk)
    report_finalize(report_id=report.pk, outcome=Outcome.CANCELLED, lease_token=running.lease_token)
    with django_capture_on_commit_callbacks() as callbacks:
        resumed = report_resume(user=user, report_id=report.pk)
    assert len(callbacks) == 1
    assert resumed.pk == report.pk
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.status, stored.step_count, stored.finalized_at) == (ReportStatus.QUEUED, 0, None)
    assert len(stored.findings) == 1 and stored.warnings[-1] == "resumed"
    # its progress says it waits in the queue again, not the phase it ended in
    assert stored.progress["phase"] == "queued"
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert LIABILITY_SENTENCE in [c["quote"] for c in stored.citations]


def test_resume_is_refused_for_running_or_completed_reports_and_other_users(user, other_user, corpus, report):
    with pytest.raises(ReportNotResumable) as raised:
        report_resume(user=user, report_id=report.pk)  # QUEUED
    assert raised.value.code == "report_not_resumable"
    report_run(report_id=report.pk)
    with pytest.raises(ReportNotResumable):
        report_resume(user=user, report_id=report.pk)  # COMPLETED
    with pytest.raises(ReportNotFound):
        report_resume(user=other_user, report_id=report.pk)


def test_resume_respects_the_one_active_run_guard(user, corpus, report):
    report_cancel(user=user, report_id=report.pk)
    report_start(user=user, corpus=corpus, prompt="another")
    with pytest.raises(ReportAlreadyActive):
        report_resume(user=user, report_id=report.pk)
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLED
