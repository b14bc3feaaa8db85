"""Tests of research.drafts: extractive reports composed from recorded findings."""

import re

import pytest

from research.citations import CitablePassage, citations_render
from research.drafts import (
    Position,
    QuestionSummary,
    compose_from_findings,
    compose_report,
    findings_set_aside,
    plan_questions_summary,
    positions_by_words,
    split_set_aside,
)

RETURN_QUESTION = "Must the recipient return its materials?"
SOLICIT_QUESTION = "Is there a non-solicitation clause?"
NOT_JUDGED = "no passage was judged to address it"
TITLES = {1: "Alpha NDA", 2: "Beta NDA", 3: "Gamma NDA", 4: "Delta NDA", 5: "Epsilon NDA", 6: "Zeta NDA"}


def _finding(finding_id: int, claim: str, *, document_id: int, question=0, **extra) -> dict:
    return {
        "id": finding_id,
        "claim": claim,
        "quote": claim,  # an offline finding's claim is its quote
        "passage_id": 10 + finding_id,
        "document_id": document_id,
        "question": question,
        "origin": "sweep",
        **extra,
    }


def _grouped_report(questions, findings, positions) -> str:
    return compose_report(
        title="NDA review",
        questions=questions,
        findings=findings,
        document_titles=TITLES,
        positions=positions,
    )


def _swept(**changes) -> QuestionSummary:
    fields = {
        "index": 0,
        "question": RETURN_QUESTION,
        "swept": True,
        "documents_examined": 5,
        "not_addressing": ["Doc D", "Doc E"],
        "addressing": [1, 2, 3],
    }
    return QuestionSummary(**{**fields, **changes})


def _section(report: str, heading: str) -> list[str]:
    """The lines under `heading` up to the next heading of level 2, blank lines dropped."""
    lines = report.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


SWEEP_FINDINGS = [
    _finding(1, "Gamma requires destruction", document_id=3),
    _finding(2, "Alpha requires return", document_id=1),
    _finding(3, "Beta requires return | destruction", document_id=2),
]


def test_a_swept_question_has_counts_a_table_by_document_and_its_gaps():
    # given a question swept over 5 documents, 3 of which address it with a sweep finding each
    questions = [_swept()]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then
    assert report.startswith("# NDA review\n\n## Summary\n")
    assert _section(report, "## Summary") == [
        f"- **{RETURN_QUESTION}** 3 of 5 documents examined address it: "
        '<cite findings="1">Gamma requires destruction</cite>'
    ]
    # one row per addressing document, sorted by title, the "|" of a claim escaped in its cell
    assert _section(report, f"## Documents: {RETURN_QUESTION}") == [
        "| Document | Position | Evidence |",
        "|---|---|---|",
        '| Alpha NDA |  | <cite findings="2">Alpha requires return</cite> |',
        '| Beta NDA |  | <cite findings="3">Beta requires return \\| destruction</cite> |',
        '| Gamma NDA |  | <cite findings="1">Gamma requires destruction</cite> |',
    ]
    assert _section(report, "## Gaps") == [
        f"- {RETURN_QUESTION}: in 2 of the 5 documents examined, {NOT_JUDGED}: *Doc D*, *Doc E*."
    ]
    # the table holds every finding, so there is no detailed analysis
    assert "## Detailed analysis" not in report
    assert report.endswith("*Doc E*.\n")


def test_every_finding_is_cited_by_its_id():
    # when
    report = compose_report(
        title="NDA review", questions=[_swept()], findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then
    cited = {int(i) for ids in re.findall(r'<cite findings="([\d,]+)">', report) for i in ids.split(",")}
    assert cited == {1, 2, 3}


def test_a_question_without_findings_is_a_gap():
    # given a second question no finding answers
    questions = [_swept(), QuestionSummary(index=1, question=SOLICIT_QUESTION)]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then
    assert _section(report, "## Gaps") == [
        f"- {RETURN_QUESTION}: in 2 of the 5 documents examined, {NOT_JUDGED}: *Doc D*, *Doc E*.",
        f"- {SOLICIT_QUESTION}: no passage retrieved in this run supports an answer.",
    ]
    assert SOLICIT_QUESTION not in "\n".join(_section(report, "## Summary"))


def test_no_findings_at_all_say_so_in_the_summary():
    # when
    report = compose_report(
        title="NDA review",
        questions=[QuestionSummary(index=0, question=SOLICIT_QUESTION)],
        findings=[],
        document_titles=TITLES,
    )

    # then
    assert report == (
        "# NDA review\n\n## Summary\n\n"
        "No finding was recorded: the corpus gave no verbatim support for the questions asked.\n\n"
        "## Gaps\n\n"
        f"- {SOLICIT_QUESTION}: no passage retrieved in this run supports an answer.\n"
    )


NEGATED = "Which NDAs do not require the recipient to return its materials?"
AFFIRMED = "Which NDAs require the recipient to return its materials?"


def test_a_question_asked_in_the_negative_is_answered_by_the_documents_without_it():
    # given "which do not ...", swept as its affirmative over 6 documents: 3 do, and of the 3
    # turned down a researcher quoted one (Zeta NDA) all the same
    questions = [
        _swept(
            question=AFFIRMED,
            asked=NEGATED,
            documents_examined=6,
            not_addressing=["Doc E", "Doc D", "Zeta NDA"],
        )
    ]
    findings = [*SWEEP_FINDINGS, _finding(4, "Zeta requires return", document_id=6, origin="researcher")]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=findings, document_titles=TITLES
    )

    # then the summary answers the question asked, and the two documents without it are listed
    assert _section(report, "## Summary") == [
        f"- **{NEGATED}** In 2 of the 6 documents examined, no passage was judged to address "
        f"*{AFFIRMED}* (they are listed under Documents without it). 4 documents do: "
        '<cite findings="1">Gamma requires destruction</cite>'
    ]
    assert _section(report, f"## Documents without it: {NEGATED}") == [
        f"In these 2 of the 6 documents examined, no passage was judged to address *{AFFIRMED}* (the "
        "judge read each document's best passages for it; a document not examined is not listed):",
        "- *Doc D*",
        "- *Doc E*",
    ]
    # those that do are cited in the table; the documents without it are the answer, not a gap
    assert len(_section(report, f"## Documents: {AFFIRMED}")) == 2 + 3
    assert "## Gaps" not in report


