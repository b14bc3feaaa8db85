import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from guardian.shortcuts import assign_perm

from config.exceptions import ApplicationError
from corpora.models import Document, Passage
from notifications.models import Notification, NotificationKind
from research.constants import (
    BREADTH_MAX,
    DEPTH_PRESETS,
    MAX_STEPS_CEILING,
    PROMPT_MAX_CHARS,
    RUBRIC_MAX_CHARS,
)
from research.exceptions import (
    DepthInvalid,
    DocumentScopeInvalid,
    FindingRejected,
    PromptInvalid,
    ReportAlreadyActive,
    ReportNotCancellable,
    ReportNotFound,
    ReportPermissionDenied,
    RubricInvalid,
)
from research.models import ReportStatus, ResearchReport
from research.services import (
    Outcome,
    ToolCall,
    _locked_for_step,
    finding_record,
    report_cancel,
    report_finalize,
    report_mark_running,
    report_start,
    report_tool_call_record,
)
from tasks.research import in_process_pool

LIABILITY_SENTENCE = (
    "In no event shall either party be liable for any indirect, incidental or consequential damages."
)


# --- report_start ---------------------------------------------------------------------------
@pytest.mark.parametrize("depth", ["shallow", "standard", "deep"])
def test_start_queues_a_report_with_the_depth_preset(user, corpus, depth):
    report = report_start(user=user, corpus=corpus, prompt="  Research indemnification  ", depth=depth)
    stored = ResearchReport.objects.get(pk=report.pk)
    preset = DEPTH_PRESETS[depth]
    assert stored.status == ReportStatus.QUEUED
    assert stored.prompt == "Research indemnification"
    assert stored.title == "Research indemnification"
    assert (stored.max_steps, stored.max_tool_calls, stored.rubric_iterations, stored.breadth) == (
        preset.max_steps,
        preset.max_tool_calls,
        preset.rubric_iterations,
        preset.breadth,
    )
    assert stored.token_limit == preset.token_limit
    assert stored.time_limit_seconds == preset.time_limit_seconds
    assert stored.model == "" and stored.strategy == ""
    assert stored.slug.startswith("research-indemnification-")


def test_settings_cap_the_presets_token_and_time_budgets(user, corpus, settings):
    settings.RESEARCH_TOKEN_LIMIT = 1_000
    settings.RESEARCH_TIME_LIMIT_SECONDS = 120
    report = report_start(user=user, corpus=corpus, prompt="x", depth="deep", time_limit_seconds=900)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.token_limit, stored.time_limit_seconds) == (1_000, 120)


def test_a_request_overrides_breadth_time_limit_and_model(user, corpus, settings, monkeypatch):
    settings.RESEARCH_ALLOWED_MODELS = ["openai:gpt-4o-mini"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the model is usable as configured
    report = report_start(
        user=user, corpus=corpus, prompt="x", breadth=2, time_limit_seconds=90, model="openai:gpt-4o-mini"
    )
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.breadth, stored.time_limit_seconds, stored.model) == (2, 90, "openai:gpt-4o-mini")


@pytest.mark.parametrize(
    ("configured", "said"),
    [
        ("nonsense", "cannot use model 'nonsense': Unknown model: nonsense."),
        (
            "openai:gpt-4o-mini",
            "cannot use model 'openai:gpt-4o-mini': Set the `OPENAI_API_KEY` environment variable or pass "
            "it via `OpenAIProvider(api_key=...)` to use the OpenAI provider.",
        ),
        ("openai-compatible:", "'openai-compatible:' needs a model name and LLM_BASE_URL (or @URL)."),
    ],
)
def test_a_run_whose_model_cannot_be_used_is_refused_before_it_is_queued(
    user, corpus, settings, monkeypatch, configured, said
):
    # given a server whose configured model cannot be used: unknown, or its API key missing
    settings.RESEARCH_MODEL = configured
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # when a run is asked for
    with pytest.raises(ApplicationError) as refused:
        report_start(user=user, corpus=corpus, prompt="liability")
    # then it is refused at once with a short message naming what to fix, and nothing is queued
    assert refused.value.code == "model_not_configured"
    assert refused.value.message == (
        f"{said} The server's RESEARCH_MODEL / RESEARCH_WORKER_MODEL needs fixing (or use offline)."
    )
    assert "http" not in refused.value.message
    assert not ResearchReport.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "code", "field"),
    [
        ({"max_steps": 0}, "max_steps_invalid", "max_steps"),
        ({"max_steps": -5}, "max_steps_invalid", "max_steps"),
        ({"breadth": 0}, "breadth_invalid", "breadth"),
        ({"breadth": BREADTH_MAX + 1}, "breadth_invalid", "breadth"),
        ({"breadth": True}, "breadth_invalid", "breadth"),
        ({"time_limit_seconds": 5}, "time_limit_invalid", "time_limit_seconds"),
        ({"model": "openai:gpt-5-pro"}, "model_not_allowed", "model"),
    ],
)
def test_overrides_out_of_bounds_are_refused_and_write_nothing(user, corpus, kwargs, code, field):
    with pytest.raises(ApplicationError) as raised:
        report_start(user=user, corpus=corpus, prompt="x", **kwargs)
    assert (raised.value.code, raised.value.field) == (code, field)
    assert not ResearchReport.objects.exists()


