import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from conversations.models import MessageRole
from conversations.services import chat_message_append, conversation_create
from corpora.models import Passage
from notifications.models import Notification, NotificationKind
from research.engine.researcher import research_agent
from research.engine.run import report_run, report_salvage_on_timeout
from research.models import ReportStatus, ResearchReport
from research.services import report_cancel, report_mark_running, report_start
from tests.research.checks import assert_closed_citation_graph
from tests.research.scripts import call, first_result, scripted

LIABILITY_SENTENCE = (
    "In no event shall either party be liable for any indirect, incidental or consequential damages."
)


# --- The offline engine ---------------------------------------------------------------------
def test_offline_engine_researches_and_writes_a_cited_extractive_report(user, report):
    # when the run executes with the default (offline) model
    finished = report_run(report_id=report.pk)
    # then
    stored = ResearchReport.objects.get(pk=report.pk)
    assert finished.status == stored.status == ReportStatus.COMPLETED
    assert [step["question"] for step in stored.plan] == [
        "What limits the liability of the supplier?",
        "When can the licence agreement be terminated?",
    ]
    assert len(stored.findings) >= 2
    assert stored.citations, stored.content
    assert_closed_citation_graph(stored)
    quotes = " ".join(c["quote"] for c in stored.citations)
    assert "liability of the Supplier" in quotes
    assert "terminate this Agreement" in quotes
    assert "## Summary" in stored.content and "## Findings" in stored.content
    assert stored.model_usage["engine"] == "offline-extractive"
    assert stored.model_usage["requests"] >= 3
    tools = [entry["tool"] for entry in stored.tool_call_log]
    assert tools[:3] == ["record_plan", "search_passages", "search_passages"]
    assert "record_finding" in tools
    assert all(
        {"tool", "arguments", "duration_ms", "outcome"} <= set(entry) for entry in stored.tool_call_log
    )
    assert stored.step_count == len(stored.tool_call_log)
    notification = Notification.objects.get(recipient=user)
    assert notification.kind == NotificationKind.RESEARCH_REPORT_COMPLETED
    assert notification.data == {
        "report_id": report.pk,
        "slug": report.slug,
        "corpus_id": report.corpus_id,
        "corpus_name": "Contracts",
        "title": report.title,
        "status": "COMPLETED",
    }


def test_offline_engine_reports_gaps_for_questions_the_corpus_cannot_answer(user, corpus, samples):
    report = report_start(
        user=user, corpus=corpus, prompt="Research insurance limits, zebra migration and governing law"
    )
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert [s["question"] for s in stored.plan] == ["insurance limits", "zebra migration", "governing law"]
    gaps = stored.content.split("## Gaps", 1)[1].split("## Sources", 1)[0]
    assert "zebra migration" in gaps and "governing law" not in gaps
    assert_closed_citation_graph(stored)


def test_a_run_is_a_no_op_for_missing_or_finished_reports(report):
    assert report_run(report_id=987654) is None
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.CANCELLED)
    assert report_run(report_id=report.pk) is None
    assert ResearchReport.objects.get(pk=report.pk).tool_call_log == []


