"""Destructive buttons ask first (static/deepcite/confirm.js): deleting a document is no longer
one click on the wrong row."""

import pytest

from corpora.models import Document
from corpora.services import corpus_create
from tests.browser.helpers import BROWSER_TEST, in_a_thread, sign_in
from tests.factories import ingest_samples

pytestmark = BROWSER_TEST


@pytest.fixture
def samples_corpus(alice):
    corpus = corpus_create(creator=alice, name="Contracts")
    ingest_samples(corpus, schedule_embedding=False)
    return corpus


def test_deleting_a_document_asks_first(live_server, samples_corpus, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/corpora/{samples_corpus.pk}/")
    asked: list[str] = []

    # when the user dismisses the question, nothing is deleted
    def dismiss(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.locator("form[data-confirm] button", has_text="Delete").first.click()
    page.wait_for_timeout(300)
    assert asked and asked[0].startswith("Delete “") and "and its passages?" in asked[0]
    assert in_a_thread(lambda: Document.objects.filter(corpus=samples_corpus).count()) == 2

    # when the user accepts it, the document is deleted
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("form[data-confirm] button", has_text="Delete").first.click()
    page.wait_for_selector("text=and its passages.")
    assert in_a_thread(lambda: Document.objects.filter(corpus=samples_corpus).count()) == 1
