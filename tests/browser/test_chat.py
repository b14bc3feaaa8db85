"""The corpus chat in a real browser: ask a question and read the cited answer; ask for research
and, without reloading, see the note with the report's link arrive when the run ends; follow it.
axe-core finds no critical or serious violation on the chat page; a screenshot is kept."""

import re

import pytest

from corpora.services import corpus_create
from tests.browser.axe import serious_violations
from tests.browser.helpers import BROWSER_TEST, screenshot, sign_in
from tests.factories import ingest_samples

pytestmark = BROWSER_TEST


@pytest.fixture
def corpus(alice):
    corpus = corpus_create(creator=alice, name="Contracts")
    ingest_samples(corpus)
    return corpus


def test_chat_answers_and_announces_a_finished_research_run(live_server, corpus, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")
    page.click("text=Chat with this corpus")
    page.wait_for_url(re.compile(rf".*/corpora/{corpus.pk}/chat/$"))

    page.fill("textarea[name=content]", "What limits the liability of the supplier?")
    page.click("button:has-text('Send')")
    page.wait_for_url(re.compile(rf".*/corpora/{corpus.pk}/chat/\d+/#composer$"))
    answer = page.locator("li.message.assistant").last
    assert "liab" in answer.inner_text().lower()

    page.fill("textarea[name=content]", "Please research the liability caps and the termination rights")
    page.click("button:has-text('Send')")
    page.wait_for_selector("li.message.assistant >> text=Started deep research")
    # the run ends in the background; the page's poll brings the announcement, no reload
    announcement = page.locator("li.message.system")
    announcement.wait_for(timeout=90_000)
    assert "Deep research is ready" in announcement.inner_text()
    screenshot(page, "chat-page")
    assert serious_violations(page) == []

    announcement.locator("text=Open the report").click()
    page.wait_for_url(re.compile(r".*/reports/[\w-]+/$"))
    assert page.locator(".status[data-status=COMPLETED]").count() == 1