def test_a_question_asked_in_the_negative_that_no_document_addresses_lists_them_all():
    # when no document of the 5 examined was judged to address the affirmative question
    questions = [
        _swept(question=AFFIRMED, asked=NEGATED, addressing=[], not_addressing=list(TITLES.values())[:5])
    ]
    report = compose_report(title="NDA review", questions=questions, findings=[], document_titles=TITLES)

    # then that is the answer, not "no finding was recorded"
    summary = _section(report, "## Summary")
    assert summary == [
        f"- **{NEGATED}** In 5 of the 5 documents examined, no passage was judged to address "
        f"*{AFFIRMED}* (they are listed under Documents without it). 0 documents do."
    ]
    listed = _section(report, f"## Documents without it: {NEGATED}")[1:]
    assert listed == [f"- *{t}*" for t in sorted(list(TITLES.values())[:5])]
    assert "## Gaps" not in report


def test_a_brief_answer_says_which_documents_it_did_not_examine():
    # given a fast-path answer quoting 3 documents of the 40 in scope
    question = QuestionSummary(index=0, question=RETURN_QUESTION, documents_in_scope=40)
    report = compose_report(
        title="NDA review", questions=[question], findings=SWEEP_FINDINGS, document_titles=TITLES, brief=True
    )
    # then it says the other 37 were not examined
    assert _section(report, "## Answer")[-1] == (
        "*From the best passages of one search, in 3 of the 40 documents in scope; the others were not "
        "examined. Ask which of the documents say it to have each one examined.*"
    )
    # and an answer from every document in scope says nothing of the kind
    whole = compose_report(
        title="NDA review",
        questions=[QuestionSummary(index=0, question=RETURN_QUESTION, documents_in_scope=3)],
        findings=SWEEP_FINDINGS,
        document_titles=TITLES,
        brief=True,
    )
    assert "were not examined" not in whole


def test_brief_report_is_the_answer_and_the_gaps():
    # given
    questions = [_swept(), QuestionSummary(index=1, question=SOLICIT_QUESTION)]

    # when
    report = compose_report(
        title="NDA review",
        questions=questions,
        findings=SWEEP_FINDINGS,
        document_titles=TITLES,
        note="Answered on the fast path.",
        brief=True,
    )

    # then one bullet per finding, in the order recorded
    assert report.startswith("# NDA review\n\n*Answered on the fast path.*\n\n## Answer\n")
    assert _section(report, "## Answer") == [
        '- <cite findings="1">Gamma requires destruction</cite> (*Gamma NDA*)',
        '- <cite findings="2">Alpha requires return</cite> (*Alpha NDA*)',
        '- <cite findings="3">Beta requires return | destruction</cite> (*Beta NDA*)',
    ]
    assert "## Summary" not in report
    assert "## Documents" not in report
    assert _section(report, "## Gaps") == [
        f"- {RETURN_QUESTION}: in 2 of the 5 documents examined, {NOT_JUDGED}: *Doc D*, *Doc E*.",
        f"- {SOLICIT_QUESTION}: no passage retrieved in this run supports an answer.",
    ]


def test_findings_of_an_unknown_question_go_by_their_section_else_under_other_findings():
    # given two findings of no known question index: one whose section names the second question
    # (in other case and spacing), one whose section names nothing asked
    questions = [QuestionSummary(index=0, question=RETURN_QUESTION), QuestionSummary(1, SOLICIT_QUESTION)]
    findings = [
        _finding(1, "Alpha requires return", document_id=1, question=0),
        _finding(
            2,
            "Beta bars soliciting staff",
            document_id=2,
            question=7,
            section="  is there a\nNON-SOLICITATION clause? ",
        ),
        _finding(
            3, "Gamma is governed by English law", document_id=3, question=None, section="Governing law"
        ),
    ]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=findings, document_titles=TITLES
    )

    # then
    assert _section(report, "## Summary") == [
        f'- **{RETURN_QUESTION}** 1 finding from 1 document: <cite findings="1">Alpha requires return</cite>',
        f"- **{SOLICIT_QUESTION}** 1 finding from 1 document: "
        '<cite findings="2">Beta bars soliciting staff</cite>',
        "- **Other findings** 1 finding from 1 document: "
        '<cite findings="3">Gamma is governed by English law</cite>',
    ]
    assert _section(report, "## Detailed analysis") == [
        f"### {RETURN_QUESTION}",
        "**Alpha NDA**",
        '- <cite findings="1">Alpha requires return</cite>',
        f"### {SOLICIT_QUESTION}",
        "**Beta NDA**",
        '- <cite findings="2">Beta bars soliciting staff</cite>',
        "### Other findings",
        "**Gamma NDA**",
        '- <cite findings="3">Gamma is governed by English law</cite>',
    ]
    # every question has a finding, and "Other findings" is never a gap
    assert "## Gaps" not in report


