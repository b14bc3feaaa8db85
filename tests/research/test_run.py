import asyncio
import re
import time

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models.function import FunctionModel

from conversations.models import MessageRole
from conversations.services import chat_message_append, conversation_create
from corpora.models import Passage
from corpora.services import corpus_create
from notifications.models import Notification, NotificationKind
from research.constants import DEPTH_PRESETS
from research.engine.critic import critic_agent
from research.engine.judge import judge_agent, offline_judge
from research.engine.planner import planner_agent
from research.engine.prompts import read_data
from research.engine.researcher import researcher_agent
from research.engine.run import report_run, report_salvage_on_timeout
from research.engine.writer import writer_agent
from research.models import ReportStatus, ResearchReport
from research.selectors import report_answers_data
from research.services import report_cancel, report_mark_running, report_start
from tests.factories import ingest_agreements, ingest_text
from tests.research.checks import assert_closed_citation_graph
from tests.research.scripts import call, first_result, scripted, tool_returns

LIABILITY_SENTENCE = (
    "In no event shall either party be liable for any indirect, incidental or consequential damages."
)


def _tools(report: ResearchReport) -> list[str]:
    return [entry["tool"] for entry in report.tool_call_log]


# --- The offline engine ---------------------------------------------------------------------
def test_offline_engine_plans_researches_writes_and_reviews_a_cited_report(user, report):
    # when the run executes with the default (offline) minds
    finished = report_run(report_id=report.pk)
    # then the request was split into its two questions, researched, written and reviewed
    stored = ResearchReport.objects.get(pk=report.pk)
    assert finished.status == stored.status == ReportStatus.COMPLETED
    assert stored.strategy == "deep"
    assert [step["question"] for step in stored.plan] == [
        "What limits the liability of the supplier?",
        "When can the licence agreement be terminated?",
    ]
    assert all(step["queries"][0] == step["question"] for step in stored.plan)
    assert len(stored.findings) >= 2
    assert {f["question"] for f in stored.findings} == {0, 1}
    assert_closed_citation_graph(stored)
    quotes = " ".join(c["quote"] for c in stored.citations)
    assert "liability of the Supplier" in quotes
    assert "terminate this Agreement" in quotes
    assert "## Summary" in stored.content and "## Detailed analysis" in stored.content
    # every role played its part, each counted
    usage = stored.model_usage
    assert usage["engine"] == "offline-extractive"
    assert set(usage["roles"]) == {"planner", "researcher", "writer", "critic"}
    assert usage["requests"] == sum(role["requests"] for role in usage["roles"].values())
    assert usage["tool_calls"] == stored.tool_call_count == len(stored.tool_call_log)
    assert _tools(stored)[:2] == ["search_passages", "search_passages"]  # the planner reads first
    assert "record_plan" in _tools(stored) and "record_finding" in _tools(stored)
    assert stored.progress["phase"] == "completed"
    assert 1 <= stored.engine_state["levels_done"] <= DEPTH_PRESETS["standard"].depth
    notification = Notification.objects.get(recipient=user)
    assert notification.kind == NotificationKind.RESEARCH_REPORT_COMPLETED


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


def test_a_short_question_to_a_few_documents_takes_the_fast_path(user, corpus, samples):
    # given a short single question with no collection or comparison words, two documents
    report = report_start(user=user, corpus=corpus, prompt="What law governs the supply agreement?")
    # when it runs
    report_run(report_id=report.pk)
    # then one researcher answers in one retrieval round, with numbered citations
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert stored.strategy == "fast"
    assert set(stored.model_usage["roles"]) == {"researcher", "writer"}
    searches = [e for e in stored.tool_call_log if e["tool"] == "search_passages"]
    assert len(searches) == 2  # the question and its keywords, sent together
    assert "## Answer" in stored.content
    assert "Delaware" in " ".join(c["quote"] for c in stored.citations)
    assert_closed_citation_graph(stored)


def test_a_run_is_a_no_op_for_missing_or_finished_reports(report):
    assert report_run(report_id=987654) is None
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.CANCELLED)
    assert report_run(report_id=report.pk) is None
    assert ResearchReport.objects.get(pk=report.pk).tool_call_log == []


# --- A model that misbehaves ----------------------------------------------------------------
def _search(returns):
    return [call("search_passages", "s1", query="consequential damages", mode="lexical")]


def _finish(returns):
    return [call("finish_direction", "done", follow_ups=[])]