# --- A model that misbehaves ----------------------------------------------------------------
def test_fabricated_ids_mangled_quotes_and_agent_sources_are_refused_or_removed(report):
    unretrieved = Passage.objects.get(text__contains="Delaware").pk  # real, but never searched for
    seen = {}

    def search(returns):
        return [call("search_passages", "s1", query="consequential damages", mode="lexical")]

    def bad_findings(returns):
        hit = first_result(returns, "s1")
        seen["hit"] = hit["passage_id"]
        return [
            call(
                "record_finding",
                "f-unretrieved",
                claim="x",
                quote=LIABILITY_SENTENCE,
                passage_ids=[hit["passage_id"] + 999],
            ),
            call(
                "record_finding",
                "f-invented",
                claim="x",
                quote="either party shall pay triple damages",
                passage_ids=[hit["passage_id"]],
            ),
            call(
                "record_finding",
                "f-good",
                claim="Consequential damages are excluded.",
                quote=LIABILITY_SENTENCE,
                passage_ids=[hit["passage_id"]],
            ),
        ]

    def finalize(returns):
        seen["returns"] = returns
        pid = seen["hit"]
        draft = (
            "# Liability\n\n"
            f'<cite ids="{pid}">Consequential damages are excluded.</cite> '
            f'<cite ids="{pid + 999},{pid}" quote="triple damages apply">Fabricated support.</cite> '
            f'<cite ids="{pid + 999}">Only an invented source.</cite> '
            f'<cite ids="{unretrieved}">Not retrieved in this run.</cite> '
            "See [the site](https://evil.example/x) and ![pixel](https://evil.example/p.png).\n\n"
            "## Sources\n\n1. Made-up Law Review, 2020\n"
        )
        return [call("finalize_report", "final", markdown=draft)]

    with research_agent.override(model=scripted(search, bad_findings, finalize)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    returns = seen["returns"]
    assert returns["f-unretrieved"].startswith("error[passage_not_retrieved]")
    assert returns["f-invented"].startswith("error[quote_not_verbatim]")
    assert returns["f-good"].startswith("recorded finding 1")
    assert stored.status == ReportStatus.COMPLETED
    assert len(stored.findings) == 1
    assert [c["passage_id"] for c in stored.citations] == [seen["hit"]]
    assert stored.citations[0]["quote"] == LIABILITY_SENTENCE
    assert "Made-up Law Review" not in stored.content
    assert "evil.example" not in stored.content
    codes = {w.split(":")[0] for w in stored.warnings}
    assert {
        "citation_unretrieved",
        "quote_not_verbatim",
        "agent_sources_removed",
        "link_removed",
        "claim_without_source",
    } <= codes
    assert_closed_citation_graph(stored)


def test_report_ids_come_from_the_run_not_the_model(report, user, corpus):
    # given another report of the same user, finished, which the model must not be able to touch
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.COMPLETED)
    other = report_start(user=user, corpus=corpus, prompt="second run")

    def finding_with_smuggled_id(returns):
        return [
            call(
                "record_finding",
                "f",
                claim="x",
                quote=LIABILITY_SENTENCE,
                passage_ids=[1],
                report_id=report.pk,
            )
        ]

    def finalize(returns):
        return [call("finalize_report", "final", markdown="done")]

    with research_agent.override(model=scripted(finding_with_smuggled_id, finalize)):
        report_run(report_id=other.pk)
    # the tool has no report_id parameter: the extra argument is refused by validation
    assert ResearchReport.objects.get(pk=report.pk).findings == []
    assert ResearchReport.objects.get(pk=other.pk).findings == []


# --- Cancel, budgets, time and failures -----------------------------------------------------
def _search_then_find(returns):
    if "s1" not in returns:
        return [call("search_passages", "s1", query="consequential damages", mode="lexical")]
    hit = first_result(returns, "s1")
    if "f1" not in returns:
        return [
            call(
                "record_finding",
                "f1",
                claim="Damages excluded.",
                quote=LIABILITY_SENTENCE,
                passage_ids=[hit["passage_id"]],
            )
        ]
    return [call("search_passages", f"more-{len(returns)}", query="liability", mode="lexical")]