def test_positions_are_key_findings_with_three_examples_and_the_rest_in_the_table():
    # given five documents of which four take one position and one another
    questions = [_swept(documents_examined=6, not_addressing=["Zeta NDA"], addressing=[1, 2, 3, 4, 5])]
    findings = [_finding(i, f"{TITLES[i]} requires return", document_id=i) for i in (1, 2, 3, 4)]
    findings.append(_finding(5, "Epsilon NDA requires destruction", document_id=5))
    positions = {0: [Position("return", [4, 1, 2, 3]), Position("destroy", [5])]}

    # when
    report = _grouped_report(questions, findings, positions)

    # then the summary names each position with its first three findings
    assert _section(report, "## Summary") == [
        f"- **{RETURN_QUESTION}** 5 of 6 documents examined address it. Positions: "
        '<cite findings="4,1,2">4 documents: return</cite>; '
        '<cite findings="5">1 document: destroy</cite>.'
    ]
    assert _section(report, "## Key findings") == [
        f"### {RETURN_QUESTION}",
        "**return** (4 documents)",
        '- <cite findings="4">Delta NDA requires return</cite> (*Delta NDA*)',
        '- <cite findings="1">Alpha NDA requires return</cite> (*Alpha NDA*)',
        '- <cite findings="2">Beta NDA requires return</cite> (*Beta NDA*)',
        "- and 1 more in the table below.",
        "**destroy** (1 document)",
        '- <cite findings="5">Epsilon NDA requires destruction</cite> (*Epsilon NDA*)',
    ]
    # the table labels each row with its finding's position
    assert _section(report, f"## Documents: {RETURN_QUESTION}")[2:] == [
        '| Alpha NDA | return | <cite findings="1">Alpha NDA requires return</cite> |',
        '| Beta NDA | return | <cite findings="2">Beta NDA requires return</cite> |',
        '| Delta NDA | return | <cite findings="4">Delta NDA requires return</cite> |',
        '| Epsilon NDA | destroy | <cite findings="5">Epsilon NDA requires destruction</cite> |',
        '| Gamma NDA | return | <cite findings="3">Gamma NDA requires return</cite> |',
    ]


def test_the_summary_says_how_many_positions_it_does_not_name():
    # given six documents each taking its own position
    questions = [_swept(documents_examined=6, not_addressing=[], addressing=[1, 2, 3, 4, 5, 6])]
    findings = [_finding(i, f"{TITLES[i]} says {i}", document_id=i) for i in range(1, 7)]
    positions = {0: [Position(f"position {i}", [i]) for i in range(1, 7)]}

    # when
    report = _grouped_report(questions, findings, positions)

    # then the Summary names four and counts the other two, and their documents
    [line] = _section(report, "## Summary")
    assert (
        '<cite findings="4">1 document: position 4</cite>; '
        "and 2 more positions (2 documents) under Key findings."
    ) in line
    assert "position 5" not in line


def test_the_summary_counts_the_documents_addressing_it_that_no_position_holds():
    # given four documents addressing a question, three of them grouped into positions (the
    # fourth's finding answers another question too, and is listed in the table)
    questions = [_swept(documents_examined=6, not_addressing=[], addressing=[1, 2, 3, 4])]
    findings = [_finding(i, f"{TITLES[i]} says {i}", document_id=i) for i in range(1, 4)]
    positions = {0: [Position(f"position {i}", [i]) for i in range(1, 4)]}

    # when
    report = _grouped_report(questions, findings, positions)

    # then "4 of 6" is not followed by three documents' positions alone
    [line] = _section(report, "## Summary")
    assert "4 of 6 documents examined address it" in line
    assert line.endswith(
        '<cite findings="3">1 document: position 3</cite>; 1 more document listed under Documents.'
    )


def test_a_finding_key_findings_shows_is_not_repeated_in_the_detailed_analysis():
    # given a document's two findings, a researcher's beside the sweep's: both in one position
    questions = [_swept(documents_examined=2, not_addressing=["Beta NDA"], addressing=[1])]
    findings = [
        _finding(1, "Alpha NDA requires return", document_id=1),
        _finding(2, "Alpha NDA requires return within ten days", document_id=1, origin="researcher"),
        _finding(3, "Alpha NDA requires a certificate", document_id=1, origin="researcher"),
    ]
    positions = {0: [Position("return", [1, 2])]}

    # when
    report = _grouped_report(questions, findings, positions)

    # then the researcher's finding Key findings shows is not written again; the other one is
    assert '<cite findings="2">' in "\n".join(_section(report, "## Key findings"))
    assert _section(report, "## Detailed analysis") == [
        f"### {RETURN_QUESTION}",
        "**Alpha NDA**",
        '- <cite findings="3">Alpha NDA requires a certificate</cite>',
    ]


