"""Versions of one document in a collection ("Travel Policy 2023" and "Travel Policy 2025"): a
report citing both marks the older where it names it and says in its Summary which applies;
documents whose titles only look alike are never linked."""

import pytest
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models.function import FunctionModel

from research.drafts import compose_from_findings
from research.engine.prompts import read_data
from research.engine.run import report_run
from research.engine.writer import writer_agent
from research.models import ReportStatus, ResearchReport
from research.pages import report_body_html
from research.services import report_start
from tests.factories import ingest_text
from tests.research.checks import assert_closed_citation_graph
from tests.research.scripts import call

NOTICE_QUESTION = "How many days' notice is needed for travel approval?"
OLD_RULE = "Employees must request travel approval at least 14 days before departure."
NEW_RULE = "Employees must request travel approval at least 10 days before departure."
UNRELATED = ("Security Policy", "All laptops must be encrypted. Passwords are rotated every 90 days.")


def _collection(corpus, older: tuple[str, str], current: tuple[str, str]) -> list[int]:
    """The ids of the older document, the current one and an unrelated one."""
    return [
        ingest_text(corpus, f"{title}.txt", f"{title}\n\n{text}").document.pk
        for title, text in (older, current, UNRELATED)
    ]


def _run(user, corpus, prompt: str = NOTICE_QUESTION) -> ResearchReport:
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    report_run(report_id=report.pk)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == ReportStatus.COMPLETED
    assert_closed_citation_graph(stored)
    return stored


@pytest.mark.parametrize(
    ("older", "current", "how"),
    [
        ("Travel Policy 2023", "Travel Policy 2025", "a later date in its title"),
        ("Travel Policy v1", "Travel Policy v2", "a higher version number in its title"),
        ("Travel Policy (draft)", "Travel Policy (final)", "marked draft"),
        ("Travel Policy - Draft", "Travel Policy", "marked draft"),
    ],
)
def test_a_report_citing_two_versions_by_their_titles_says_which_applies(user, corpus, older, current, how):
    # given two versions of one policy that answer differently, and an unrelated policy
    _collection(corpus, (older, OLD_RULE), (current, NEW_RULE))
    # when a question both answer is researched
    stored = _run(user, corpus)
    # then both answers are cited, the older one marked where it is named, and what only the
    # titles tell is said as that, not as a fact
    content = stored.content
    assert OLD_RULE in content and NEW_RULE in content
    line = (
        f"Versions: *{current}* looks like a later version of *{older}* ({how}); "
        f"if so, where they differ, *{current}* applies."
    )
    assert f"    - {line}" in content.splitlines()
    assert f"| {older} (an earlier version of {current}) |" in content
    assert f"(*{older}*, an earlier version of *{current}*)" in content
    assert f"| {current} |" in content
    assert content.count("an earlier version of") == 2
    assert "supersede" not in content
    # and on the report's page the Summary's line sits under its question's
    assert "<ul>\n<li>Versions: <em>" in report_body_html(stored)


