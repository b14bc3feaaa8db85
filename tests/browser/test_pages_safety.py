"""The pages in a real browser, for what no unit test sees: a document carrying `<script>`,
`onerror=` and `javascript:` payloads renders inert on every page that shows its text (no dialog
fires, no element carries an event handler or a script URL; the Content-Security-Policy would
log any blocked attempt as a console error, which fails the test too); another signed-in user
gets 404 from every page and JSON view of it; and axe-core finds no critical or serious
accessibility violation on the pages. Screenshots of the pages are kept as test artifacts."""

import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from corpora.models import Corpus, Document, Passage
from corpora.selectors import corpus_shared_with
from corpora.services import corpus_create
from research.models import ResearchReport
from research.services import report_start
from tests.browser.axe import serious_violations
from tests.browser.helpers import BROWSER_TEST, PASSWORD, in_a_thread, screenshot, sign_in
from tests.factories import ingest_samples, ingest_text

pytestmark = BROWSER_TEST

HOSTILE = """# Hostile <script>alert('title')</script> services agreement

Payment of the service fee is due within forty-five days <script>alert('body')</script> of each invoice.

The invoice <img src=x onerror="alert('img')"> may be paid by transfer;
see [the terms](javascript:alert('link')) and
<a href="javascript:alert('anchor')" onclick="alert('click')">the schedule</a>.
"""
PROMPT = "When is the service fee due, and when is the licence fee due?"

# In the page: anything a payload could have become.
INJECTED = """() => ({
  inlineScripts: document.querySelectorAll('script:not([src])').length,
  handlers: [...document.querySelectorAll('*')].filter(
    e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
  scriptUrls: [...document.querySelectorAll('[href], [src], [action], [formaction]')].filter(
    e => ['href', 'src', 'action', 'formaction'].some(
      n => (e.getAttribute(n) || '').trim().toLowerCase().startsWith('javascript:'))).length,
  images: document.querySelectorAll('img').length,
})"""
CLEAN = {"inlineScripts": 0, "handlers": 0, "scriptUrls": 0, "images": 0}


@pytest.fixture
def world(alice):
    """Alice's corpus with the hostile document and a finished report citing it; Bob, another
    user. Made before Playwright starts (its loop owns the test's thread afterwards)."""
    bob = get_user_model().objects.create_user(username="bob", password=PASSWORD)
    corpus = corpus_create(creator=alice, name="Contracts")
    ingest_samples(corpus)
    hostile = ingest_text(corpus, "hostile.md", HOSTILE).document
    report = report_start(user=alice, corpus=corpus, prompt=PROMPT)  # runs in this process's pool
    deadline = time.monotonic() + 120
    while not report.is_terminal and time.monotonic() < deadline:
        time.sleep(0.2)
        report.refresh_from_db()
    assert report.status == "COMPLETED", (report.status, report.error)
    assert hostile.pk in {c["document_id"] for c in report.citations}, "the report must cite the hostile text"
    passage = Passage.objects.filter(document=hostile).order_by("ordinal").last()
    return SimpleNamespace(bob=bob, corpus=corpus, hostile=hostile, passage=passage, report=report)


def _urls(world) -> dict[str, str]:
    corpus, report, passage = world.corpus, world.report, world.passage
    return {
        "corpus": reverse("corpora:detail", args=[corpus.pk]) + "?q=invoice+alert",
        "document": reverse("corpora:document", args=[corpus.pk, world.hostile.pk])
        + f"?passage={passage.pk}&mark={passage.start}-{passage.end}#passage-{passage.pk}",
        "report": reverse("research:report-detail", args=[report.slug]),
    }


def test_hostile_text_renders_inert_on_every_page(live_server, world, browser_page):
    page = browser_page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, live_server.url)
    for name, url in _urls(world).items():
        page.goto(live_server.url + url)
        assert "alert(" in page.inner_text("body"), f"{name}: the payload is shown as text"
        assert page.evaluate(INJECTED) == CLEAN, name
    # the report's footnotes: each side panel shows its passage inert too
    footnotes = page.locator("article sup a")
    for index in range(footnotes.count()):
        footnotes.nth(index).click()
        page.locator("#source-panel").wait_for(state="visible")
        assert page.evaluate(INJECTED) == CLEAN
        page.keyboard.press("Escape")
    assert dialogs == []


def test_another_user_gets_404_from_every_page(live_server, world, browser_page):
    page = browser_page
    sign_in(page, live_server.url, username="bob")
    corpus, report = world.corpus, world.report
    urls = [
        *_urls(world).values(),
        reverse("research:report-progress", args=[report.slug]),
        reverse("research:report-export-markdown", args=[report.slug]),
        reverse("research:report-export-json", args=[report.slug]),
        reverse("research:report-export-csv", args=[report.slug]),
    ]
    posts = [
        reverse("research:report-cancel", args=[report.slug]),
        reverse("research:report-resume", args=[report.slug]),
        reverse("research:report-new", args=[corpus.pk]),
        reverse("corpora:upload", args=[corpus.pk]),
        reverse("corpora:rename", args=[corpus.pk]),
        reverse("corpora:share", args=[corpus.pk]),
        reverse("corpora:delete", args=[corpus.pk]),
        reverse("corpora:document-delete", args=[corpus.pk, world.hostile.pk]),
    ]
    for url in urls:
        assert page.request.get(live_server.url + url).status == 404, url
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    for url in posts:
        response = page.request.post(
            live_server.url + url, headers={"X-CSRFToken": csrf, "Referer": live_server.url + "/"}
        )
        assert response.status == 404, url
    # nothing of Alice's changed
    state = in_a_thread(
        lambda: (
            ResearchReport.objects.get(pk=report.pk).status,
            Corpus.objects.get(pk=corpus.pk).name,
            Document.objects.filter(corpus=corpus).count(),
            corpus_shared_with(corpus=corpus),
        )
    )
    assert state == ("COMPLETED", "Contracts", 3, [])


def test_the_pages_have_no_serious_accessibility_violations(live_server, world, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    pages = {"home": "/", **_urls(world)}
    found = {}
    for name, url in pages.items():
        page.goto(live_server.url + url)
        if name == "report":
            page.locator("article sup a").first.click()
            page.locator("#source-panel").wait_for(state="visible")
            screenshot(page, "report-reader")
        elif name in ("corpus", "home"):
            screenshot(page, f"{name}-page")
        found[name] = serious_violations(page)
    assert found == {name: [] for name in pages}