def test_a_title_from_a_long_prompt_keeps_whole_words(user, corpus):
    # given a one-line question longer than a title holds
    prompt = "What do these agreements require the receiving party to do " * 5
    report = report_start(user=user, corpus=corpus, prompt=prompt)

    # then the title is cut after a whole word, and marked as cut
    assert len(report.title) <= 120 and report.title.endswith("\u2026")
    assert prompt.startswith(report.title[:-1]) and prompt[len(report.title) - 1] == " "


@pytest.mark.parametrize(
    ("asked", "stored"),
    [(1, 1), (7, 7), (MAX_STEPS_CEILING + 1, MAX_STEPS_CEILING), (10**6, MAX_STEPS_CEILING)],
)
def test_start_clamps_max_steps(user, corpus, asked, stored):
    report = report_start(user=user, corpus=corpus, prompt="x", max_steps=asked)
    assert ResearchReport.objects.get(pk=report.pk).max_steps == stored


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"prompt": ""}, PromptInvalid, "prompt"),
        ({"prompt": " \n\t "}, PromptInvalid, "prompt"),
        ({"prompt": "x" * (PROMPT_MAX_CHARS + 1)}, PromptInvalid, "prompt"),
        ({"prompt": "x", "rubric": "r" * (RUBRIC_MAX_CHARS + 1)}, RubricInvalid, "rubric"),
        ({"prompt": "x", "depth": "bottomless"}, DepthInvalid, "depth"),
        ({"prompt": "x", "document_ids": [999999]}, DocumentScopeInvalid, "document_ids"),
        ({"prompt": "x", "document_ids": ["abc"]}, DocumentScopeInvalid, "document_ids"),
    ],
)
def test_start_rejects_bad_input_with_a_code_and_creates_nothing(user, corpus, kwargs, error, field):
    with pytest.raises(error) as raised:
        report_start(user=user, corpus=corpus, **kwargs)
    assert raised.value.field == field
    assert ResearchReport.objects.count() == 0


def test_start_accepts_the_longest_prompt_and_a_document_subset(user, corpus, samples):
    document = samples[0].document
    report = report_start(user=user, corpus=corpus, prompt="y" * PROMPT_MAX_CHARS, document_ids=[document.pk])
    assert report.document_scope == [document.pk]
    assert len(report.title) <= 120


