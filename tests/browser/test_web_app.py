"""The web app in a real browser (headless Chromium, driven by Playwright, against a live
server): sign in, create a corpus, upload two documents (one PDF), search, start research,
watch the report page follow the run to COMPLETED with no reload by the user, open a
footnote's cited passage in the side panel with the quote highlighted, follow it to the document
view at that passage, download the Markdown export, sign out.

Chromium is Debian's (`apt-get install chromium`, as .ci/run does), never a browser download."""

import re
from pathlib import Path

import pytest

from corpora.models import Passage
from corpora.services import corpus_create
from research.models import ReportStatus, ResearchReport
from research.services import report_cancel
from tests.browser.helpers import BROWSER_TEST, in_a_thread, sign_in
from tests.documents import pdf_bytes
from tests.factories import ACME_SUPPLY, ingest_samples, queued_report

pytestmark = BROWSER_TEST


def test_a_user_researches_a_corpus_in_the_browser(live_server, browser_page, tmp_path):
    page = browser_page
    (tmp_path / "acme-supply.md").write_text(ACME_SUPPLY)
    (tmp_path / "licence.pdf").write_bytes(
        pdf_bytes([["The licensee shall pay the annual licence fee within thirty days of the invoice date."]])
    )

    # Sign in: home
    sign_in(page, live_server.url)
    assert page.is_visible("text=Your corpora")

    # Create a corpus: its page
    page.fill("input[name=name]", "Supplier contracts")
    page.click("text=Create corpus")
    page.wait_for_url(re.compile(r".*/corpora/\d+/$"))
    assert page.is_visible("text=Created “Supplier contracts”")

    # Upload two documents, one a PDF: a result per file
    page.set_input_files(
        "input[name=files]", [str(tmp_path / "acme-supply.md"), str(tmp_path / "licence.pdf")]
    )
    page.click("text=Upload")
    page.wait_for_selector("table.uploads")
    assert page.locator("table.uploads tr.ingested").count() == 2
    assert page.locator("table.documents tbody tr").count() == 2

    # Search the corpus
    page.fill("input[name=q]", "liability")
    page.click("button:has-text('Search')")
    page.wait_for_selector("ol.hits li")
    assert "liab" in page.inner_text("ol.hits").lower()

    # Start research: the report page follows the run until it ends
    page.fill(
        "textarea[name=prompt]", "What limits the liability of the supplier, and when is the licence fee due?"
    )
    page.click("text=Start research")
    page.wait_for_url(re.compile(r".*/reports/[\w-]+/$"))
    page.wait_for_selector(".status[data-status=COMPLETED]", timeout=90_000)
    assert page.locator("#progress").count() == 0
    footnotes = page.locator("article sup a")
    assert footnotes.count() >= 1

    # A footnote opens the side panel: its cited passage, the quote highlighted; Escape closes it
    footnotes.first.click()
    panel = page.locator("#source-panel")
    panel.wait_for(state="visible")
    quote = panel.locator("blockquote mark").first.inner_text().strip()
    assert quote
    assert panel.locator(".source-title em").inner_text().strip()
    page.keyboard.press("Escape")
    panel.wait_for(state="hidden")

    # ... and from the panel, the document view at that passage, highlighted, the quote marked
    footnotes.first.click()
    panel.locator("text=Open in the document").click()
    page.wait_for_url(re.compile(r".*/corpora/\d+/documents/\d+/\?passage=\d+.*#passage-\d+$"))
    focus = page.locator("section.passage.focus")
    assert focus.count() == 1
    assert focus.locator("mark").inner_text().strip() == quote
    assert focus.evaluate("node => node.matches(':target')")
    page.go_back()

    # Export: the Markdown file downloads with its footnotes and Sources; print hides the site
    with page.expect_download() as download:
        page.click(".exports >> text=Markdown")
    exported = Path(download.value.path()).read_text()
    assert download.value.suggested_filename.endswith(".md")
    assert "## Sources" in exported and quote.split()[0] in exported
    page.emulate_media(media="print")
    assert not page.is_visible("nav.site") and not page.is_visible("text=Print or save as PDF")
    page.emulate_media(media="screen")

    # Home lists the report; sign out
    page.click("nav.site >> text=Home")
    assert page.locator("td >> .status[data-status=COMPLETED]").count() == 1
    page.click("nav.site >> text=Sign out")
    page.wait_for_url(re.compile(r".*/accounts/login/$"))


