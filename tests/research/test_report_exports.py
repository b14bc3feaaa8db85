"""Export of a report: Markdown (as written, footnotes and Sources with the cited quotes, and
where it came from) and JSON (findings, citations, warnings, model usage), as attachments with
safe names, private and uncached; the creator's only."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from research.engine.run import report_run
from research.models import ReportStatus
from research.services import report_start
from tests.factories import ingest_samples, queued_report


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
    client = Client()
    client.force_login(user)
    return client


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
    assert data["markdown"] == completed.content
    assert data["findings"] == completed.findings and data["citations"] == completed.citations
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
    for name in ("research:report-export-markdown", "research:report-export-json"):
        url = reverse(name, args=[completed.slug])
        assert Client().get(url).status_code == 302  # to sign in
        bob = Client()
        bob.force_login(other_user)
        assert bob.get(url).status_code == 404


def test_the_report_page_links_both_exports_and_print(browser, completed):
    page = browser.get(reverse("research:report-detail", args=[completed.slug])).content.decode()
    assert f'href="/reports/{completed.slug}/export.md" download' in page
    assert f'href="/reports/{completed.slug}/export.json" download' in page
    assert "data-print" in page and "research/footnotes.js" in page