@pytest.mark.parametrize(
    ("older", "older_says", "current_says"),
    [
        ("Travel Policy 2023", "", "This policy supersedes the Travel Policy 2023."),
        ("Travel Policy v1", "", "This policy replaces version 1."),
        ("Travel Policy 2023", "This policy is superseded by the Travel Policy.", ""),
    ],
)
def test_a_document_whose_text_says_it_supersedes_another_is_the_one_that_applies(
    user, corpus, older, older_says, current_says
):
    # given a policy whose text (or the other's) says it supersedes the other, whose titles alone
    # tell no order ("Travel Policy" has no year nor version)
    older_id, current_id, _ = _collection(
        corpus, (older, f"{older_says}\n\n{OLD_RULE}"), ("Travel Policy", f"{current_says}\n\n{NEW_RULE}")
    )
    # when a question both answer is researched
    stored = _run(user, corpus)
    # then the Summary says which applies, as the text says
    assert (
        f"    - Versions: *Travel Policy* supersedes *{older}* (the text says so); where they "
        "differ, *Travel Policy* applies." in stored.content
    )
    assert f"| {older} (superseded by Travel Policy) |" in stored.content
    assert stored.engine_state["versions"] == {
        "superseded": [{"current": current_id, "older": older_id, "by": "text"}],
        "unordered": [],
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Travel Policy", "Travel Expense Form"),
        ("Master Services Agreement - Acme 2019", "Master Services Agreement - Globex 2020"),
        ("Annual Report 2023", "Annual Report 2024"),
        ("Services Agreement", "Services Agreement."),
        ("Travel Policy", "Travel Policy (revised)"),
    ],
)
def test_documents_whose_titles_only_look_alike_are_not_called_versions(user, corpus, first, second):
    # given two documents answering differently whose titles are alike but tell no order
    first_id, second_id, _ = _collection(corpus, (first, OLD_RULE), (second, NEW_RULE))
    # when a question both answer is researched
    stored = _run(user, corpus)
    # then neither is said to supersede the other
    assert OLD_RULE in stored.content and NEW_RULE in stored.content
    assert "supersede" not in stored.content
    # and the run looked for versions among the documents cited: none for titles that differ in
    # more than version marks ("Acme" is not "Globex"); for "(revised)", alike with no order
    alike = [[first_id, second_id]] if "revised" in second else []
    assert stored.engine_state["versions"] == {"superseded": [], "unordered": alike}
    if alike:
        assert (
            "    - Versions: *Travel Policy* and *Travel Policy (revised)* may be versions of one document; "
            "which of them applies where they differ could not be told from their titles or text."
        ) in stored.content
    else:
        assert "Versions:" not in stored.content


def test_a_fast_answer_marks_the_older_version_and_says_which_applies(user, corpus):
    # given two versions of one policy
    _collection(corpus, ("Travel Policy 2023", OLD_RULE), ("Travel Policy 2025", NEW_RULE))
    # when a short question takes the fast path
    stored = _run(user, corpus, prompt="travel approval notice")
    # then the answer marks the older version and says which applies
    assert stored.strategy == "fast"
    assert "(*Travel Policy 2023*, an earlier version of *Travel Policy 2025*)" in stored.content
    assert (
        "Versions: *Travel Policy 2025* looks like a later version of *Travel Policy 2023* (a later date in "
        "its title); if so, where they differ, *Travel Policy 2025* applies." in stored.content
    )


def test_a_model_writer_is_told_the_versions(user, corpus):
    # given two versions of one policy, one saying it supersedes the other, and a model writer
    _collection(
        corpus,
        ("Travel Policy 2023", OLD_RULE),
        ("Travel Policy 2025", f"This policy supersedes the Travel Policy 2023.\n\n{NEW_RULE}"),
    )
    told = {}

    async def write(messages, info):
        told.update(read_data(messages))
        cited = told["findings"][0]
        markdown = f'# Travel\n\n<cite findings="{cited["id"]}">{cited["claim"]}</cite>\n'
        return ModelResponse(parts=[call("submit_report", "write", markdown=markdown)])

    report = report_start(user=user, corpus=corpus, prompt=NOTICE_QUESTION)
    # when the run executes
    with writer_agent.override(model=FunctionModel(write)):
        report_run(report_id=report.pk)
    # then the writer's data names the current and the older version, and how that was told
    [relation] = told["versions"]["superseded"]
    assert (relation["current_title"], relation["older_title"], relation["by"]) == (
        "Travel Policy 2025",
        "Travel Policy 2023",
        "text",
    )
    assert told["versions"]["unordered"] == []