def test_the_same_words_in_several_documents_are_one_key_findings_line_citing_each():
    # given five documents of one position, four of them quoting one template clause
    questions = [_swept(documents_examined=5, addressing=[1, 2, 3, 4, 5])]
    template = "The Receiving Party shall return all  Confidential Information on request."
    findings = [_finding(i, template if i != 3 else template.upper(), document_id=i) for i in (1, 2, 3, 4)]
    findings.append(_finding(5, "Epsilon NDA requires destruction", document_id=5))
    positions = {0: [Position("return", [1, 2, 3, 4, 5])]}

    # when
    report = _grouped_report(questions, findings, positions)

    # then the clause is written once, cited to each document, three of them named
    clause = " ".join(template.split())
    assert _section(report, "## Key findings") == [
        f"### {RETURN_QUESTION}",
        "**return** (5 documents)",
        f'- <cite findings="1,2,3,4">{clause}</cite> (*Alpha NDA*; *Beta NDA*; *Gamma NDA*; 1 more)',
        '- <cite findings="5">Epsilon NDA requires destruction</cite> (*Epsilon NDA*)',
    ]


def test_plan_questions_summary_counts_what_the_sweep_judged():
    # given a researcher's findings for the question in documents 1 (addressing) and 2 (not)
    findings = [
        _finding(1, "a", document_id=1, origin="researcher"),
        _finding(2, "b", document_id=2, origin="researcher"),
    ]

    state = {"sweep": {"0": {"judged": [1, 2, 3], "addressing": [1], "turned_down": {"2": [12], "3": [13]}}}}

    # when
    questions = plan_questions_summary(
        plan=[{"question": "q", "sweep": True, "asked": "not q"}],
        engine_state=state,
        titles={1: "A", 2: "B", 3: "C"},
        set_aside=split_set_aside(findings, state)[1],
    )

    # then
    assert questions == [
        QuestionSummary(
            index=0,
            question="q",
            swept=True,
            documents_examined=3,
            not_addressing=["B", "C"],
            addressing=[1],
            set_aside=["B"],
            asked="not q",
            not_addressing_ids=[2, 3],
        )
    ]


def test_findings_the_sweeps_judge_read_and_overruled_are_set_aside_per_question():
    # given a sweep of question 0 that turned down documents 2 and 3 after reading passages
    # 12, 30 and 13 of them (as kept in a checkpoint: keys are strings)
    state = {
        "sweep": {"0": {"judged": [1, 2, 3], "addressing": [1], "turned_down": {"2": [12, 30], "3": [13]}}}
    }
    findings = [
        _finding(1, "addressing", document_id=1, origin="researcher"),
        _finding(2, "turned down", document_id=2, origin="researcher"),
        _finding(3, "turned down, follow-up", document_id=3, origin="follow-up"),
        _finding(4, "never judged", document_id=4, origin="researcher"),
        _finding(5, "another question", document_id=2, question=1, origin="researcher", passage_id=12),
        _finding(6, "no question", document_id=2, question=None, origin="researcher", passage_id=12),
        _finding(7, "a passage the judge did not read", document_id=2, origin="researcher", passage_id=99),
    ]

    # then only the findings for question 0 quoting a passage the judge read and turned down
    assert findings_set_aside(findings, state) == {2, 3}
    assert findings_set_aside(findings, {}) == set()
    assert findings_set_aside(findings, {"sweep": {"0": {"judged": [2], "addressing": []}}}) == set()


def test_compose_from_findings_leaves_out_what_the_judge_overruled_and_says_so():
    # given a researcher's finding in Zeta NDA, whose passage the sweep's judge read before
    # finding that the document does not address the question
    findings = [*_quote_findings(), _finding(9, "Zeta keeps copies", document_id=6, origin="researcher")]
    state = {"sweep": {"0": {**STATE["sweep"]["0"], "turned_down": {"6": [19, 40]}}}}

    # when
    draft = compose_from_findings(
        title="NDA review", plan=PLAN, engine_state=state, findings=findings, titles=TITLES, note="Cut short."
    )

    # then it is not cited, and Gaps names its document twice: not addressing, and set aside
    assert 'findings="9"' not in draft
    assert "Zeta keeps copies" not in draft
    assert f"- {RETURN_QUESTION}: in 1 of the 6 documents examined, {NOT_JUDGED}: *Zeta NDA*." in draft
    assert (
        f"- {RETURN_QUESTION}: what the researchers quoted from 1 document judged not to address it is "
        "set aside, not cited: *Zeta NDA*."
    ) in draft