@pytest.fixture
def waiting_report(alice):
    corpus = corpus_create(creator=alice, name="Contracts")
    ingest_samples(corpus)
    return queued_report(
        alice,
        corpus,
        "Liability caps",
        prompt="What limits the liability of the supplier?",
        progress={"phase": "planning"},
    )


def test_the_report_page_follows_a_run_and_shows_its_end_without_a_reload(
    live_server, waiting_report, browser_page
):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/reports/{waiting_report.slug}/")
    # the script replaces the server-rendered line with the polled one
    page.wait_for_function(
        "() => document.querySelector('#progress .line').textContent.startsWith('Queued · planning')"
    )
    assert page.is_visible("button:has-text('Cancel')")

    # the run ends elsewhere (here: cancelled while queued); the page notices and shows it
    in_a_thread(lambda: report_cancel(user=waiting_report.creator, report_id=waiting_report.pk))
    page.wait_for_selector(".status[data-status=CANCELLED]")
    assert page.is_visible("button:has-text('Resume')")
    assert page.locator("#progress").count() == 0

    # Resume: the run starts again from its findings and the page follows it to its end
    page.click("button:has-text('Resume')")
    assert page.is_visible("text=Resumed from its findings.")
    page.wait_for_selector(".status[data-status=COMPLETED]", timeout=90_000)
    assert page.locator("article sup a").count() >= 1


def _finding(number: int, passage: Passage) -> dict:
    quote = passage.text[:40]
    return {"id": number, "claim": quote, "quote": quote, "passage_id": passage.pk} | {
        "passage_ids": [passage.pk],
        "document_id": passage.document_id,
    }


@pytest.fixture
def running_report(waiting_report):
    """The waiting report taken by a run that has recorded one finding; and a passage of another
    document, for the next."""
    passages = Passage.objects.filter(document__corpus=waiting_report.corpus).order_by(
        "document_id", "ordinal"
    )
    first = passages.first()
    other = passages.exclude(document_id=first.document_id).first()
    ResearchReport.objects.filter(pk=waiting_report.pk).update(
        status=ReportStatus.RUNNING, findings=[_finding(1, first)], progress={"phase": "researching"}
    )
    return waiting_report, [_finding(1, first), _finding(2, other)]


def test_a_running_report_page_shows_its_question_and_counts_as_the_run_goes(
    live_server, running_report, browser_page
):
    waiting_report, findings = running_report
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/reports/{waiting_report.slug}/")
    # before the report is written, the page shows what was asked
    assert page.inner_text("section.prompt h1") == "Liability caps"
    assert page.inner_text("section.prompt p") == "What limits the liability of the supplier?"
    assert page.inner_text("header.meta .findings") == "1 finding"
    page.evaluate("() => { window.stillTheSamePage = true; }")

    # the run records a finding in another document: the header follows, with no reload
    in_a_thread(
        lambda: ResearchReport.objects.filter(pk=waiting_report.pk).update(
            findings=findings, progress={"phase": "sweeping"}
        )
    )
    page.wait_for_function(
        "() => document.querySelector('header.meta .findings').textContent === '2 findings'"
    )
    assert page.inner_text("header.meta .sources") == "2 sources"
    assert page.inner_text("header.meta .status") == "Running"
    assert page.evaluate("() => window.stillTheSamePage") is True


def test_cancel_from_the_report_page(live_server, waiting_report, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/reports/{waiting_report.slug}/")
    page.click("button:has-text('Cancel')")
    page.wait_for_selector(".status[data-status=CANCELLED]")
    assert page.is_visible("text=Cancelled.") and page.is_visible("button:has-text('Resume')")
