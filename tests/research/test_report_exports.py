"""Export of a report: Markdown (as written, footnotes and Sources with the cited quotes, and
where it came from; a running report's findings so far), JSON (findings with their documents,
citations, answers, warnings, model usage) and CSV (the answers, one row per question and
document), as attachments with safe names, private and uncached, plain text never rendered by
the browser; the creator's only."""

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from corpora.models import Passage
from research.engine.run import report_run
from research.exports import report_export_filename
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tests.factories import ingest_agreements, ingest_samples, ingest_text, queued_report, signed_in


@pytest.fixture
def completed(user, corpus):
    ingest_samples(corpus)
    report = report_start(
        user=user,
        corpus=corpus,
        prompt="What limits the liability of the supplier?\nWhen is the licence fee due?",
    )
    return report_run(report_id=report.pk)


@pytest.fixture
def browser(user):
    return signed_in(user)


def export(browser, report, kind: str):
    return browser.get(reverse(f"research:report-export-{kind}", args=[report.slug]))


def test_the_markdown_export_is_the_report_with_its_footnotes_and_quotes(browser, completed):
    response = browser.get(reverse("research:report-export-markdown", args=[completed.slug]))
    text = response.content.decode()
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{completed.slug}.md"'
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    assert text.startswith(completed.content.rstrip())
    assert completed.citations and "## Sources" in text
    for citation in completed.citations:
        assert f"[^{citation['footnote']}]" in text
        assert f"[^{citation['footnote']}]:" in text
        assert citation["quote"].split()[0] in text
    assert text.rstrip().endswith(f"http://testserver/reports/{completed.slug}/")
    assert "Research report on Contracts: completed, depth standard, finished" in text


def test_the_json_export_has_findings_citations_and_usage(browser, completed):
    response = browser.get(reverse("research:report-export-json", args=[completed.slug]))
    data = json.loads(response.content)
    assert response["Content-Disposition"] == f'attachment; filename="{completed.slug}.json"'
    assert data["slug"] == completed.slug and data["status"] == "COMPLETED"
    assert data["markdown"] == completed.content and data["citations"] == completed.citations
    titles = {p.document_id: p.document.title for p in Passage.objects.select_related("document")}
    assert completed.findings and data["findings"] == [
        {**finding, "document_title": titles[finding["document_id"]]} for finding in completed.findings
    ]
    assert "acme-supply" in {finding["document_title"] for finding in data["findings"]}
    for citation in data["citations"]:  # each source: its footnote, passage, document, page, quote
        assert citation["footnote"] in range(1, len(data["citations"]) + 1)
        assert citation["document_title"] == titles[citation["document_id"]]
        assert citation["quote"] in Passage.objects.get(pk=citation["passage_id"]).text
        assert {"source_name", "page"} <= citation.keys()
    assert data["corpus"] == {"id": completed.corpus_id, "name": "Contracts"}
    assert data["model_usage"] == completed.model_usage and data["warnings"] == completed.warnings
    assert data["completed_at"] == completed.completed_at.isoformat()
    assert data["url"] == f"http://testserver/reports/{completed.slug}/"


def test_a_report_still_running_exports_what_it_has(browser, user, corpus):
    report = queued_report(user, corpus, "Liability caps")
    text = browser.get(reverse("research:report-export-markdown", args=[report.slug])).content.decode()
    assert text.startswith("# Liability caps\n\nThis report has no content yet.")
    assert "Research report on Contracts: queued, depth standard." in text
    data = json.loads(browser.get(reverse("research:report-export-json", args=[report.slug])).content)
    assert data["status"] == ReportStatus.QUEUED and data["markdown"] == "" and data["completed_at"] is None


def test_exports_are_the_creators_only(completed, other_user):
    for name in (
        "research:report-export-markdown",
        "research:report-export-json",
        "research:report-export-csv",
    ):
        url = reverse(name, args=[completed.slug])
        assert Client().get(url).status_code == 302  # to sign in
        bob = Client()
        bob.force_login(other_user)
        assert bob.get(url).status_code == 404