def test_plan_questions_summary_keeps_plan_indices_and_names_untitled_documents():
    # given a plan whose second step is no question, and a judged document of no known title
    plan = [{"question": "first"}, {"note": "not a question"}, "junk", {"question": "third", "sweep": True}]
    state = {"sweep": {"3": {"judged": ["7", 1], "addressing": []}}}

    # when
    questions = plan_questions_summary(plan=plan, engine_state=state, titles={1: "A"})

    # then
    assert questions == [
        QuestionSummary(
            index=0, question="first", not_addressing=[], addressing=[], set_aside=[], not_addressing_ids=[]
        ),
        QuestionSummary(
            index=3,
            question="third",
            swept=True,
            documents_examined=2,
            not_addressing=["Document 7", "A"],
            addressing=[],
            set_aside=[],
            not_addressing_ids=[7, 1],
        ),
    ]


QUOTES = {
    1: "The recipient shall return or destroy all confidential materials.",
    2: "The recipient shall notify the disclosing party of any court order.",
    3: "On request the recipient must return or destroy the confidential materials.",
    4: "If a court order compels disclosure, notify the disclosing party promptly.",
    5: "Confidential materials shall be returned or destroyed within ten days.",
}
PLAN = [
    {"question": RETURN_QUESTION, "sweep": True},
    {"question": SOLICIT_QUESTION},
]
STATE = {"sweep": {"0": {"judged": [1, 2, 3, 4, 5, 6], "addressing": [1, 2, 3, 4, 5]}}}


def _quote_findings() -> list[dict]:
    return [
        {
            "id": i,
            "claim": f'{TITLES[i]} says "{QUOTES[i]}"',
            "quote": QUOTES[i],
            "passage_id": 10 + i,
            "document_id": i,
            "question": 0,
            "origin": "sweep",
        }
        for i in QUOTES
    ]


def test_positions_by_words_group_a_swept_questions_findings_by_their_quotes():
    # given
    questions = plan_questions_summary(plan=PLAN, engine_state=STATE, titles=TITLES)

    # when
    positions = positions_by_words(questions, _quote_findings())

    # then the unswept question has no positions; the swept one two, larger first, each named by
    # its central quote's words, the question's own ("return", "materials") only finishing a phrase
    assert list(positions) == [0]
    assert [sorted(p.finding_ids) for p in positions[0]] == [[1, 3, 5], [2, 4]]
    labels = [p.label for p in positions[0]]
    assert labels == ["return or destroy all confidential materials", "disclosing party of any court order"]


def test_positions_by_words_need_two_findings():
    # given a swept question with a single finding
    questions = [_swept()]

    # when
    positions = positions_by_words(questions, _quote_findings()[:1])

    # then
    assert positions == {}


def test_compose_from_findings_renders_with_every_footnote_quoting_its_finding():
    # given each finding's quote inside a longer passage of its document
    findings = _quote_findings()
    passages = {
        f["passage_id"]: CitablePassage(
            passage_id=f["passage_id"],
            document_id=f["document_id"],
            document_title=TITLES[f["document_id"]],
            source_name=f"nda-{f['document_id']}.pdf",
            ordinal=3,
            page=2,
            start=400,
            text=f"Clause 7. {f['quote']} Nothing in this clause limits the other clauses.",
            is_heading=False,
        )
        for f in findings
    }

    # when the draft is composed and rendered
    draft = compose_from_findings(
        title="NDA review", plan=PLAN, engine_state=STATE, findings=findings, titles=TITLES, note="Cut short."
    )
    rendered = citations_render(
        draft=draft, passages=passages, retrieved_ids=list(passages), findings=findings
    )

    # then
    assert rendered.warnings == []
    assert "<cite" not in rendered.content
    quote_of = {f["passage_id"]: f["quote"] for f in findings}
    assert len(rendered.citations) == 5
    assert {c["passage_id"] for c in rendered.citations} == set(quote_of)
    for citation in rendered.citations:
        assert citation["quote"] == quote_of[citation["passage_id"]]
    assert rendered.content.startswith("# NDA review\n\n*Cut short.*\n\n## Summary\n")
    assert "## Key findings" in rendered.content
    assert f"- {SOLICIT_QUESTION}: no passage retrieved in this run supports an answer." in rendered.content
    assert f"- {RETURN_QUESTION}: in 1 of the 6 documents examined, {NOT_JUDGED}: *Zeta NDA*." in (
        rendered.content
    )


def test_a_failed_runs_question_without_findings_is_not_said_unanswered():
    # given a run that failed with findings for its first question only
    draft = compose_from_findings(
        title="NDA review",
        plan=PLAN,
        engine_state=STATE,
        findings=_quote_findings(),
        titles=TITLES,
        note="Failed.",
        unfinished=True,
    )

    # then Gaps says the second was not researched to its end, not that nothing answers it
    gaps = _section(draft, "## Gaps")
    assert f"- {SOLICIT_QUESTION}: not researched to its end before the run stopped; no finding yet." in gaps
    assert "supports an answer" not in draft


def test_compose_from_findings_is_brief_on_the_fast_path():
    # given a run on the fast path
    state = {**STATE, "strategy": "fast"}

    # when
    draft = compose_from_findings(
        title="NDA review",
        plan=PLAN,
        engine_state=state,
        findings=_quote_findings(),
        titles=TITLES,
        note="Fast.",
    )

    # then
    assert "## Answer" in draft
    assert "## Summary" not in draft
    assert "## Key findings" not in draft
    assert len(_section(draft, "## Answer")) == 5


