"""The corpus page in a real browser: files dropped on the upload zone are uploaded at once with
a result per file, a drop over the size limit is said before anything is sent, and the creator
renames, shares, stops sharing and deletes the corpus from the page."""

import re

import pytest
from django.contrib.auth import get_user_model

from corpora.services import corpus_create
from tests.browser.helpers import BROWSER_TEST, sign_in
from tests.factories import ACME_SUPPLY, INITECH_LICENSE

pytestmark = BROWSER_TEST

DROP = """([files]) => {
  const transfer = new DataTransfer();
  for (const [name, text] of files) transfer.items.add(new File([text], name, {type: "text/plain"}));
  return transfer;
}"""


@pytest.fixture
def corpus(alice):
    get_user_model().objects.create_user(username="bob", password="another-long-password")
    return corpus_create(creator=alice, name="Supplier contracts")


def drop(page, files: list[tuple[str, str]]) -> None:
    transfer = page.evaluate_handle(DROP, [files])
    page.dispatch_event("[data-dropzone]", "drop", {"dataTransfer": transfer})


def test_dropped_files_are_uploaded_with_a_result_each(live_server, corpus, browser_page, settings):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")

    drop(page, [("acme-supply.md", ACME_SUPPLY), ("initech-license.txt", INITECH_LICENSE)])
    page.wait_for_selector("table.uploads")
    assert page.locator("table.uploads tr.ingested").count() == 2
    assert page.locator("table.documents tbody tr").count() == 2

    # a drop over the limit is said on the page and not sent
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")
    drop(page, [("big.txt", "word " * 250_000)])
    assert "1.2 MB: big.txt — over the 1.0 MB limit" in page.inner_text(".dropzone .chosen")
    assert page.locator("table.uploads").count() == 0


def test_the_creator_manages_the_corpus_from_its_page(live_server, corpus, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")

    page.fill("input[name=name]", "Suppliers 2026")
    page.click("button:has-text('Rename')")
    page.wait_for_selector("text=Renamed to “Suppliers 2026”.")
    assert page.inner_text("h1") == "Suppliers 2026"

    page.fill("section.manage input[name=username]", "bob")
    page.click("button:has-text('Share')")
    page.wait_for_selector("text=Shared with bob.")
    page.click("button:has-text('Stop sharing')")
    page.wait_for_selector("text=No longer shared with bob.")

    page.click("text=Delete this corpus")
    page.fill("input[name=confirm]", "Suppliers 2026")
    page.click("button:has-text('Delete corpus')")
    page.wait_for_url(re.compile(r".*/$"))
    assert page.is_visible("text=Deleted “Suppliers 2026” with 0 documents.")