def test_start_needs_read_permission_and_leaves_nothing_behind(
    other_user, corpus, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(ReportPermissionDenied) as raised:
        report_start(user=other_user, corpus=corpus, prompt="steal")
    assert raised.value.code == "permission_denied"
    assert ResearchReport.objects.count() == 0
    assert callbacks == []


def test_start_enqueues_once_on_commit(user, corpus, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        report_start(user=user, corpus=corpus, prompt="x")
    assert len(callbacks) == 1


def test_one_active_report_per_creator_and_corpus(user, other_user, corpus):
    first = report_start(user=user, corpus=corpus, prompt="first")
    with pytest.raises(ReportAlreadyActive) as raised:
        report_start(user=user, corpus=corpus, prompt="second")
    assert raised.value.code == "research_already_in_progress"
    # another reader of the same corpus has their own slot
    assign_perm("view_corpus", other_user, corpus)
    report_start(user=other_user, corpus=corpus, prompt="theirs")
    # and once the first ends, the creator may start again
    report_cancel(user=user, report_id=first.pk)
    report_start(user=user, corpus=corpus, prompt="again")
    assert ResearchReport.objects.filter(creator=user).count() == 2


# --- report_cancel --------------------------------------------------------------------------
def test_cancel_queued_ends_cancelled_at_once_and_notifies(user, report):
    cancelled = report_cancel(user=user, report_id=report.pk)
    assert cancelled.status == ReportStatus.CANCELLED
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED and stored.finalized_at is not None
    notification = Notification.objects.get(recipient=user)
    assert notification.kind == NotificationKind.RESEARCH_REPORT_CANCELLED
    assert notification.data["status"] == "CANCELLED"
    # and its body says it was cancelled before it found anything, not that the corpus has nothing
    assert "The research run was cancelled before it recorded any finding." in stored.content
    assert "no verbatim support" not in stored.content


def test_cancel_running_asks_the_run_to_stop(user, report):
    report_mark_running(report_id=report.pk)
    cancelling = report_cancel(user=user, report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert cancelling.status == stored.status == ReportStatus.CANCELLING
    assert stored.cancel_requested is True
    # a second cancel while cancelling changes nothing and is not an error
    assert report_cancel(user=user, report_id=report.pk).status == ReportStatus.CANCELLING


@pytest.mark.parametrize("terminal", [ReportStatus.COMPLETED, ReportStatus.FAILED, ReportStatus.CANCELLED])
def test_cancel_of_a_terminal_report_is_refused_and_changes_nothing(user, report, terminal):
    ResearchReport.objects.filter(pk=report.pk).update(status=terminal, content="kept")
    with pytest.raises(ReportNotCancellable) as raised:
        report_cancel(user=user, report_id=report.pk)
    assert raised.value.code == "report_not_cancellable"
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.status, stored.content) == (terminal, "kept")
    assert Notification.objects.count() == 0


def test_only_the_creator_or_a_superuser_can_cancel(report, other_user):
    with pytest.raises(ReportNotFound):
        report_cancel(user=other_user, report_id=report.pk)
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED
    admin = get_user_model().objects.create_superuser(username="root", password="pw-root-123")
    assert report_cancel(user=admin, report_id=report.pk).status == ReportStatus.CANCELLED


# --- finding_record -------------------------------------------------------------------------
def _retrieve(report, *passages: Passage) -> None:
    report_tool_call_record(
        report_id=report.pk,
        call=ToolCall("search_passages", {"query": "q"}, 1.0, "ok"),
        passage_ids=[p.pk for p in passages],
    )


def _liability_passage() -> Passage:
    return Passage.objects.get(text__contains="consequential damages")


def test_finding_with_a_retrieved_passage_and_verbatim_quote_is_recorded(report):
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    _retrieve(report, passage)
    # typographic quotes and odd spacing still match; the stored quote is the exact source span
    recorded = finding_record(
        report_id=report.pk,
        claim="Consequential damages are excluded.",
        quote="In  no event shall   either party be liable\nfor any indirect",
        passage_ids=[passage.pk],
        section="Liability",
    )
    finding = recorded.finding
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.findings == [finding]
    assert recorded.report_status == ReportStatus.RUNNING
    document = passage.document
    assert document.text[finding["start"] : finding["end"]] == finding["quote"]
    assert finding["quote"] in passage.text
    assert stored.step_count == 2 and stored.tool_call_count == 2
    assert stored.tool_call_log[-1]["tool"] == "record_finding"
    assert stored.tool_call_log[-1]["outcome"] == "recorded finding 1"


def test_a_finding_recorded_after_a_cancel_request_reports_the_cancel(user, report):
    # given a running report whose creator asked it to stop
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    _retrieve(report, passage)
    report_cancel(user=user, report_id=report.pk)
    # when the run records a finding it had in hand
    recorded = finding_record(
        report_id=report.pk, claim="Damages excluded.", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk]
    )
    # then it is kept, and the status its write saw tells the run to stop
    assert recorded.report_status == ReportStatus.CANCELLING
    assert ResearchReport.objects.get(pk=report.pk).findings == [recorded.finding]


@pytest.mark.parametrize(
    ("claim", "quote", "use_retrieved", "code"),
    [
        ("c", LIABILITY_SENTENCE, False, "passage_not_retrieved"),
        ("c", "In no event shall the Buyer be liable for anything at all.", True, "quote_not_verbatim"),
        ("c", "liable", True, "finding_rejected"),
        ("", LIABILITY_SENTENCE, True, "finding_rejected"),
    ],
)
def test_finding_rejections_say_what_to_fix_and_store_nothing(
    report, samples, claim, quote, use_retrieved, code
):
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    other = Passage.objects.exclude(pk=passage.pk).filter(is_heading=False).first()
    _retrieve(report, other)
    if use_retrieved:
        _retrieve(report, passage)
    with pytest.raises(FindingRejected) as raised:
        finding_record(report_id=report.pk, claim=claim, quote=quote, passage_ids=[passage.pk])
    assert raised.value.code == code
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.findings == []
    assert stored.tool_call_log[-1]["outcome"].startswith("rejected: ")


def test_the_same_quote_twice_is_a_duplicate(report):
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    _retrieve(report, passage)
    finding_record(report_id=report.pk, claim="a", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk])
    with pytest.raises(FindingRejected) as raised:
        finding_record(report_id=report.pk, claim="b", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk])
    assert raised.value.code == "finding_duplicate"
    assert len(ResearchReport.objects.get(pk=report.pk).findings) == 1