def test_gaps_name_at_most_25_documents_and_count_the_rest():
    # given a question swept over 30 documents, 27 of which do not address it
    not_addressing = [f"Lease {n:02d}" for n in range(1, 28)]
    questions = [_swept(documents_examined=30, not_addressing=not_addressing)]

    # when
    report = compose_report(
        title="Leases", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then
    named = ", ".join(f"*Lease {n:02d}*" for n in range(1, 26))
    assert _section(report, "## Gaps") == [
        f"- {RETURN_QUESTION}: in 27 of the 30 documents examined, {NOT_JUDGED}: {named} and 2 more."
    ]


def test_a_verbatim_quotation_holding_a_pipe_survives_the_table_cell():
    # given a sweep finding whose claim quotes its passage verbatim, a "|" included
    text = "Fees: net 30 | late fee 2% per month apply to all invoices."
    quote = "net 30 | late fee 2% per month"
    findings = [_finding(1, f'Alpha says "{quote}"', document_id=1, quote=quote)]
    passages = {
        11: CitablePassage(
            passage_id=11,
            document_id=1,
            document_title="Alpha NDA",
            source_name="alpha.pdf",
            ordinal=0,
            page=None,
            start=0,
            text=text,
            is_heading=False,
        )
    }
    draft = compose_report(
        title="Fees",
        questions=[_swept(documents_examined=1, not_addressing=[], addressing=[1])],
        findings=findings,
        document_titles=TITLES,
    )

    # when
    rendered = citations_render(draft=draft, passages=passages, retrieved_ids=[11], findings=findings)

    # then the quotation is kept in the table, escaped for it, and nothing is removed
    assert rendered.warnings == []
    assert '| Alpha NDA |  | Alpha says "net 30 \\| late fee 2% per month"[^1] |' in rendered.content


def test_a_document_a_researcher_quoted_for_the_question_is_no_gap():
    # given a question the judge found 2 of 5 documents not to address, one of which (Zeta NDA)
    # a researcher quoted for that question all the same
    questions = [_swept(not_addressing=["Zeta NDA", "Doc E"])]
    findings = [*SWEEP_FINDINGS, _finding(4, "Zeta requires return", document_id=6, origin="researcher")]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=findings, document_titles=TITLES
    )

    # then Gaps names only the document nothing was quoted from
    assert _section(report, "## Gaps") == [
        f"- {RETURN_QUESTION}: in 1 of the 5 documents examined, {NOT_JUDGED}: *Doc E*."
    ]


def test_a_long_claim_is_shortened_in_the_table_and_whole_elsewhere():
    # given a swept document's claim of 40 words
    claim = " ".join(f"word{n}" for n in range(40))
    findings = [_finding(1, claim, document_id=1)]

    # when
    report = compose_report(
        title="NDA review",
        questions=[_swept(documents_examined=1, not_addressing=[], addressing=[1])],
        findings=findings,
        document_titles=TITLES,
        positions={0: [Position("words", [1])]},
    )

    # then the table's cell holds its first 30 words, the Summary (which quotes a lone
    # document's answer) all of them
    first = " ".join(f"word{n}" for n in range(30))
    assert f'| Alpha NDA | words | <cite findings="1">{first} \u2026</cite> |' in report
    assert f'<cite findings="1">{claim}</cite>' in "\n".join(_section(report, "## Summary"))


def test_a_long_claim_shows_in_the_table_the_words_that_answer_the_question():
    # given a governing-law quote whose first 30 words are its entire-agreement sentence
    entire = " ".join(["This Agreement constitutes the entire agreement between the parties"] * 4)
    claim = (
        f"{entire} and this Agreement shall be governed by the laws of Germany without regard to conflicts."
    )
    question = "Which laws govern these agreements?"
    findings = [_finding(1, claim, document_id=1)]

    # when
    report = compose_report(
        title="NDA review",
        questions=[_swept(question=question, documents_examined=1, not_addressing=[], addressing=[1])],
        findings=findings,
        document_titles=TITLES,
    )

    # then the cell opens a few words before "governed" and keeps "Germany"
    [row] = [line for line in _section(report, f"## Documents: {question}") if line.startswith("| Alpha")]
    assert '| <cite findings="1">\u2026 ' in row and "governed by the laws of Germany" in row
    assert row.endswith("conflicts.</cite> |")


@pytest.mark.parametrize(
    ("question", "claim", "kept"),
    [
        (
            "How long do the confidentiality obligations last under each NDA?",
            "The Recipient agrees that the obligations of confidentiality and non-use set out in this "
            "Agreement shall remain in force during the term of this Agreement and the Confidential "
            "Information shall survive for a period of 3 (three) years following the termination or "
            "expiry of this Agreement for any reason whatsoever.",
            "for a period of 3 (three) years",
        ),
        (
            "What are the liability cap amounts in each contract?",
            "IN NO EVENT SHALL EITHER PARTY BE LIABLE FOR ANY INDIRECT DAMAGES AND EACH PARTY S TOTAL "
            "LIABILITY UNDER THIS AGREEMENT SHALL NOT EXCEED THE FEES PAID DURING THE TWELVE MONTHS "
            "PRECEDING THE CLAIM, BEING IN NO CASE MORE THAN 500,000 DOLLARS IN TOTAL FOR ALL CLAIMS",
            "MORE THAN 500,000 DOLLARS",
        ),
    ],
)
def test_a_question_asking_for_a_value_keeps_it_in_the_table(question, claim, kept):
    # given a quote whose words naming the question come first and its value last
    report = compose_report(
        title="NDA review",
        questions=[_swept(question=question, documents_examined=1, not_addressing=[], addressing=[1])],
        findings=[_finding(1, claim, document_id=1)],
        document_titles=TITLES,
    )
    # then the cell keeps the value, not only the question's words
    [row] = [line for line in _section(report, f"## Documents: {question}") if line.startswith("| Alpha")]
    assert kept in row