def test_a_report_composed_from_findings_marks_versions_by_their_titles():
    # given findings from two versions of one policy, recorded before the run was cut short
    findings = [
        {"id": 1, "claim": OLD_RULE, "quote": OLD_RULE, "passage_id": 11, "document_id": 1, "question": 0},
        {"id": 2, "claim": NEW_RULE, "quote": NEW_RULE, "passage_id": 12, "document_id": 2, "question": 0},
    ]
    # when they are composed into a report (as a salvaged run's are)
    report = compose_from_findings(
        title="Travel",
        plan=[{"question": NOTICE_QUESTION}],
        engine_state={},
        findings=findings,
        titles={1: "Data Retention Policy v1", 2: "Data Retention Policy v2"},
        note="Composed from the findings recorded before the run ended.",
    )
    # then the older is marked and the Summary says which applies
    assert "**Data Retention Policy v1** (an earlier version of *Data Retention Policy v2*)" in report
    assert (
        "    - Versions: *Data Retention Policy v2* looks like a later version of *Data Retention Policy v1* "
        "(a higher version number in its title); if so, where they differ, *Data Retention Policy v2* "
        "applies." in report
    )


def test_a_document_whose_text_says_it_does_not_supersede_another_is_not_taken_to(user, corpus):
    # given a policy saying it does not supersede another whose title alone tells no order
    older, current, _ = _collection(
        corpus,
        ("Travel Policy 2023", OLD_RULE),
        ("Travel Policy", f"This policy does not supersede the Travel Policy 2023.\n\n{NEW_RULE}"),
    )
    # when a question both answer is researched
    stored = _run(user, corpus)
    # then no order is claimed: the two are named as versions whose order could not be told
    assert "supersedes" not in stored.content and "superseded by" not in stored.content
    assert stored.engine_state["versions"] == {"superseded": [], "unordered": [[older, current]]}
    assert "    - Versions: *Travel Policy* and *Travel Policy 2023* may be versions of one document;" in (
        stored.content
    )


def test_a_text_superseding_a_kind_of_document_many_share_links_none(user, corpus):
    # given an agreement saying it supersedes "the Mutual Confidentiality Agreement", and a
    # document of that title, which may be another party's
    _collection(
        corpus,
        ("Mutual Confidentiality Agreement", OLD_RULE),
        (
            "Master Travel Services Agreement",
            f"This Agreement supersedes the Mutual Confidentiality Agreement.\n\n{NEW_RULE}",
        ),
    )
    # when a question both answer is researched
    stored = _run(user, corpus)
    # then neither is said to supersede the other
    assert OLD_RULE in stored.content and NEW_RULE in stored.content
    assert "superseded by" not in stored.content and "Versions:" not in stored.content
    assert stored.engine_state["versions"] == {"superseded": [], "unordered": []}


def test_titles_with_markdown_in_them_read_as_written_where_versions_are_named():
    # given a swept question's findings from two versions whose titles hold Markdown and a "|"
    findings = [
        {"id": 1, "claim": OLD_RULE, "quote": OLD_RULE, "passage_id": 11, "document_id": 1, "question": 0},
        {"id": 2, "claim": NEW_RULE, "quote": NEW_RULE, "passage_id": 12, "document_id": 2, "question": 0},
    ]
    # when they are composed into a report
    report = compose_from_findings(
        title="Travel",
        plan=[{"question": NOTICE_QUESTION, "sweep": True}],
        engine_state={"sweep": {"0": {"judged": [1, 2], "addressing": [1, 2]}}},
        findings=[{**f, "origin": "sweep"} for f in findings],
        titles={1: "Travel *Policy* | Staff v1", 2: "Travel *Policy* | Staff v2"},
        note="Composed from the findings recorded before the run ended.",
    )
    # then the titles are escaped as every title of a report is: no emphasis, no extra cell
    assert (
        r"    - Versions: *Travel \*Policy\* | Staff v2* looks like a later version of *Travel \*Policy\* | "
        r"Staff v1* (a higher version number in its title); if so, where they differ, *Travel \*Policy\* | "
        r"Staff v2* applies."
    ) in report.splitlines()
    assert (
        r"| Travel \*Policy\* \| Staff v1 (an earlier version of Travel \*Policy\* \| Staff v2) | " in report
    )
    assert r"| Travel \*Policy\* \| Staff v2 | " in report
