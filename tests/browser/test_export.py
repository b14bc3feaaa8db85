"""A report's exports in a real browser (headless Chromium, Playwright, a live server): the
report page's Markdown and JSON links download files named after the report holding its text,
footnotes, sources and quotes; printing hides the site around the report and prints each cited
passage open.

Chromium is Debian's (`apt-get install chromium`, as .ci/run does), never a browser download."""

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.urls import reverse

from corpora.services import corpus_create
from research.services import report_start
from tests.browser.helpers import BROWSER_TEST, sign_in
from tests.factories import ingest_samples

pytestmark = BROWSER_TEST

PROMPT = "What limits the liability of the supplier?\nWhen is the licence fee due?"


@pytest.fixture
def world(alice):
    """Alice's finished report on the sample contracts, made before Playwright starts."""
    corpus = corpus_create(creator=alice, name="Contracts")
    ingest_samples(corpus)
    report = report_start(user=alice, corpus=corpus, prompt=PROMPT)  # runs in this process's pool
    deadline = time.monotonic() + 120
    while not report.is_terminal and time.monotonic() < deadline:
        time.sleep(0.2)
        report.refresh_from_db()
    assert report.status == "COMPLETED" and report.citations, (report.status, report.error)
    return SimpleNamespace(report=report, url=reverse("research:report-detail", args=[report.slug]))


def _download(page, link_text: str):
    with page.expect_download() as download:
        page.click(f".exports >> text={link_text}")
    return download.value


def test_the_report_downloads_as_markdown_and_json(live_server, world, browser_page):
    page, report = browser_page, world.report
    sign_in(page, live_server.url)
    page.goto(live_server.url + world.url)

    markdown = _download(page, "Markdown")
    assert markdown.suggested_filename == f"{report.slug}.md"
    text = Path(markdown.path()).read_text(encoding="utf-8")
    assert text.startswith(report.content.rstrip()) and "\n## Sources\n" in text
    for citation in report.citations:
        assert f"[^{citation['footnote']}]: *{citation['document_title']}*" in text
        assert f'(id {citation["passage_id"]}): "{" ".join(citation["quote"].split())}"' in text
    assert text.rstrip().endswith(live_server.url + world.url)

    exported = _download(page, "JSON")
    assert exported.suggested_filename == f"{report.slug}.json"
    data = json.loads(Path(exported.path()).read_text(encoding="utf-8"))
    assert (data["title"], data["status"], data["markdown"]) == (report.title, "COMPLETED", report.content)
    assert [c["footnote"] for c in data["citations"]] == list(range(1, len(report.citations) + 1))


def test_printing_shows_the_report_and_its_cited_passages_without_the_site(live_server, world, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(live_server.url + world.url)
    first_passage = "ol.sources li:first-child blockquote"
    assert not page.is_visible(first_passage)  # folded on screen

    page.emulate_media(media="print")
    for chrome in ("nav.site", ".exports", "ol.sources summary", "text=Open in the document"):
        assert not page.is_visible(chrome), chrome
    assert page.is_visible("article") and page.is_visible(first_passage)  # printed open

    # Browsers without ::details-content: the print dialog's beforeprint opens every passage
    # (footnotes.js), afterprint folds them again.
    is_open = "() => [...document.querySelectorAll('ol.sources details')].map(d => d.open)"
    page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    assert set(page.evaluate(is_open)) == {True}
    page.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
    assert set(page.evaluate(is_open)) == {False}
    page.emulate_media(media="screen")
    assert not page.is_visible(first_passage) and page.is_visible(".exports")