def test_the_report_page_links_both_exports_and_print(browser, completed):
    page = browser.get(reverse("research:report-detail", args=[completed.slug])).content.decode()
    assert f'href="/reports/{completed.slug}/export.md" download' in page
    assert f'href="/reports/{completed.slug}/export.json" download' in page
    assert f'href="/reports/{completed.slug}/export.csv" download' in page
    assert "data-print" in page and "research/footnotes.js" in page


def test_a_running_report_exports_its_findings_so_far(browser, user, corpus):
    ingest_samples(corpus)
    passage = Passage.objects.select_related("document").get(text__contains="total liability")
    quote = "The total liability of the Supplier"
    finding = {"id": 1, "claim": "Liability is capped [^9] <b>", "quote": quote}
    finding |= {"passage_id": passage.pk, "passage_ids": [passage.pk], "document_id": passage.document_id}
    report = queued_report(user, corpus, "Liability caps", status=ReportStatus.RUNNING, findings=[finding])

    text = export(browser, report, "markdown").content.decode()

    assert text.startswith("# Liability caps\n\nThe report is not written yet. Its findings so far:\n\n")
    claim = "1. Liability is capped \\[^9\\] &lt;b>"  # one line of text: no footnote, no tag
    assert f'{claim} *{passage.document.title}*, passage id {passage.pk}: "{quote}"' in text
    data = json.loads(export(browser, report, "json").content)
    assert data["status"] == "RUNNING" and data["markdown"] == ""
    assert data["findings"] == [{**finding, "document_title": passage.document.title}]


def test_exports_are_attachments_never_rendered_whatever_the_report_holds(browser, user, corpus):
    hostile = '<script>alert(1)</script> "quoted" \\ \u2028 <img src=x onerror=alert(2)>'
    report = queued_report(
        user, corpus, hostile, status=ReportStatus.COMPLETED, content=f"# {hostile}\n\n{hostile}\n"
    )
    markdown = export(browser, report, "markdown")
    assert markdown["Content-Type"] == "text/markdown; charset=utf-8"
    assert markdown["X-Content-Type-Options"] == "nosniff"
    assert markdown["Content-Disposition"].startswith("attachment; ")
    assert markdown.content.decode().startswith(f"# {hostile}\n\n{hostile}\n\n---\n")  # as written: text
    response = export(browser, report, "json")
    assert response["Content-Type"] == "application/json" and response["Content-Disposition"].startswith(
        "attachment; "
    )
    data = json.loads(response.content)  # valid JSON, the text round-trips exactly
    assert data["title"] == hostile and data["markdown"] == f"# {hostile}\n\n{hostile}\n"