def test_fabricated_ids_mangled_quotes_and_agent_sources_are_refused_or_removed(user, corpus, samples):
    ingest_text(corpus, "zebras.txt", "Zebras migrate across the savanna every year in large herds.\n")
    unretrieved = Passage.objects.get(text__contains="Zebras").pk  # real, but never searched for
    report = report_start(user=user, corpus=corpus, prompt="liability")
    seen = {}

    def bad_findings(returns):
        hit = first_result(returns, "s1")
        seen["hit"] = hit["passage_id"]
        return [
            call(
                "record_finding",
                "f-unretrieved",
                claim="x",
                quote=LIABILITY_SENTENCE,
                passage_ids=[unretrieved],
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

    def finish(returns):
        seen["returns"] = returns
        return _finish(returns)

    def write_unknown(returns):
        return [call("submit_report", "draft-1", markdown='<cite findings="99">An invented finding.</cite>')]

    def write(returns):
        seen["writer_retry"] = returns["draft-1"]
        pid = seen["hit"]
        draft = (
            "# Liability\n\n"
            '<cite findings="1">Consequential damages are excluded.</cite> '
            f'<cite ids="{pid + 999}">Only an invented source.</cite> '
            f'<cite ids="{unretrieved}">Not retrieved in this run.</cite> '
            f'<cite ids="{pid}">A passage with a finding.</cite>\n\n'
            'The contract says "the buyer shall pay triple damages on demand" outright.\n\n'
            "See [the site](https://evil.example/x) and ![pixel](https://evil.example/p.png).\n\n"
            "## Sources\n\n1. Made-up Law Review, 2020\n"
        )
        return [call("submit_report", "draft-2", markdown=draft)]

    with (
        researcher_agent.override(model=scripted(_search, bad_findings, finish)),
        writer_agent.override(model=scripted(write_unknown, write)),
    ):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    returns = seen["returns"]
    # the writer was told that finding 99 does not exist, and wrote again
    assert "findings [99] do not exist" in str(seen["writer_retry"])
    assert returns["f-unretrieved"].startswith("error[passage_not_retrieved]")
    assert returns["f-invented"].startswith("error[quote_not_verbatim]")
    assert returns["f-good"].startswith("recorded finding")
    assert stored.status == ReportStatus.COMPLETED
    assert [f["claim"] for f in stored.findings] == ["Consequential damages are excluded."]
    assert {c["passage_id"] for c in stored.citations} == {seen["hit"]}
    assert {c["quote"] for c in stored.citations} == {LIABILITY_SENTENCE}
    assert "Made-up Law Review" not in stored.content
    assert "evil.example" not in stored.content
    assert "triple damages on demand" not in stored.content
    codes = {w.split(":")[0] for w in stored.warnings}
    assert {
        "citation_unknown_passage",
        "citation_unretrieved",
        "quote_removed",
        "agent_sources_removed",
        "link_removed",
        "claim_without_source",
    } <= codes
    assert_closed_citation_graph(stored)


def test_a_passage_cited_with_no_finding_behind_it_gets_no_footnote(report):
    # a passage the planner's search retrieves, but no finding quotes
    pid = Passage.objects.get(text__contains="Delaware").pk

    def write(returns):
        return [call("submit_report", "final", markdown=f'<cite ids="{pid}">Delaware law governs.</cite>')]

    with researcher_agent.override(model=scripted(_finish)), writer_agent.override(model=scripted(write)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.citations == []
    assert any(w.startswith("citation_without_finding:") for w in stored.warnings)


def test_report_ids_come_from_the_run_not_the_model(report, user, corpus):
    # given another report of the same user, finished, which the model must not be able to touch
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.COMPLETED)
    other = report_start(user=user, corpus=corpus, prompt="What limits liability?\nWho may terminate?")

    def finding_with_smuggled_ids(returns):
        return [
            call(
                "record_finding",
                "f",
                claim="x",
                quote=LIABILITY_SENTENCE,
                passage_ids=[1],
                report_id=report.pk,
                question=7,
            )
        ]

    with researcher_agent.override(model=scripted(finding_with_smuggled_ids, _finish)):
        report_run(report_id=other.pk)
    # the tool has no report_id or question parameter: the extra arguments are refused
    assert ResearchReport.objects.get(pk=report.pk).findings == []
    assert ResearchReport.objects.get(pk=other.pk).findings == []


def test_broken_tool_arguments_get_a_precise_retry_not_a_crashed_run(report):
    seen = {}

    def sloppy(returns):
        return [call("record_finding", "bad", claim="x", quote=LIABILITY_SENTENCE, passage_ids="not a list")]

    def corrected(returns):
        seen["retry"] = returns["bad"]
        hit = first_result(returns, "s1")
        return [
            call(
                "record_finding",
                "good",
                claim="Excluded.",
                quote=LIABILITY_SENTENCE,
                passage_ids=[hit["passage_id"]],
            )
        ]

    with researcher_agent.override(model=scripted(_search, sloppy, corrected, _finish)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert "passage_ids" in str(seen["retry"])
    assert {f["claim"] for f in stored.findings} == {"Excluded."}


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


def test_cancel_mid_run_stops_at_the_next_step_and_keeps_findings(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability")

    async def cancel_at_third_request(index):
        if index == 3:
            await sync_to_async(report_cancel, thread_sensitive=True)(user=user, report_id=report.pk)

    with researcher_agent.override(model=scripted(_search_then_find, after=cancel_at_third_request)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED
    assert [f["claim"] for f in stored.findings] == ["Damages excluded."]
    assert stored.model_usage["roles"]["researcher"]["requests"] <= 4
    assert "Damages excluded.[^1]" in stored.content
    # and the report says the run was cut short, so a question without findings is no answer
    assert "*The research run was cancelled before it finished: this is what it recorded" in stored.content
    assert_closed_citation_graph(stored)
    assert Notification.objects.get(recipient=user).kind == NotificationKind.RESEARCH_REPORT_CANCELLED


def test_a_cancel_during_a_slow_model_request_stops_the_run_without_waiting_for_it(
    user, corpus, samples, settings
):
    # given a researcher whose third model request takes half a minute, cancelled meanwhile
    settings.RESEARCH_CANCEL_POLL_SECONDS = 0.2
    report = report_start(user=user, corpus=corpus, prompt="liability")

    async def cancel_then_think_slowly(index):
        if index == 2:
            await sync_to_async(report_cancel, thread_sensitive=True)(user=user, report_id=report.pk)
            await asyncio.sleep(30)

    with researcher_agent.override(model=scripted(_search_then_find, after=cancel_then_think_slowly)):
        started = time.monotonic()
        report_run(report_id=report.pk)
        elapsed = time.monotonic() - started

    # then the run stops within the poll interval, the request abandoned, its finding kept
    assert elapsed < 10
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.CANCELLED
    assert [f["claim"] for f in stored.findings] == ["Damages excluded."]
    assert "Damages excluded.[^1]" in stored.content
    assert_closed_citation_graph(stored)


def test_the_step_budget_salvages_the_findings_into_a_completed_report(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability", max_steps=6)
    with researcher_agent.override(model=scripted(_search_then_find)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert "budget_exhausted:steps" in stored.warnings
    assert stored.model_usage["requests"] == 6
    assert "Damages excluded.[^1]" in stored.content
    assert_closed_citation_graph(stored)


def test_parallel_researchers_never_exceed_the_shared_budget(user, corpus, samples):
    # given four sub-questions researched at once by researchers that would search forever
    prompt = "Research liability, termination, governing law and insurance"
    report = report_start(user=user, corpus=corpus, prompt=prompt, max_steps=23)
    ResearchReport.objects.filter(pk=report.pk).update(max_tool_calls=40)

    async def search_forever(messages, info):
        await asyncio.sleep(0)  # let the other researchers take their turns
        n = sum(1 for m in messages if type(m).__name__ == "ModelResponse")
        return ModelResponse(parts=[call("search_passages", f"s{n}", query="agreement")])

    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.function import FunctionModel

    with researcher_agent.override(model=FunctionModel(search_forever)):
        report_run(report_id=report.pk)

    # then the run stopped exactly at its budget, which every researcher shared
    stored = ResearchReport.objects.get(pk=report.pk)
    assert len(stored.plan) == 4
    usage = stored.model_usage
    assert usage["requests"] == 23
    assert usage["tool_calls"] <= 40
    assert stored.tool_call_count <= 40
    assert usage["roles"]["researcher"]["requests"] == 23 - usage["roles"]["planner"]["requests"]
    assert stored.status == ReportStatus.FAILED
    assert stored.warnings[-1].startswith("budget_exhausted:")


def test_a_budget_with_no_findings_fails_with_a_clear_message(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability", max_steps=3)

    def search_forever(returns):
        return [call("search_passages", f"s{len(returns)}", query="liability")]

    with researcher_agent.override(model=scripted(search_forever)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.FAILED
    assert stored.error == "The research budget (steps) ran out before any finding was recorded."
    assert "budget_exhausted:steps" in stored.warnings
    assert Notification.objects.get(recipient=user).kind == NotificationKind.RESEARCH_REPORT_FAILED


def test_the_token_limit_is_a_budget_too(user, corpus, samples, settings):
    settings.RESEARCH_TOKEN_LIMIT = 3000
    report = report_start(user=user, corpus=corpus, prompt="liability")
    with researcher_agent.override(model=scripted(_search_then_find)):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert "budget_exhausted:tokens" in stored.warnings
    used = stored.model_usage["input_tokens"] + stored.model_usage["output_tokens"]
    assert used <= 3000


def test_the_time_limit_salvages_findings(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability", time_limit_seconds=30)
    ResearchReport.objects.filter(pk=report.pk).update(time_limit_seconds=1)

    async def slow_after_the_finding(index):
        if index >= 2:
            await asyncio.sleep(0.4)

    with researcher_agent.override(model=scripted(_search_then_find, after=slow_after_the_finding)):
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


def test_an_unexpected_error_fails_the_report_and_keeps_its_findings(user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="liability")

    def explode(returns):
        if "f1" in returns:
            raise RuntimeError("provider exploded " + "!" * 5000)
        return _search_then_find(returns)

    with researcher_agent.override(model=scripted(explode)):
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


# --- Critic and judge -------------------------------------------------------------------------
def test_the_critic_loop_stops_at_the_presets_rubric_iterations(report):
    # given a critic that is never satisfied and always names a gap
    def never_satisfied(returns):
        gap = {"direction": "governing law of Delaware", "question": 0, "reason": "missing"}
        return [call("submit_critique", "c", satisfied=False, gaps=[gap])]

    with critic_agent.override(model=scripted(never_satisfied)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    rounds = DEPTH_PRESETS["standard"].rubric_iterations
    assert stored.status == ReportStatus.COMPLETED
    assert stored.model_usage["roles"]["critic"]["requests"] == rounds
    assert stored.engine_state["critic_rounds"] == rounds
    assert stored.model_usage["roles"]["writer"]["requests"] >= 2  # rewritten after the gaps


def test_a_critics_gap_is_researched_as_one_line_of_bounded_length(report):
    # given a critic naming a gap in thousands of characters over many lines
    long_gap = "governing law\n\nof " + "Delaware " * 1_000

    def verbose(returns):
        gap = {"direction": long_gap, "question": 0, "reason": "missing"}
        return [call("submit_critique", "c", satisfied=False, gaps=[gap])]

    directions = []

    def researcher(messages, info):
        directions.append(read_data(messages))
        return ModelResponse(parts=[call("finish_direction", "f", follow_ups=[])])

    with (
        critic_agent.override(model=scripted(verbose)),
        researcher_agent.override(model=FunctionModel(researcher)),
    ):
        report_run(report_id=report.pk)

    # then the researchers are given it cut to a planned question's length, on one line
    gaps = [d for d in directions if d["direction"].startswith("governing law of Delaware")]
    assert gaps
    assert all(len(d["direction"]) <= 500 and all(len(q) <= 500 for q in d["queries"]) for d in gaps)


def test_a_judge_quote_that_is_not_verbatim_is_sent_back_and_corrected(user, corpus, samples):
    # given a question about the collection and a judge whose first answer misquotes
    report = report_start(
        user=user, corpus=corpus, prompt="Which of these agreements limit liability or can be terminated?"
    )
    answers = {}

    def judge(messages, info):
        from pydantic_ai.messages import ModelResponse

        from research.engine.prompts import read_data, tool_returns

        retried = bool(tool_returns(messages))  # the validator's correction came back
        data = read_data(messages)
        question = next(q for q in data["questions"] if q["passages"])
        passage = question["passages"][0]
        quote = passage["text"][:60] if retried else "words that are not in the passage at all"
        verdict = {
            "question": question["index"],
            "addresses": True,
            "passage_id": passage["passage_id"],
            "quote": quote,
            "claim": "c",
        }
        answers.setdefault(data["document"]["document_id"], []).append(retried)
        return ModelResponse(parts=[call("submit_verdicts", "v", verdicts=[verdict])])

    from pydantic_ai.models.function import FunctionModel

    # (the researchers record nothing, so each document's finding is the sweep's)
    with judge_agent.override(model=FunctionModel(judge)), researcher_agent.override(model=scripted(_finish)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert all(tries == [False, True] for tries in answers.values()), answers
    swept = [f for f in stored.findings if f.get("origin") == "sweep"]
    assert swept and all(f["quote"] in Passage.objects.get(pk=f["passage_id"]).text for f in swept)
    assert_closed_citation_graph(stored)


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
        with researcher_agent.override(model=scripted(lambda returns: 1 / 0)):
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
    def find(returns):
        pid = first_result(returns, "s1")["passage_id"]
        return [call("record_finding", "f1", claim="c", quote=LIABILITY_SENTENCE, passage_ids=[pid])]

    def write(returns):
        draft = (
            "<script>alert(1)</script><img src=x onerror=alert(2)> "
            '<cite findings="1">Claim <b onclick="x()">bold</b></cite>'
        )
        return [call("submit_report", "final", markdown=draft)]

    with (
        researcher_agent.override(model=scripted(_search, find, _finish)),
        writer_agent.override(model=scripted(write)),
    ):
        report_run(report_id=report.pk)
    url = reverse("research:report-detail", kwargs={"slug": report.slug})

    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(other_user)
    assert client.get(url).status_code == 404  # someone else's: as if missing
    client.force_login(user)
    html = client.get(url).content.decode()
    # markup in the report is shown as text, never run: no script, no element with an event handler
    article = html.split("<article>", 1)[1].split("</article>", 1)[0]
    assert "<script" not in article and "<img" not in article and "<b " not in article
    assert not re.search(r"<[^>]+\bon\w+\s*=", html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in article
    assert 'href="#source-1"' in html and 'id="source-1"' in html
    assert f"<mark>{LIABILITY_SENTENCE}</mark>" in html.replace("\n", " ")
    # each source links to the document view at its passage, the quote's offsets in the link
    citation = ResearchReport.objects.get(pk=report.pk).citations[0]
    document_url = reverse("corpora:document", args=[report.corpus_id, citation["document_id"]])
    link = f"{document_url}?passage={citation['passage_id']}&amp;mark={citation['start']}-{citation['end']}"
    assert f'href="{link}#passage-{citation["passage_id"]}"' in html
    assert 'id="source-panel"' in html and "research/footnotes.js" in html


# --- Levels, the sweep and presets --------------------------------------------------------------
def test_a_question_about_the_collection_sweeps_every_candidate_document(user, corpus):
    # given twelve agreements, five of which require insurance
    documents = ingest_agreements(corpus, 12, insured=5)
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")
    # when the run executes
    report_run(report_id=report.pk)
    # then each candidate was judged on its own and each insuring agreement found
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert stored.plan[0]["sweep"] is True
    sweep = stored.engine_state["sweep"]["0"]
    assert sorted(sweep["judged"]) == sorted(documents)
    assert sorted(sweep["addressing"]) == sorted(documents[:5])
    judged = [e for e in stored.tool_call_log if e["tool"] == "search_document"]
    assert len(judged) == 12
    cited = {c["document_id"] for c in stored.citations}
    assert cited == set(documents[:5])
    assert len([f for f in stored.findings if f["document_id"] in documents[:5]]) == 5  # one each
    assert "5 of 12 documents examined address it" in stored.content
    assert "| Document | Position | Evidence |" in stored.content
    gaps = stored.content.split("## Gaps", 1)[1]
    assert "in 7 of the 12 documents examined, no passage was judged to address it" in gaps
    assert stored.progress["documents_swept"] == stored.progress["documents_total"] == 12
    assert_closed_citation_graph(stored)


@pytest.mark.parametrize(
    "prompt",
    ["Which of these agreements do not require insurance?", "List the agreements without insurance."],
)
def test_a_question_asked_in_the_negative_is_answered_by_the_documents_without_it(user, corpus, prompt):
    # given twelve agreements, five of which require insurance, and two notes that share no word
    # with the question (no search of it reaches them)
    documents = ingest_agreements(corpus, 12, insured=5)
    for name, minutes in (("note-a.txt", "forty"), ("note-b.txt", "fifty")):
        ingest_text(
            corpus, name, f"Bake the bread at two hundred degrees for {minutes} minutes, then let it cool.\n"
        )
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then the sweep judged the affirmative question, and the report answers the one asked
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    step = stored.plan[0]
    assert step["sweep"] is True and step["asked"].endswith("?") and "not" in step["asked"]
    assert "not" not in step["question"].split() and "insurance" in step["question"]
    sweep = stored.engine_state["sweep"]["0"]
    assert sorted(sweep["addressing"]) == sorted(documents[:5])
    without = _section_lines(stored.content, f"## Documents without it: {step['asked']}")
    listed = [line for line in without if line.startswith("- ")]
    assert listed == [f"- *agreement-{i:02d}*" for i in range(5, 12)] + ["- *note-a*", "- *note-b*"]
    summary = "\n".join(_section_lines(stored.content, "## Summary"))
    assert (
        f"**{step['asked']}** In 9 of the 14 documents examined, no passage was judged to address "
        f"*{step['question']}*"
    ) in summary
    assert "5 documents do" in summary
    # the five that do are cited; the absent ones are the answer, not a gap
    assert {c["document_id"] for c in stored.citations} == set(documents[:5])
    assert "documents examined, no passage was judged to address it" not in stored.content
    assert_closed_citation_graph(stored)


def test_a_model_planners_question_in_the_negative_is_judged_as_its_affirmative_and_the_writer_told(
    user, corpus
):
    # given a model planner that plans the request in the negative, and a model writer
    documents = ingest_agreements(corpus, 6, insured=2)
    told = {}

    def plan(returns):
        question = {
            "question": "Which agreements lack insurance?",
            "queries": ["agreements lacking insurance"],
        }
        return [call("submit_plan", "plan", sub_questions=[question])]

    async def write(messages, info):
        told.update(read_data(messages))
        cited = told["findings"][0]
        markdown = f'# Insurance\n\n<cite findings="{cited["id"]}">{cited["claim"]}</cite>\n'
        return ModelResponse(parts=[call("submit_report", "write", markdown=markdown)])

    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements have no insurance?")
    # when the run executes
    with planner_agent.override(model=scripted(plan)), writer_agent.override(model=FunctionModel(write)):
        report_run(report_id=report.pk)
    # then the sweep judged the affirmative question, searched without the negation's word
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert stored.plan == [
        {
            "question": "Which agreements have insurance?",
            "queries": ["Which agreements have insurance?", "agreements insurance"],
            "sweep": True,
            "asked": "Which agreements lack insurance?",
        }
    ]
    assert sorted(stored.engine_state["sweep"]["0"]["addressing"]) == sorted(documents[:2])
    # and the writer was told which question was asked, and which documents do not address it
    [question] = told["questions"]
    assert question["asked"] == "Which agreements lack insurance?"
    assert question["not_addressing_ids"] == documents[2:]
    assert_closed_citation_graph(stored)


def test_the_answers_give_each_document_the_position_its_table_row_shows(user, corpus):
    # given five agreements, three of which require insurance
    documents = ingest_agreements(corpus, 5, insured=3)
    report = report_start(user=user, corpus=corpus, prompt="Which agreements require insurance?")
    # when the run executes
    report_run(report_id=report.pk)
    # then each addressing document's position in the answers is its row's Position cell
    stored = ResearchReport.objects.get(pk=report.pk)
    rows = _section_lines(stored.content, "## Documents: Which agreements require insurance?")
    shown = {
        row.split(" | ")[0].strip("| "): row.split(" | ")[1] for row in rows if row.startswith("| agreement-")
    }
    [answer] = report_answers_data(report=stored)["answers"]
    positions = {d["title"]: d["position"] for d in answer["documents"] if d["addresses"]}
    assert positions == shown and len(positions) == 3 and all(positions.values())
    assert {d["document_id"] for d in answer["documents"] if d["addresses"]} == set(documents[:3])


def test_a_question_one_document_answers_gives_it_a_position_too(user, corpus):
    # given six agreements, one of which requires insurance
    documents = ingest_agreements(corpus, 6, insured=1)
    report = report_start(user=user, corpus=corpus, prompt="Which agreements require insurance?")
    # when the run executes
    report_run(report_id=report.pk)
    # then its row names the position its quote takes, as the exports do, and the Summary
    # quotes it (no positions among documents to count)
    stored = ResearchReport.objects.get(pk=report.pk)
    rows = _section_lines(stored.content, "## Documents: Which agreements require insurance?")
    [row] = [row for row in rows if row.startswith("| agreement-")]
    position = row.split(" | ")[1]
    assert position == "Supplier shall maintain commercial general liability"
    [answer] = report_answers_data(report=stored)["answers"]
    [addressing] = [d for d in answer["documents"] if d["addresses"]]
    assert (addressing["document_id"], addressing["position"]) == (documents[0], position)
    assert "1 of 6 documents examined address it: The Supplier shall maintain" in stored.content
    assert "## Key findings" not in stored.content


def test_a_document_denying_what_is_asked_takes_a_position_saying_so(user, corpus):
    # given four agreements letting either party terminate for convenience and one that says
    # neither party may
    for n, party in enumerate(["Acme", "Birch", "Cobalt", "Dune"]):
        ingest_text(
            corpus,
            f"{party.lower()}.txt",
            f"Services agreement between {party} Ltd and the Customer, number {n}.\n\nEither party may "
            f"terminate this agreement for convenience on {30 + n} days written notice to the other party.\n",
        )
    ingest_text(
        corpus,
        "quill.txt",
        "Translation agreement between Quill Ltd and the Customer.\n\nFor the avoidance of doubt, neither "
        "party may terminate this agreement for convenience during the fixed term.\n",
    )
    prompt = "Which of these agreements let us terminate for convenience?"
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then Quill's row names its position as a denial, the others' do not
    stored = ResearchReport.objects.get(pk=report.pk)
    rows = _section_lines(stored.content, f"## Documents: {prompt}")
    cells = [row.split(" | ") for row in rows if row.startswith("| ") and not row.startswith("| Document")]
    shown = {cell[0].strip("| "): cell[1] for cell in cells}
    assert shown["quill"].startswith("not allowed: "), shown
    assert len(shown) == 5 and sum(label.startswith("not allowed: ") for label in shown.values()) == 1


def _notice_agreements(corpus) -> dict[str, int]:
    """Four supply agreements, each with its own party and notice period."""
    parties = {
        "Zephyr Logistics": "ninety",
        "Harbor Freight": "thirty",
        "Nimbus Foods": "sixty",
        "Orchid Labs": "ten",
    }
    return {
        party: ingest_text(
            corpus,
            f"{party.split()[0].lower()}.txt",
            f"Supply agreement between {party} and the Buyer.\n\nEither party may terminate this agreement "
            f"on {days} days written notice to the other party.\n",
        ).document.pk
        for party, days in parties.items()
    }


def test_a_request_naming_one_agreement_is_asked_of_it_alone(user, corpus):
    # given four agreements, one with Zephyr Logistics
    documents = _notice_agreements(corpus)
    prompt = "How much notice does the Zephyr Logistics agreement require for termination?"
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then it is asked of that agreement alone, without its name, and says so
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["named_documents"] == [documents["Zephyr Logistics"]]
    assert (
        stored.engine_state["named_prompt"] == "How much notice does the agreement require for termination?"
    )
    assert "Asked of the document the request names, alone: *zephyr*." in stored.content
    assert {c["document_id"] for c in stored.citations} == {documents["Zephyr Logistics"]}
    assert any("ninety days written notice" in c["quote"] for c in stored.citations)
    assert_closed_citation_graph(stored)


@pytest.mark.parametrize(
    "prompt",
    [
        # about the collection, whatever it names
        "Which of these agreements give more notice than the Zephyr Logistics agreement?",
        # a name every agreement holds names none
        "How much notice does the Buyer get?",
    ],
)
def test_a_request_about_the_collection_or_naming_no_one_agreement_is_not_narrowed(user, corpus, prompt):
    _notice_agreements(corpus)
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["named_documents"] == []
    assert "Asked of the document" not in stored.content


def test_a_misspelt_request_is_researched_as_the_collection_spells_it(user, corpus):
    # given six agreements, three requiring insurance
    insured = ingest_agreements(corpus, 6, insured=3)[:3]
    prompt = "wich of these agreements mantain liabilty insurence?"
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then it is asked as spelt correctly: about the collection, its documents swept, and says so
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["corrections"] == [
        ["wich", "which"],
        ["mantain", "maintain"],
        ["liabilty", "liability"],
        ["insurence", "insurance"],
    ]
    assert stored.engine_state["read_as"] == "which of these agreements maintain liability insurance?"
    assert stored.strategy == "deep" and [step["sweep"] for step in stored.plan] == [True]
    assert "Read as the collection spells it: wich → which, mantain → maintain" in stored.content
    assert {c["document_id"] for c in stored.citations} == set(insured)
    assert_closed_citation_graph(stored)


def test_a_request_spelt_as_the_collection_does_is_read_as_typed(user, corpus):
    ingest_agreements(corpus, 3, insured=1)
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["corrections"] == [] and "read_as" not in stored.engine_state
    assert "Read as" not in stored.content


def test_a_question_naming_what_no_document_names_is_answered_none(user, corpus):
    # given six agreements governed by the laws of numbered states, none naming Japan
    ingest_agreements(corpus, 6, insured=3)
    report = report_start(
        user=user, corpus=corpus, prompt="Which of these agreements are governed by the laws of Japan?"
    )
    # when the run executes
    report_run(report_id=report.pk)
    # then the question is not swept (no document can answer it), and the report says none does
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["absent_names"] == ["Japan"]
    assert [step["sweep"] for step in stored.plan] == [False]
    summary = _section_lines(stored.content, "## Summary")
    assert summary[0].startswith(
        "- **Which of these agreements are governed by the laws of Japan?** None: no passage of the 6 "
        "documents in scope mentions *Japan*."
    )
    assert "address it" not in stored.content and "## Documents:" not in stored.content
    assert (
        "- Which of these agreements are governed by the laws of Japan?: "
        "no document in scope mentions *Japan*."
    ) in _section_lines(stored.content, "## Gaps")
    assert_closed_citation_graph(stored)


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        # an acronym a document spells out, a hyphenated term it splits
        ("Which of these agreements have an MFN clause?", "bound by most favored nation pricing"),
        ("Which of these agreements have a Non-Compete?", "bound by a covenant not to compete"),
        # the law of Switzerland is Swiss law
        ("Which of these agreements are governed by Swiss law?", "governed by the laws of Switzerland"),
        # "Japanese" names Japan
        ("Which of these agreements are governed by Japanese law?", "governed by the laws of Japan"),
        # "Japan" names "Japanese"
        ("Which of these agreements are governed by the laws of Japan?", "governed by Japanese law"),
    ],
)
def test_a_name_said_in_another_form_is_held(user, corpus, prompt, text):
    ingest_agreements(corpus, 5, insured=2)
    ingest_text(corpus, "tokyo.txt", f"Supply agreement. This agreement is {text}.\n")
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.engine_state["absent_names"] == []
    assert [step["sweep"] for step in stored.plan] == [True]
    assert "None: no passage" not in stored.content


def test_the_summarys_positions_count_each_document_once(user, corpus, settings):
    # given the demo's four documents and a fifth (a collection), the services agreement saying
    # two things of payment terms
    for path in sorted((settings.BASE_DIR / "examples" / "northwind").iterdir()):
        ingest_text(corpus, path.name, path.read_text(encoding="utf-8"))
    ingest_text(
        corpus, "vendor-policy.txt", "Vendor policy\n\nVendors must notify us of a breach within 72 hours.\n"
    )
    report = report_start(
        user=user, corpus=corpus, prompt="Please research payment terms, liability caps and laptops"
    )
    # when the run executes
    report_run(report_id=report.pk)
    # then no position of a question names its one document a second time
    stored = ResearchReport.objects.get(pk=report.pk)
    summary = _section_lines(stored.content, "## Summary")
    [payment] = [line for line in summary if line.startswith("- **payment terms**")]
    assert re.search(r"\*\* 1 of \d documents examined address it", payment), payment
    assert sum(int(n) for n in re.findall(r"(\d+) documents?: ", payment)) <= 1, payment
    assert_closed_citation_graph(stored)


def test_the_parts_of_a_request_beyond_the_breadth_are_named_not_dropped(user, corpus):
    # given a request of four parts, at shallow (breadth 3)
    ingest_agreements(corpus, 4, insured=2)
    prompt = "Please research insurance, governing law, liability caps and termination for convenience"
    report = report_start(user=user, corpus=corpus, prompt=prompt, depth="shallow")
    # when the run executes
    report_run(report_id=report.pk)
    # then three are researched and the fourth is named under Gaps, with a warning
    stored = ResearchReport.objects.get(pk=report.pk)
    assert [step["question"] for step in stored.plan] == ["insurance", "governing law", "liability caps"]
    assert stored.engine_state["not_planned"] == ["termination for convenience"]
    assert "plan_truncated:1" in stored.warnings
    assert (
        "- Not researched, being more than the sub-questions this run plans (its breadth): "
        "*termination for convenience*. A larger breadth or a deeper depth researches it."
    ) in _section_lines(stored.content, "## Gaps")
    # and at a breadth that holds them all, nothing is named
    ResearchReport.objects.filter(pk=report.pk).delete()
    wide = report_start(user=user, corpus=corpus, prompt=prompt, depth="shallow", breadth=4)
    report_run(report_id=wide.pk)
    stored = ResearchReport.objects.get(pk=wide.pk)
    assert len(stored.plan) == 4 and stored.engine_state["not_planned"] == []
    assert "Not researched" not in stored.content


def test_one_quote_answering_two_questions_is_each_ones_evidence(user, corpus):
    # given four agreements whose one sentence both requires insurance and caps liability
    documents = [
        ingest_text(
            corpus,
            f"agreement-{i:02d}.txt",
            f"Agreement {i} between Party A{i} and Party B{i}.\n\nThe Supplier shall maintain liability "
            "insurance, and the Supplier's liability under this agreement is capped at the fees paid.\n",
        ).document.pk
        for i in range(4)
    ]
    prompt = "Which agreements require liability insurance, and which cap the supplier's liability?"
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then each document's sentence is recorded once (for whichever question quoted it first),
    # and both questions' answers cite it
    stored = ResearchReport.objects.get(pk=report.pk)
    assert sorted(f["document_id"] for f in stored.findings) == sorted(documents)
    summary = _section_lines(stored.content, "## Summary")
    for question in (
        "Which agreements require liability insurance?",
        "Which agreements cap the supplier's liability?",
    ):
        assert any(
            line.startswith(f"- **{question}** 4 of 4 documents examined address it") for line in summary
        )
    tables = [
        [
            row.split(" | ")[:2]
            for row in _section_lines(stored.content, f"## Documents: {question}")
            if row.startswith("| agreement-")
        ]
        for question in (
            "Which agreements require liability insurance?",
            "Which agreements cap the supplier's liability?",
        )
    ]
    # each table has a row per agreement, with the position its quote has (in whichever question
    # recorded it: a question whose researcher recorded only one is not grouped, and has none)
    assert [document for document, _ in tables[0]] == [f"| agreement-{i:02d}" for i in range(4)]
    assert tables[0] == tables[1]
    assert "## Gaps" not in stored.content
    for answer in report_answers_data(report=stored)["answers"]:
        assert [(d["document_id"], d["addresses"], bool(d["footnotes"])) for d in answer["documents"]] == [
            (d, True, True) for d in documents
        ]
        assert [d["position"] or "" for d in answer["documents"]] == [position for _, position in tables[0]]
    assert_closed_citation_graph(stored)


@pytest.mark.parametrize(
    "prompt", ["List the agreements lacking insurance", "Find agreements not requiring insurance"]
)
def test_a_request_naming_the_documents_by_a_negative_participle_is_answered_by_those_without(
    user, corpus, prompt
):
    # given six agreements, two of which require insurance
    documents = ingest_agreements(corpus, 6, insured=2)
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then the request is asked in the negative: the four without insurance are its answer
    stored = ResearchReport.objects.get(pk=report.pk)
    [step] = stored.plan
    assert step["asked"].startswith("Which agreements ") and step["question"] != step["asked"]
    [heading] = [line for line in stored.content.splitlines() if line.startswith("## Documents without it")]
    assert [line for line in _section_lines(stored.content, heading) if line.startswith("- ")] == [
        f"- *agreement-{i:02d}*" for i in range(2, 6)
    ]
    assert {c["document_id"] for c in stored.citations} == set(documents[:2])
    assert_closed_citation_graph(stored)


def test_which_do_and_which_do_not_is_answered_both_ways(user, corpus):
    # given six agreements, two of which require insurance
    documents = ingest_agreements(corpus, 6, insured=2)
    report = report_start(
        user=user, corpus=corpus, prompt="Which agreements require insurance, and which do not?"
    )
    # when the run executes
    report_run(report_id=report.pk)
    # then the second question is the first asked in the negative, answered by the other four
    stored = ResearchReport.objects.get(pk=report.pk)
    assert [step.get("asked") for step in stored.plan] == [None, "Which agreements do not require insurance?"]
    assert {c["document_id"] for c in stored.citations} == set(documents[:2])
    without = _section_lines(
        stored.content, "## Documents without it: Which agreements do not require insurance?"
    )
    assert [line for line in without if line.startswith("- ")] == [
        f"- *agreement-{i:02d}*" for i in range(2, 6)
    ]
    # and the one question both ask was judged once per document, with one feedback reference
    log = stored.tool_call_log
    assert sorted(e["arguments"] for e in log if e["tool"] == "search_document") == sorted(
        f"document_id={d}, questions=1" for d in documents
    )
    assert [e["arguments"] for e in log if e["tool"] == "sweep_reference"] == [
        "question='Which agreements require insurance?'"
    ]
    assert_closed_citation_graph(stored)


@pytest.mark.parametrize(
    ("prompt", "answering"),
    [
        ("Which agreements have both an insurance requirement and an audit right?", [0, 2]),
        ("Which agreements require insurance but do not have an audit right?", [1, 3]),
    ],
)
def test_a_question_about_two_clauses_is_answered_by_the_documents_answering_both(
    user, corpus, prompt, answering
):
    # given eight agreements: the first four require insurance, the even ones grant an audit right
    for i in range(8):
        lines = [f"Agreement {i} between Party A{i} and Party B{i}.", ""]
        if i < 4:
            lines += [
                f"The Supplier shall maintain commercial general liability insurance of at least {i + 1} "
                "million dollars throughout the term of this agreement.",
                "",
            ]
        if i % 2 == 0:
            lines += [
                f"The Customer may audit the books and records of the Supplier once every {i + 1} months.",
                "",
            ]
        lines.append(f"Payment of invoices is due within {30 + i} days of the invoice date by wire transfer.")
        ingest_text(corpus, f"agreement-{i:02d}.txt", "\n".join(lines) + "\n")
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    # when the run executes
    report_run(report_id=report.pk)
    # then each clause was swept on its own, and the report lists the documents answering both
    stored = ResearchReport.objects.get(pk=report.pk)
    assert len(stored.plan) == 2 and all(step["sweep"] for step in stored.plan)
    assert stored.engine_state["both"] == [{"question": prompt, "of": [0, 1]}]
    both = _section_lines(stored.content, f"## Documents answering both: {prompt}")
    assert [line.split(":", 1)[0] for line in both if line.startswith("- ")] == [
        f"- *agreement-{i:02d}*" for i in answering
    ]
    assert all("<" not in line and "[^" in line for line in both if line.startswith("- "))  # each cited
    summary = "\n".join(_section_lines(stored.content, "## Summary"))
    assert f"**{prompt}** 2 documents of those examined answer both" in summary
    # and the answers as data name the same documents
    [both_answer] = report_answers_data(report=stored)["conjunctions"]
    assert (both_answer["question"], both_answer["of"]) == (prompt, [0, 1])
    assert [d["title"] for d in both_answer["documents"]] == [f"agreement-{i:02d}" for i in answering]
    assert all(d["footnotes"] for d in both_answer["documents"])
    assert_closed_citation_graph(stored)


def _section_lines(content: str, heading: str) -> list[str]:
    lines = content.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


def test_the_judge_reads_what_the_researchers_quoted_and_a_finding_it_turns_down_is_kept_but_not_cited(
    user, corpus
):
    # given twelve agreements, five of which require insurance, one more that mentions insurance
    # without requiring it, and a researcher that quotes that mention and a payment clause
    documents = ingest_agreements(corpus, 12, insured=5)
    waiver = "Neither party is required to carry insurance of any kind under this agreement."
    waived = ingest_text(corpus, "agreement-12.txt", f"Agreement 12.\n\n{waiver}\n").document.pk
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")

    def search(returns):
        return [
            call("search_passages", "s1", query="carry insurance of any kind", mode="lexical"),
            call("search_passages", "s2", query="payment of invoices by wire transfer", mode="lexical"),
        ]

    def record(returns):
        hits = [*returns["s1"]["results"], *returns["s2"]["results"]]
        mention = next(r for r in hits if waiver in r["text"])
        payment = next(r for r in hits if "Payment of invoices" in r["text"])
        return [
            call(
                "record_finding",
                "f1",
                claim="No insurance is required.",
                quote=waiver,
                passage_ids=[mention["passage_id"]],
            ),
            call(
                "record_finding",
                "f2",
                claim="Invoices are paid by wire.",
                quote=payment["text"][:70],
                passage_ids=[payment["passage_id"]],
            ),
        ]

    read = {}

    def judge(messages, info):
        # addresses the question only where a passage it is shown requires insurance
        from pydantic_ai.messages import ModelResponse

        from research.engine.prompts import read_data

        verdicts = []
        data = read_data(messages)
        for item in data["questions"]:
            read[data["document"]["document_id"]] = item["passages"]
            shown = [p for p in item["passages"] if "shall maintain" in p["text"]]
            verdict = {"question": item["index"], "addresses": bool(shown)}
            if shown:
                sentence = shown[0]["text"].split("\n")[-1]
                verdict |= {"passage_id": shown[0]["passage_id"], "quote": sentence, "claim": sentence}
            verdicts.append(verdict)
        return ModelResponse(parts=[call("submit_verdicts", "v", verdicts=verdicts)])

    from pydantic_ai.models.function import FunctionModel

    # when the run executes
    with (
        researcher_agent.override(model=scripted(search, record, _finish)),
        judge_agent.override(model=FunctionModel(judge)),
    ):
        report_run(report_id=report.pk)

    # then the judge read both quoted passages beside each agreement's best ones, marked as the
    # researchers', and turned both agreements down: the two findings stay with the run, the
    # report cites neither and names both agreements in Gaps
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    mention, payment = [f for f in stored.findings if f.get("origin") != "sweep"]
    assert mention["document_id"] == waived and payment["document_id"] in documents[5:]
    for finding in (mention, payment):
        shown = {p["passage_id"]: p for p in read[finding["document_id"]]}
        assert shown[finding["passage_id"]]["quoted_by_researcher"] is True
    sweep = stored.engine_state["sweep"]["0"]
    assert {waived, payment["document_id"]} <= set(sweep["judged"]) - set(sweep["addressing"])
    assert mention["passage_id"] in sweep["turned_down"][str(waived)]
    assert payment["passage_id"] in sweep["turned_down"][str(payment["document_id"])]
    assert {c["document_id"] for c in stored.citations} == set(documents[:5])
    assert f'findings="{mention["id"]}"' not in stored.content
    assert f'findings="{payment["id"]}"' not in stored.content
    gaps = stored.content.split("## Gaps", 1)[1]
    assert "what the researchers quoted from 2 documents judged not to address it is set aside" in gaps
    assert "*agreement-12*" in gaps
    assert_closed_citation_graph(stored)


def _filler(topic: str, words: int = 110) -> str:
    return " ".join(f"{topic}{i % 7}" for i in range(words))


COVER_CLAUSE = "The Supplier shall maintain cover with a reputable underwriter for the whole term."


def _follow_up_quotes_a_late_clause(user, corpus, *, max_tool_calls: int | None = None) -> dict:
    """Five insuring agreements, two that do not insure and one whose best passages for the
    question only mention insurance, its cover clause in a later passage that does not say
    "insurance"; a scripted follow-up quotes that clause, and a scripted judge addresses the
    question only where a passage it is shown says "shall maintain". Runs at standard depth (the
    follow-up is researched after the sweep) and returns what the judge read of each document."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    from research.engine.prompts import read_data

    documents = ingest_agreements(corpus, 8, insured=5)
    paragraphs = [f"Insurance note {n}: {_filler('memo')}" for n in range(4)]
    text = "\n\n".join(["Agreement 99.", *paragraphs, f"{COVER_CLAUSE} {_filler('terms')}"])
    late = ingest_text(corpus, "agreement-99.txt", text + "\n").document.pk
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")
    if max_tool_calls is not None:
        ResearchReport.objects.filter(pk=report.pk).update(max_tool_calls=max_tool_calls)

    def researcher(messages, info):
        # the first level proposes a follow-up on underwriters; the follow-up quotes the clause
        prompt = " ".join(
            str(p.content)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        )
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if "reputable underwriter" not in prompt:
            return ModelResponse(
                parts=[call("finish_direction", "done", follow_ups=["reputable underwriter"])]
            )
        if step == 0:
            return ModelResponse(
                parts=[call("search_passages", "s1", query="reputable underwriter", mode="lexical")]
            )
        if step == 1:
            hit = next(r for r in tool_returns(messages)["s1"]["results"] if COVER_CLAUSE in r["text"])
            quoted = {"claim": COVER_CLAUSE, "quote": COVER_CLAUSE, "passage_ids": [hit["passage_id"]]}
            return ModelResponse(parts=[call("record_finding", "f1", **quoted)])
        return ModelResponse(parts=[call("finish_direction", "done", follow_ups=[])])

    readings = {}

    def judge(messages, info):
        data = read_data(messages)
        verdicts = []
        for item in data["questions"]:
            readings.setdefault(data["document"]["document_id"], []).append(item["passages"])
            shown = [p for p in item["passages"] if "shall maintain" in p["text"]]
            verdict = {"question": item["index"], "addresses": bool(shown)}
            if shown:
                sentence = next(s for s in shown[0]["text"].split("\n") if "shall maintain" in s)
                sentence = sentence[: sentence.index(".") + 1]
                verdict |= {"passage_id": shown[0]["passage_id"], "quote": sentence, "claim": sentence}
            verdicts.append(verdict)
        return ModelResponse(parts=[call("submit_verdicts", "v", verdicts=verdicts)])

    with (
        researcher_agent.override(model=FunctionModel(researcher)),
        judge_agent.override(model=FunctionModel(judge)),
    ):
        report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    return {"report": stored, "insuring": documents[:5], "late": late, "readings": readings}


def test_a_follow_ups_quote_from_a_turned_down_document_is_read_by_the_judge_before_the_draft(user, corpus):
    run = _follow_up_quotes_a_late_clause(user, corpus)

    # then the sweep turned agreement 99 down on its best passages; before the draft the judge
    # read it again with the follow-up's quote in view, and it now addresses the question
    stored, late = run["report"], run["late"]
    assert stored.status == ReportStatus.COMPLETED
    (follow_up,) = [f for f in stored.findings if f.get("origin") == "follow-up"]
    assert follow_up["document_id"] == late
    first, second = run["readings"][late]
    assert not any(COVER_CLAUSE in p["text"] for p in first)
    assert [p["passage_id"] for p in second if p.get("quoted_by_researcher")] == [follow_up["passage_id"]]
    sweep = stored.engine_state["sweep"]["0"]
    assert late in sweep["addressing"] and str(late) not in sweep.get("turned_down", {})
    assert {c["document_id"] for c in stored.citations} == {*run["insuring"], late}
    assert_closed_citation_graph(stored)
    # the quote was read again once, and the progress record counts the document read again
    assert stored.engine_state["second_readings"] == [[0, late, follow_up["passage_id"]]]
    assert stored.progress["documents_reread"] == 1
    assert "second_reading_skipped:budget" not in stored.warnings


def test_the_second_reading_is_skipped_with_a_warning_when_the_budget_cannot_pay_for_it(user, corpus):
    # given the same run, measured once with the preset's budget: the tool calls spent before
    # the second reading (its references, one per swept question, then one per document)
    measured = _follow_up_quotes_a_late_clause(user, corpus)["report"]
    log = measured.tool_call_log
    rereading = max(i for i, e in enumerate(log) if e["tool"] == "search_document")
    spent = rereading - 1  # the entry before it is the second reading's references search

    # when it runs again, on a copy of the corpus, with one tool call left at the draft (two needed)
    copy = corpus_create(creator=user, name="Contracts again")
    run = _follow_up_quotes_a_late_clause(user, copy, max_tool_calls=spent + 1)

    # then the draft skipped the second reading with a warning: the judge read agreement 99
    # once, and the follow-up's quote, which it never read, stays cited
    stored, late = run["report"], run["late"]
    assert stored.status == ReportStatus.COMPLETED
    assert "second_reading_skipped:budget" in stored.warnings
    assert len(run["readings"][late]) == 1
    assert "second_readings" not in stored.engine_state
    (follow_up,) = [f for f in stored.findings if f.get("origin") == "follow-up"]
    assert follow_up["passage_id"] in {c["passage_id"] for c in stored.citations}
    assert_closed_citation_graph(stored)


def test_the_sweep_stops_at_the_presets_document_cap(user, corpus):
    # given more agreements than a shallow run may judge
    cap = DEPTH_PRESETS["shallow"].sweep_documents
    ingest_agreements(corpus, cap + 4, insured=cap + 4)
    report = report_start(
        user=user, corpus=corpus, prompt="Which of these agreements require insurance?", depth="shallow"
    )
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert len(stored.engine_state["sweep_candidates"]) == cap
    assert len(stored.engine_state["sweep"]["0"]["judged"]) == cap
    assert len([e for e in stored.tool_call_log if e["tool"] == "search_document"]) == cap


def test_follow_ups_are_researched_at_the_next_level_with_breadth_halving(user, corpus, samples):
    # given researchers that always propose three follow-ups
    report = report_start(
        user=user, corpus=corpus, prompt="Research liability, termination, governing law and insurance"
    )
    directions = []

    def propose(returns):
        return [call("finish_direction", "done", follow_ups=["damages cap", "notice period", "courts"])]

    async def note(index):
        directions.append(index)

    with researcher_agent.override(model=scripted(propose)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    preset = DEPTH_PRESETS["standard"]
    assert stored.status == ReportStatus.COMPLETED
    assert stored.engine_state["levels_done"] == preset.depth
    # level 1: the four sub-questions; level 2: the three distinct follow-ups, within breadth // 2
    assert stored.engine_state["researched"] == ["damages cap", "notice period"]
    assert len(stored.engine_state["researched"]) <= preset.breadth // 2


def test_a_deeper_preset_does_measurably_more(user, corpus, samples):
    prompt = "Research liability, termination and governing law"
    spent = {}
    for depth in ("shallow", "standard", "deep"):
        report = report_start(user=user, corpus=corpus, prompt=prompt, depth=depth)
        report_run(report_id=report.pk)
        stored = ResearchReport.objects.get(pk=report.pk)
        assert stored.status == ReportStatus.COMPLETED, stored.error
        spent[depth] = (stored.model_usage["requests"], stored.tool_call_count)
    assert spent["shallow"] < spent["standard"] < spent["deep"]


def test_a_cancelled_run_resumed_continues_at_its_level_with_every_finding(user, corpus, samples):
    # given a run cancelled while its second level is under way
    from research.services import report_resume

    report = report_start(user=user, corpus=corpus, prompt="Research liability and termination")
    levels = []

    def research_and_propose(returns):
        if "s1" not in returns:
            return _search(returns)
        hit = first_result(returns, "s1")
        if "f1" not in returns:
            return [
                call(
                    "record_finding",
                    "f1",
                    claim="Excluded.",
                    quote=LIABILITY_SENTENCE,
                    passage_ids=[hit["passage_id"]],
                )
            ]
        return [call("finish_direction", "done", follow_ups=["damages cap"])]

    async def cancel_in_level_two(index):
        state = await sync_to_async(
            lambda: ResearchReport.objects.get(pk=report.pk).engine_state, thread_sensitive=True
        )()
        levels.append(state.get("levels_done", 0))
        if state.get("levels_done") == 1:
            await sync_to_async(report_cancel, thread_sensitive=True)(user=user, report_id=report.pk)

    with researcher_agent.override(model=scripted(research_and_propose, after=cancel_in_level_two)):
        report_run(report_id=report.pk)
    cancelled = ResearchReport.objects.get(pk=report.pk)
    assert cancelled.status == ReportStatus.CANCELLED
    kept = [(f["passage_id"], f["quote"]) for f in cancelled.findings]
    assert kept and cancelled.engine_state["levels_done"] == 1

    # when it is resumed
    report_resume(user=user, report_id=report.pk)
    report_run(report_id=report.pk)

    # then it went on from level 2, kept every finding and did not plan again
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert [(f["passage_id"], f["quote"]) for f in stored.findings][: len(kept)] == kept
    assert stored.engine_state["levels_done"] == DEPTH_PRESETS["standard"].depth
    assert [e["tool"] for e in stored.tool_call_log].count("record_plan") == 1
    assert_closed_citation_graph(stored)


def test_the_cost_limit_salvages_like_the_other_budgets_and_cost_is_counted_per_role(
    user, corpus, samples, settings
):
    # given a priced model (PydanticAI's price data: gpt-4o-mini input at $0.15 per million tokens)
    # spending $0.015 a request, and a run limited to $0.04
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    settings.RESEARCH_COST_LIMIT_USD = 0.04
    report = report_start(user=user, corpus=corpus, prompt="liability")

    def priced(messages, info):
        n = sum(1 for m in messages if isinstance(m, ModelResponse))
        return ModelResponse(
            parts=[call("search_passages", f"s{n}", query="liability", mode="lexical")],
            model_name="gpt-4o-mini",
            provider_name="openai",
            usage=RequestUsage(input_tokens=100_000, output_tokens=0),
        )

    with researcher_agent.override(model=FunctionModel(priced, model_name="gpt-4o-mini")):
        report_run(report_id=report.pk)

    # then the run stopped at the request that reached the limit, its spend recorded per role
    stored = ResearchReport.objects.get(pk=report.pk)
    assert "budget_exhausted:cost" in stored.warnings
    usage = stored.model_usage
    assert usage["roles"]["researcher"]["requests"] == 3
    assert usage["roles"]["researcher"]["cost_usd"] == usage["cost_usd"] == 0.045
    assert set(usage["roles"]) == {"researcher"}  # a short question: the fast path, cut short


def test_the_report_page_shows_a_swept_questions_table_with_clickable_footnotes(user, corpus, client):
    documents = ingest_agreements(corpus, 11, insured=4)
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    client.force_login(user)
    html = client.get(reverse("research:report-detail", kwargs={"slug": stored.slug})).content.decode()
    table = html.split("<table>", 1)[1].split("</table>", 1)[0]
    assert "<th>Document</th>" in table and "<th>Position</th>" in table and "<th>Evidence</th>" in table
    assert table.count("<tr>") == 1 + 4  # the header and one row per insuring agreement
    for citation in stored.citations:
        assert f'href="#source-{citation["footnote"]}"' in html
        assert f'id="source-{citation["footnote"]}"' in html
    assert len(documents) == 11


def test_the_report_page_says_how_the_engine_answered_and_how_far_a_run_has_got(
    user, corpus, samples, client
):
    # given a run under way, sweeping
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements limit liability?")
    report_mark_running(report_id=report.pk)
    ResearchReport.objects.filter(pk=report.pk).update(
        strategy="deep",
        progress={"phase": "sweeping", "level": 1, "levels": 2, "documents_swept": 8, "documents_total": 20},
    )
    client.force_login(user)
    url = reverse("research:report-detail", kwargs={"slug": report.slug})
    html = " ".join(client.get(url).content.decode().split())
    # (how it answered, not a second depth: "depth shallow · deep research" read as a contradiction)
    assert "depth standard · planned research ·" in html
    assert "This report is running, sweeping (level 1 of 2), 8 of 20 documents swept" in html

    # and, before a draft, how many turned-down documents the judge is reading again
    ResearchReport.objects.filter(pk=report.pk).update(
        progress={"phase": "rereading", "documents_swept": 20, "documents_total": 20, "documents_reread": 2}
    )
    html = " ".join(client.get(url).content.decode().split())
    assert "This report is running, rereading, 20 of 20 documents swept, 2 read again" in html


def test_findings_the_critic_disputes_are_kept_and_flagged(report):
    # given a critic that says the quote of finding 1 does not support its claim (and 99 is unknown)
    def disputes(returns):
        return [call("submit_critique", "c", satisfied=True, unsupported_findings=[1, 99])]

    with critic_agent.override(model=scripted(disputes)):
        report_run(report_id=report.pk)

    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert "finding_disputed:1" in stored.warnings
    assert "finding_disputed:99" not in stored.warnings
    assert stored.findings[0]["id"] == 1  # nothing a role produced is lost


def test_a_quote_holding_a_link_with_parentheses_keeps_its_words_and_its_own_footnote(user, corpus):
    # given a document whose second paragraph holds a markdown link with a ")" in its address
    ingest_text(
        corpus,
        "support.md",
        "Severity one tickets are answered by the duty engineer within thirty minutes.\n\n"
        "Customers open support tickets through [the portal](https://en.wikipedia.org/wiki/Portal_(web)) "
        "at any hour of the day.\n\n"
        "A [helper](javascript:alert(document.cookie)) link is never followed by the support staff.\n",
    )
    report = report_start(
        user=user,
        corpus=corpus,
        prompt="Please research severity one tickets, and how customers open support tickets",
    )
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    # then every finding is cited with its own quote, and the link's words read as written
    cited = {(c["passage_id"], c["quote"]) for c in stored.citations}
    assert {(f["passage_id"], f["quote"]) for f in stored.findings} <= cited
    assert "through the portal at any hour" in stored.content
    assert "portal)" not in stored.content and "javascript" not in stored.content.split("## Sources")[0]
    assert not any(w.startswith("quote_not_verbatim") for w in stored.warnings)
    assert_closed_citation_graph(stored)


def test_a_footnote_cited_twice_gives_one_element_its_id(user, corpus, samples, client):
    def find(returns):
        pid = first_result(returns, "s1")["passage_id"]
        return [call("record_finding", "f1", claim="c", quote=LIABILITY_SENTENCE, passage_ids=[pid])]

    def write(returns):
        draft = '<cite findings="1">First.</cite> <cite findings="1">Again.</cite>'
        return [call("submit_report", "final", markdown=draft)]

    report = report_start(user=user, corpus=corpus, prompt="liability")
    with (
        researcher_agent.override(model=scripted(_search, find, _finish)),
        writer_agent.override(model=scripted(write)),
    ):
        report_run(report_id=report.pk)
    client.force_login(user)
    html = client.get(reverse("research:report-detail", kwargs={"slug": report.slug})).content.decode()
    assert html.count('id="ref-1"') == 1
    assert html.count('href="#source-1"') == 2


def test_a_document_the_judge_failed_on_is_not_examined_and_is_named_in_gaps_as_not_judged(user, corpus):
    # given six agreements, two of which require insurance, a question asked in the negative, and
    # a judge that keeps naming a passage it was not shown for one insured agreement
    documents = ingest_agreements(corpus, 6, insured=2)
    offline = offline_judge()

    async def judge(messages, info):
        if read_data(messages)["document"]["title"] == "agreement-01":
            verdict = {"question": 0, "addresses": True, "passage_id": 999_999_999, "quote": "x"}
            return ModelResponse(parts=[call("submit_verdicts", "v", verdicts=[verdict])])
        return offline.function(messages, info)

    report = report_start(
        user=user, corpus=corpus, prompt="Which of these agreements do not require insurance?"
    )
    # when the run executes
    with judge_agent.override(model=FunctionModel(judge)):
        report_run(report_id=report.pk)
    # then the failed document is neither examined nor an answer; Gaps name it as not judged
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert f"judge_failed:{documents[1]}" in stored.warnings
    sweep = stored.engine_state["sweep"]["0"]
    assert sorted(sweep["judged"]) == sorted([documents[0], *documents[2:]])
    assert sweep["addressing"] == [documents[0]]
    assert stored.engine_state["not_judged"] == [documents[1]]
    step = stored.plan[0]
    without = _section_lines(stored.content, f"## Documents without it: {step['asked']}")
    assert [line for line in without if line.startswith("- ")] == [
        f"- *agreement-{i:02d}*" for i in range(2, 6)
    ]
    assert "In 4 of the 5 documents examined" in stored.content
    gaps = stored.content.split("## Gaps", 1)[1]
    assert (
        "- Not judged (the judge failed on it; not counted among the documents examined): *agreement-01*."
        in gaps
    )


def test_a_researchers_over_long_follow_up_is_capped_like_a_planned_question(report):
    # given a researcher that hands back a follow-up of 3,025 characters
    long_follow_up = "Which clauses " + "limit liability and " * 150 + "more?"
    assert len(long_follow_up) > 3_000

    def finish(returns):
        return [call("finish_direction", "done", follow_ups=[long_follow_up, "  ", "What caps apply?"])]

    # when the run executes
    with researcher_agent.override(model=scripted(finish)):
        report_run(report_id=report.pk)
    # then the next level researched it cut to QUESTION_MAX_CHARS (its queries are made of it)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED, stored.error
    researched = stored.engine_state["researched"]
    assert researched[0] == " ".join(long_follow_up.split())[:500]
    assert "What caps apply?" in researched