def test_two_documents_of_one_title_are_both_listed_without_it():
    # given two examined documents that share a title, neither addressing the affirmative question
    questions = [
        _swept(
            question=AFFIRMED,
            asked=NEGATED,
            not_addressing=["Doc D", "Doc D"],
            not_addressing_ids=[7, 8],
        )
    ]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then each is counted and listed
    assert _section(report, f"## Documents without it: {NEGATED}")[1:] == ["- *Doc D*", "- *Doc D*"]


def test_a_question_about_two_clauses_lists_the_documents_answering_both():
    # given "both X and not Y": X swept with documents 1-3 addressing it, Y (asked in the negative)
    # with documents 2 and 4 addressing it, so that 1 and 3 lack Y
    both_question = "Which NDAs require return but no destruction?"
    questions = [
        _swept(index=0, not_addressing=["Delta NDA"], not_addressing_ids=[4], documents_examined=4),
        _swept(
            index=1,
            question="Which NDAs require any destruction?",
            asked="Which NDAs require no destruction?",
            addressing=[2, 4],
            not_addressing=["Alpha NDA", "Gamma NDA"],
            not_addressing_ids=[1, 3],
            documents_examined=4,
        ),
    ]
    findings = [{**f, "question": 0} for f in SWEEP_FINDINGS]

    # when
    report = compose_report(
        title="NDA review",
        questions=questions,
        findings=findings,
        document_titles=TITLES,
        both=[{"question": both_question, "of": [0, 1]}],
    )

    # then the Summary answers it first and the section lists 1 and 3, each with its finding
    assert _section(report, "## Summary")[0] == (
        f"- **{both_question}** 2 documents of those examined answer both *{RETURN_QUESTION}* and "
        "*Which NDAs require no destruction?* (listed under Documents answering both)."
    )
    assert _section(report, f"## Documents answering both: {both_question}")[1:] == [
        '- *Alpha NDA*: <cite findings="2">Alpha requires return</cite>',
        '- *Gamma NDA*: <cite findings="1">Gamma requires destruction</cite>',
    ]
    assert _section(report, f"## Documents answering both: {both_question}")[0].startswith(
        "These 2 documents answer both "
    )

    # and one document answering both is "this document"
    lacking = _swept(
        index=1,
        question="Which NDAs require any destruction?",
        asked="Which NDAs require no destruction?",
        addressing=[2, 3, 4],
        not_addressing=["Alpha NDA"],
        not_addressing_ids=[1],
        documents_examined=4,
    )
    one = compose_report(
        title="NDA review",
        questions=[questions[0], lacking],
        findings=findings,
        document_titles=TITLES,
        both=[{"question": both_question, "of": [0, 1]}],
    )
    assert _section(one, f"## Documents answering both: {both_question}")[:2] == [
        f"This document answers both *{RETURN_QUESTION}* and *Which NDAs require no destruction?* (with "
        "its first quote that says so; an absence has none):",
        '- *Alpha NDA*: <cite findings="2">Alpha requires return</cite>',
    ]

    # and with no document answering both, it says so
    none = compose_report(
        title="NDA review",
        questions=[questions[0], _swept(index=1, question="q2", addressing=[5], not_addressing=[])],
        findings=findings,
        document_titles=TITLES,
        both=[{"question": both_question, "of": [0, 1]}],
    )
    assert _section(none, f"## Documents answering both: {both_question}") == [
        f"No document examined answers both *{RETURN_QUESTION}* and *q2*."
    ]


def test_the_documents_a_capped_sweep_did_not_examine_are_counted_not_listed_without_it():
    # given a question asked in the negative whose sweep examined 5 of the 30 documents in scope
    questions = [_swept(question=AFFIRMED, asked=NEGATED, documents_in_scope=30)]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then
    assert _section(report, f"## Documents without it: {NEGATED}")[-1] == (
        "25 more documents of the 30 the run could search were not examined (the depth's cap on "
        "documents swept): they may lack it too."
    )


def test_the_summary_counts_the_documents_in_scope_a_sweep_did_not_examine():
    # given a question swept over 5 of the 30 documents in scope, 3 of which address it
    questions = [_swept(documents_in_scope=30)]

    # when
    report = compose_report(
        title="NDA review", questions=questions, findings=SWEEP_FINDINGS, document_titles=TITLES
    )

    # then its Summary line says the other 25 were not examined, and why
    [line] = _section(report, "## Summary")
    assert line.startswith(
        f"- **{RETURN_QUESTION}** 3 of 5 documents examined address it (25 more of the 30 in scope were "
        "not examined: the sweep judges the documents its searches reach, up to the depth's cap)"
    )
    # and with every document examined, nothing is added
    every = compose_report(
        title="NDA review",
        questions=[_swept(documents_in_scope=5)],
        findings=SWEEP_FINDINGS,
        document_titles=TITLES,
    )
    assert "in scope" not in _section(every, "## Summary")[0]