def test_no_findings_once_the_run_is_over(report):
    with pytest.raises(FindingRejected) as raised:  # still QUEUED
        finding_record(report_id=report.pk, claim="a", quote=LIABILITY_SENTENCE, passage_ids=[1])
    assert raised.value.code == "run_not_active"


# --- report_finalize ------------------------------------------------------------------------
def test_finalize_runs_once(user, report):
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    _retrieve(report, passage)
    finding_record(
        report_id=report.pk, claim="Damages excluded.", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk]
    )
    first = report_finalize(
        report_id=report.pk, outcome=Outcome.COMPLETED, draft=f'<cite ids="{passage.pk}">X</cite>'
    )
    second = report_finalize(report_id=report.pk, outcome=Outcome.FAILED, error="late duplicate")
    stored = ResearchReport.objects.get(pk=report.pk)
    assert first.status == second.status == stored.status == ReportStatus.COMPLETED
    assert stored.error == ""
    assert stored.content.startswith("X[^1]")
    assert stored.citations[0]["quote"] == LIABILITY_SENTENCE
    assert list(stored.cited_passages.values_list("pk", flat=True)) == [passage.pk]
    assert list(stored.cited_documents.values_list("pk", flat=True)) == [passage.document_id]
    assert Notification.objects.filter(recipient=user).count() == 1


@pytest.mark.django_db(transaction=True)
def test_step_writes_skip_the_wal_flush_only_inside_their_own_transaction(user, corpus):
    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is a PostgreSQL setting")
    report = report_start(user=user, corpus=corpus, prompt="x")

    def setting() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    with transaction.atomic():
        _locked_for_step(report.pk, relaxed_commit=True)
        inside = setting()
    assert (inside, setting()) == ("off", "on")
    assert in_process_pool.wait(timeout=60)  # the run start queued, before the flush


def test_a_salvaged_report_names_a_document_not_judged_by_its_title(report):
    # given a run whose judge failed on one document, then whose budget ran out
    report_mark_running(report_id=report.pk)
    passage = _liability_passage()
    _retrieve(report, passage)
    finding_record(
        report_id=report.pk, claim="Damages excluded.", quote=LIABILITY_SENTENCE, passage_ids=[passage.pk]
    )
    unjudged = Document.objects.exclude(pk=passage.document_id).get()
    ResearchReport.objects.filter(pk=report.pk).update(engine_state={"not_judged": [unjudged.pk]})
    # when the run is finalized from its findings
    report_finalize(report_id=report.pk, outcome=Outcome.SALVAGED, budget="steps")
    # then Gaps name the document by its title
    gaps = ResearchReport.objects.get(pk=report.pk).content.split("## Gaps", 1)[1]
    assert f"examined): *{unjudged.title}*." in gaps