def test_cancel_mid_run_stops_at_the_next_step_and_keeps_findings(user, report):
    async def cancel_at_third_request(index):
        if index == 3:
            await sync_to_async(report_cancel, thread_sensitive=True)(user=user, report_id=report.pk)

    with research_agent.override(model=scripted(_search_then_find, after=cancel_at_third_request)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED
    assert len(stored.findings) == 1
    assert stored.step_count <= 4
    assert "Damages excluded.[^1]" in stored.content
    assert_closed_citation_graph(stored)
    assert Notification.objects.get(recipient=user).kind == NotificationKind.RESEARCH_REPORT_CANCELLED


def test_a_cancel_seen_by_a_finding_step_stops_the_run_before_another_model_request(user, report):
    # given a cancel requested while the model is choosing its second step, a finding
    async def cancel_during_second_request(index):
        if index == 1:
            await sync_to_async(report_cancel, thread_sensitive=True)(user=user, report_id=report.pk)

    # when the run goes on
    with research_agent.override(model=scripted(_search_then_find, after=cancel_during_second_request)):
        report_run(report_id=report.pk)

    # then the finding is kept and the model is not asked again
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED
    assert [f["claim"] for f in stored.findings] == ["Damages excluded."]
    assert stored.model_usage["requests"] == 2
    assert [entry["tool"] for entry in stored.tool_call_log] == ["search_passages", "record_finding"]


def test_the_request_limit_salvages_the_findings_into_a_completed_report(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability", max_steps=4)
    with research_agent.override(model=scripted(_search_then_find)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert "budget_exhausted:steps" in stored.warnings
    assert stored.model_usage["requests"] == 4
    assert "Damages excluded.[^1]" in stored.content
    assert_closed_citation_graph(stored)


def test_a_budget_with_no_findings_fails_with_a_clear_message(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability", max_steps=2)

    def search_forever(returns):
        return [call("search_passages", f"s{len(returns)}", query="liability")]

    with research_agent.override(model=scripted(search_forever)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert stored.error == "The research budget (steps) ran out before any finding was recorded."
    assert "budget_exhausted:steps" in stored.warnings
    assert Notification.objects.get(recipient=user).kind == NotificationKind.RESEARCH_REPORT_FAILED


def test_the_token_limit_is_a_budget_too(user, corpus, samples, settings):
    settings.RESEARCH_TOKEN_LIMIT = 60
    report = report_start(user=user, corpus=corpus, prompt="liability")
    with research_agent.override(model=scripted(_search_then_find)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert "budget_exhausted:tokens" in stored.warnings


def test_the_time_limit_salvages_findings(user, corpus, samples, settings):
    settings.RESEARCH_TIME_LIMIT_SECONDS = 1
    report = report_start(user=user, corpus=corpus, prompt="liability")

    async def slow_after_the_finding(index):
        if index >= 2:
            import asyncio

            await asyncio.sleep(0.4)

    with research_agent.override(model=scripted(_search_then_find, after=slow_after_the_finding)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert "budget_exhausted:time" in stored.warnings
    assert len(stored.findings) == 1


def test_the_workers_soft_time_limit_salvages_too(report):
    report_mark_running(report_id=report.pk)
    report_salvage_on_timeout(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert "budget_exhausted:time" in stored.warnings


def test_an_unexpected_error_fails_the_report_and_keeps_its_findings(user, report):
    def explode(returns):
        if "f1" in returns:
            raise RuntimeError("provider exploded " + "!" * 5000)
        return _search_then_find(returns)

    with research_agent.override(model=scripted(explode)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert stored.error.startswith("RuntimeError: provider exploded")
    assert len(stored.error) <= 4000
    assert len(stored.findings) == 1
    assert "Damages excluded.[^1]" in stored.content
    assert_closed_citation_graph(stored)


def test_revoked_access_fails_the_run_before_any_retrieval(user, report):
    from guardian.shortcuts import remove_perm

    remove_perm("view_corpus", user, report.corpus)
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert "CorpusNotFound" in stored.error
    assert stored.retrieved_passage_ids == []


# --- Conversation, notification and the report page -----------------------------------------
@pytest.mark.parametrize("ending", ["completed", "failed", "cancelled"])
def test_every_terminal_state_notifies_and_posts_to_the_conversation(user, corpus, samples, client, ending):
    conversation = conversation_create(creator=user, corpus=corpus)
    origin = chat_message_append(
        conversation=conversation, role=MessageRole.HUMAN, content="please research liability"
    )
    report = report_start(
        user=user, corpus=corpus, prompt="liability", conversation=conversation, origin_message=origin
    )
    if ending == "cancelled":
        report_cancel(user=user, report_id=report.pk)
    elif ending == "failed":
        with research_agent.override(model=scripted(lambda returns: 1 / 0)):
            report_run(report_id=report.pk)
    else:
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ending.upper()
    notification = Notification.objects.get(recipient=user)
    assert notification.kind == f"RESEARCH_REPORT_{ending.upper()}"
    message = conversation.messages.get(role=MessageRole.SYSTEM)
    url = reverse("research:report-detail", kwargs={"slug": report.slug})
    assert message.data == {"report_id": report.pk, "slug": report.slug, "status": ending.upper(), "url": url}
    assert f"]({url})" in message.content
    # the link opens the report for its creator
    client.force_login(user)
    page = client.get(url)
    assert page.status_code == 200
    assert report.title in page.content.decode()


def test_the_report_page_is_creator_only_and_sanitized(user, other_user, report, client):
    def search(returns):
        return [call("search_passages", "s1", query="consequential damages", mode="lexical")]

    def find(returns):
        pid = first_result(returns, "s1")["passage_id"]
        return [call("record_finding", "f1", claim="c", quote=LIABILITY_SENTENCE, passage_ids=[pid])]

    def finalize(returns):
        pid = first_result(returns, "s1")["passage_id"]
        draft = (
            "<script>alert(1)</script><img src=x onerror=alert(2)> "
            f'<cite ids="{pid}">Claim <b onclick="x()">bold</b></cite>'
        )
        return [call("finalize_report", "final", markdown=draft)]

    with research_agent.override(model=scripted(search, find, finalize)):
        report_run(report_id=report.pk)
    url = reverse("research:report-detail", kwargs={"slug": report.slug})

    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(other_user)
    assert client.get(url).status_code == 404  # someone else's: as if missing
    client.force_login(user)
    html = client.get(url).content.decode()
    assert "<script>alert" not in html and "onerror" not in html and "onclick" not in html
    assert 'href="#source-1"' in html and 'id="source-1"' in html
    assert f"<mark>{LIABILITY_SENTENCE}</mark>" in html.replace("\n", " ")