def _csv(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_csv_export_answers_a_swept_question_per_document(browser, user, corpus):
    # given a question asked in the negative, swept over six agreements of which three insure
    documents = ingest_agreements(corpus, 6, insured=3)
    report = report_start(
        user=user, corpus=corpus, prompt="Which of these agreements do not require insurance?"
    )
    report = report_run(report_id=report.pk)

    # when
    response = export(browser, report, "csv")

    # then one row per document: the three that insure first, each with its quote and footnote
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{report.slug}.csv"'
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    rows = _csv(response)
    assert [(r["document"], r["addresses"]) for r in rows] == [
        *((f"agreement-{i:02d}", "yes") for i in range(3)),
        *((f"agreement-{i:02d}", "no") for i in range(3, 6)),
    ]
    assert [int(r["document_id"]) for r in rows] == documents
    assert {r["question"] for r in rows} == {"Which of these agreements require insurance?"}
    assert {r["asked"] for r in rows} == {"Which of these agreements do not require insurance?"}
    footnotes = {c["document_id"]: c["footnote"] for c in report.citations}
    for row in rows[:3]:
        assert row["quote"].startswith("The Supplier shall maintain commercial general liability insurance")
        assert row["footnotes"] == str(footnotes[int(row["document_id"])])
    assert all(r["quote"] == r["footnotes"] == r["position"] == "" for r in rows[3:])
    # the JSON export carries the same answers
    data = json.loads(export(browser, report, "json").content)
    assert [(d["title"], d["addresses"]) for d in data["answers"][0]["documents"]] == [
        (r["document"], r["addresses"] == "yes") for r in rows
    ]
    assert data["answers"][0]["documents_examined"] == 6 and data["answers"][0]["swept"] is True
    assert data["conjunctions"] == []


def test_the_csv_export_answers_a_question_about_two_clauses_first(browser, user, corpus):
    # given five agreements, two of which insure, all governed by a state's law
    ingest_agreements(corpus, 5, insured=2)
    prompt = "Which agreements have both an insurance requirement and a governing law?"
    report = report_run(report_id=report_start(user=user, corpus=corpus, prompt=prompt).pk)

    # when
    rows = _csv(export(browser, report, "csv"))

    # then its rows come first: the two documents answering both, then each question's
    assert [(r["question"], r["document"]) for r in rows[:2]] == [
        (prompt, "agreement-00"),
        (prompt, "agreement-01"),
    ]
    assert {r["question"] for r in rows[2:]} == {step["question"] for step in report.plan}


def test_a_csv_cell_never_runs_as_a_formula_in_a_spreadsheet(browser, user, corpus):
    # given documents whose titles and text a spreadsheet would take for formulas
    for i, title in enumerate(["=HYPERLINK(evil)", "+1+2", "-3", "@SUM(A1)", "plain"]):
        ingest_text(
            corpus,
            f"{title}.txt",
            f"Agreement {i}.\n\nThe Supplier shall maintain commercial general liability insurance of at "
            f"least {i + 1} million dollars throughout the term of this agreement.\n",
        )
    report = report_start(user=user, corpus=corpus, prompt="Which of these agreements require insurance?")
    report = report_run(report_id=report.pk)

    # when
    rows = _csv(export(browser, report, "csv"))

    # then every such cell starts with an apostrophe; the plain one is as it is
    assert sorted(r["document"] for r in rows) == ["'+1+2", "'-3", "'=HYPERLINK(evil)", "'@SUM(A1)", "plain"]
    assert all(r["addresses"] == "yes" for r in rows)


def test_a_running_report_exports_the_documents_judged_so_far(browser, user, corpus):
    # given a report whose sweep has judged two documents, one of which addresses the question
    documents = ingest_agreements(corpus, 3, insured=1)
    passage = Passage.objects.get(document_id=documents[0], text__contains="insurance")
    quote = "The Supplier shall maintain commercial general liability insurance"
    finding = {"id": 1, "claim": quote, "quote": quote, "question": 0, "origin": "sweep"}
    finding |= {"passage_id": passage.pk, "passage_ids": [passage.pk], "document_id": documents[0]}
    report = queued_report(
        user,
        corpus,
        "Insurance",
        status=ReportStatus.RUNNING,
        findings=[finding],
        plan=[{"question": "Which agreements require insurance?", "queries": [], "sweep": True}],
        engine_state={"sweep": {"0": {"judged": documents[:2], "addressing": [documents[0]]}}},
    )

    # when
    rows = _csv(export(browser, report, "csv"))

    # then: no footnotes yet (the report is not written), the third document not yet examined
    assert [(r["document"], r["addresses"], r["quote"], r["footnotes"]) for r in rows] == [
        ("agreement-00", "yes", quote, ""),
        ("agreement-01", "no", "", ""),
    ]


@pytest.mark.parametrize(
    ("slug", "filename"),
    [
        ("supplier-liability-1a2b3c4d", "supplier-liability-1a2b3c4d.md"),
        ('a"; filename=evil.exe\r\nX-Header: 1', "a-filenameevilexe-x-header-1.md"),
        ("../../etc/passwd", "etcpasswd.md"),
        ("\u00e9t\u00e9", "ete.md"),
        ('"\r\n', "report.md"),
    ],
)
def test_the_filename_is_safe_in_a_header_and_on_disk(slug, filename):
    assert report_export_filename(ResearchReport(slug=slug), "md") == filename