def test_a_question_no_quote_says_a_quarter_of_gets_a_caution_in_the_summary():
    # given a question of eight words whose only quote shares one ("rate")
    question = "What royalty rate do the licensees pay on net sales of mining hardware?"
    questions = [_swept(question=question, documents_examined=3, addressing=[1], not_addressing=["B", "C"])]
    findings = [_finding(1, "Interest accrues at the annual rate of six per cent.", document_id=1)]

    # when
    report = compose_report(title="Royalties", questions=questions, findings=findings, document_titles=TITLES)

    # then the Summary says how little the quotes say of it
    [line] = _section(report, "## Summary")
    assert line.startswith(
        f"- **{question}** 1 of 3 documents examined address it (no quote says more than 1 of the "
        "question's 8 words: the collection may not answer it, so read the quotes before relying on them)"
    )
    # and a quote saying two of them is no longer weak evidence
    findings[0]["quote"] = "The licensee shall pay a royalty of five per cent of net sales."
    report = compose_report(title="Royalties", questions=questions, findings=findings, document_titles=TITLES)
    assert "may not answer it" not in report


def test_corpus_text_reads_as_written_on_the_report_page():
    # given findings whose quotes hold Markdown of their own: a contract's redaction "[***]", a
    # Markdown source's heading and bold label, a list mark, a tag, a quotation with a "*"
    from research.pages import markdown_html

    heading = "## § 2 Umfang des mobilen Arbeitens Beschäftigte dürfen vier Tage arbeiten."
    redacted = 'The fee is $[***] per unit, "payable within [***] days" of delivery.'
    label = '- **Vendor:** Datawell Analytics <cite findings="2">shall</cite> invoice monthly.'
    texts = {1: heading, 2: redacted, 3: label}
    findings = [_finding(n, text, document_id=n) for n, text in texts.items()]
    passages = {
        10 + n: CitablePassage(
            passage_id=10 + n,
            document_id=n,
            document_title=TITLES[n],
            source_name=f"{n}.md",
            ordinal=0,
            page=None,
            start=0,
            text=text,
            is_heading=False,
        )
        for n, text in texts.items()
    }
    draft = compose_report(
        title="Terms",
        questions=[_swept(documents_examined=3, not_addressing=[], addressing=[1, 2, 3])],
        findings=findings,
        document_titles=TITLES,
    )

    # when
    rendered = citations_render(
        draft=draft, passages=passages, retrieved_ids=list(passages), findings=findings
    )
    page = markdown_html(rendered.content)

    # then nothing of it becomes a heading, emphasis, a list or a citation, and the quotation
    # holding "[***]" is verbatim (not removed)
    assert rendered.warnings == []
    assert "<h2>§ 2" not in page and "<strong><em>" not in page and "<strong>Vendor:</strong>" not in page
    assert "## § 2 Umfang des mobilen Arbeitens" in page
    assert "The fee is $[***] per unit, &quot;payable within [***] days&quot;" in page or (
        'The fee is $[***] per unit, "payable within [***] days"' in page
    )
    assert (
        "- **Vendor:** Datawell Analytics &lt;cite findings=&quot;2&quot;&gt;shall&lt;/cite&gt;" in page
        or ('- **Vendor:** Datawell Analytics &lt;cite findings="2"&gt;shall&lt;/cite&gt;' in page)
    )
    assert len(rendered.citations) == 3


def test_a_document_denying_one_of_two_clauses_does_not_answer_both():
    # given "both X and Y", X asking whether the contracts let one terminate for convenience:
    # Alpha allows it, Beta says neither party may; both cap liability
    convenience = "Which contracts let us terminate for convenience?"
    cap = "Which contracts cap liability?"
    questions = [
        _swept(index=0, question=convenience, addressing=[1, 2], not_addressing=[], documents_examined=2),
        _swept(index=1, question=cap, addressing=[1, 2], not_addressing=[], documents_examined=2),
    ]
    findings = [
        _finding(
            1, "Either party may terminate this agreement for convenience on 30 days notice.", document_id=1
        ),
        _finding(
            2, "Neither party may terminate this agreement for convenience during the term.", document_id=2
        ),
        _finding(3, "Liability is capped at the fees paid.", document_id=1, question=1),
        _finding(4, "Liability shall not exceed the fees paid in the last year.", document_id=2, question=1),
    ]

    # when
    report = compose_report(
        title="Vendor review",
        questions=questions,
        findings=findings,
        document_titles=TITLES,
        both=[{"question": "Which contracts have both?", "of": [0, 1]}],
    )

    # then Beta addresses the first question and is not among those that have both
    assert "2 of 2 documents examined address it" in _section(report, "## Summary")[1]
    assert _section(report, "## Documents answering both: Which contracts have both?")[1:] == [
        '- *Alpha NDA*: <cite findings="1">Either party may terminate this agreement for convenience on '
        "30 days notice.</cite>"
    ]
