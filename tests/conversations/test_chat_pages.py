"""The corpus chat pages: start a conversation, ask and get a cited answer, ask for research and
see the run's announcement arrive through the messages view the page polls; the same turn, rate
limit and codes as the API; shared corpora chat too; another user's conversation is a 404;
message content is rendered sanitized."""

import pytest
from django.test import Client
from django.urls import reverse

from conversations.models import ChatMessage, Conversation, MessageRole
from conversations.services import chat_message_append
from corpora.services import corpus_share
from research.engine.run import report_run
from research.models import ResearchReport
from tests.factories import ingest_samples


@pytest.fixture
def browser(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def chat_corpus(corpus):
    ingest_samples(corpus)
    return corpus


def send(client, corpus, text, conversation=None):
    url = (
        reverse("conversations:detail", args=[corpus.pk, conversation.pk])
        if conversation
        else reverse("conversations:home", args=[corpus.pk])
    )
    return client.post(url, {"content": text}, follow=True)


def test_a_question_starts_a_conversation_with_a_cited_answer(browser, chat_corpus):
    response = send(browser, chat_corpus, "What limits the liability of the supplier?")
    conversation = Conversation.objects.get()
    assert response.redirect_chain[-1][0] == f"/corpora/{chat_corpus.pk}/chat/{conversation.pk}/#composer"
    page = response.content.decode()
    assert [m.role for m in conversation.messages.all()] == [MessageRole.HUMAN, MessageRole.ASSISTANT]
    assert 'class="message human"' in page and 'class="message assistant"' in page
    assert "liab" in page.split('class="message assistant"', 1)[1].lower()
    home = browser.get(reverse("conversations:home", args=[chat_corpus.pk])).content.decode()
    assert f'href="/corpora/{chat_corpus.pk}/chat/{conversation.pk}/"' in home
    corpus_page = browser.get(reverse("corpora:detail", args=[chat_corpus.pk])).content.decode()
    assert f'href="/corpora/{chat_corpus.pk}/chat/"' in corpus_page


def test_a_research_request_links_its_report_and_the_poll_brings_the_announcement(browser, chat_corpus):
    send(browser, chat_corpus, "Please research the liability caps and termination rights")
    conversation = Conversation.objects.get()
    report = ResearchReport.objects.get(conversation=conversation)
    page = browser.get(
        reverse("conversations:detail", args=[chat_corpus.pk, conversation.pk])
    ).content.decode()
    assert f'href="/reports/{report.slug}/">Open the report' in page and 'data-researching="true"' in page
    url = reverse("conversations:messages", args=[chat_corpus.pk, conversation.pk])
    last = conversation.messages.order_by("pk").last().pk
    assert browser.get(url, {"after": last}).json() == {"messages": [], "researching": True}

    report_run(report_id=report.pk)

    polled = browser.get(url, {"after": last})
    data = polled.json()
    assert "no-store" in polled["Cache-Control"]
    assert data["researching"] is False
    [announcement] = data["messages"]
    assert announcement["role"] == "SYSTEM" and announcement["report_url"] == f"/reports/{report.slug}/"
    assert f'<a href="/reports/{report.slug}/"' in announcement["html"]


def test_bad_after_values_return_everything_from_the_start(browser, chat_corpus):
    send(browser, chat_corpus, "What limits the liability of the supplier?")
    conversation = Conversation.objects.get()
    url = reverse("conversations:messages", args=[chat_corpus.pk, conversation.pk])
    for after in ("x", "-1", "9" * 40, "\uff11"):
        assert len(browser.get(url, {"after": after}).json()["messages"]) == 2


def test_an_empty_or_overlong_message_is_said_with_its_code_and_stores_nothing(browser, chat_corpus):
    assert "message_invalid" in send(browser, chat_corpus, "   ").content.decode()
    assert "message_invalid" in send(browser, chat_corpus, "x" * 20_001).content.decode()
    assert not Conversation.objects.exists() and not ChatMessage.objects.exists()


def test_the_chat_rate_limit_applies(browser, chat_corpus, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "chat": "1/m"}
    send(browser, chat_corpus, "What limits the liability of the supplier?")
    conversation = Conversation.objects.get()
    page = send(browser, chat_corpus, "And the licence fee?", conversation).content.decode()
    assert "rate_limited" in page and conversation.messages.count() == 2


def test_a_shared_corpus_can_be_chatted_with_and_conversations_stay_their_owners(
    browser, user, other_user, chat_corpus
):
    send(browser, chat_corpus, "What limits the liability of the supplier?")
    alices = Conversation.objects.get()
    bob = Client()
    bob.force_login(other_user)
    assert bob.get(reverse("conversations:home", args=[chat_corpus.pk])).status_code == 404
    corpus_share(user=user, corpus=chat_corpus, username=other_user.username)
    assert bob.get(reverse("conversations:home", args=[chat_corpus.pk])).status_code == 200
    send(bob, chat_corpus, "When is the licence fee due?")
    assert Conversation.objects.filter(creator=other_user).count() == 1
    for name in ("conversations:detail", "conversations:messages"):
        assert bob.get(reverse(name, args=[chat_corpus.pk, alices.pk])).status_code == 404
    assert (
        bob.post(
            reverse("conversations:detail", args=[chat_corpus.pk, alices.pk]), {"content": "hi"}
        ).status_code
        == 404
    )
    assert alices.messages.count() == 2


def test_message_content_is_rendered_sanitized(browser, user, chat_corpus):
    send(browser, chat_corpus, "What limits the liability of the supplier?")
    conversation = Conversation.objects.get()
    chat_message_append(
        conversation=conversation,
        role=MessageRole.ASSISTANT,
        content="<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3)) **bold**",
    )
    page = browser.get(
        reverse("conversations:detail", args=[chat_corpus.pk, conversation.pk])
    ).content.decode()
    chat = page.split('id="chat"', 1)[1].split("</ol>", 1)[0]
    assert "<script" not in chat and "<img" not in chat and "javascript:" not in chat
    assert "&lt;script&gt;" in chat and "<strong>bold</strong>" in chat


def test_forms_need_the_csrf_token(user, chat_corpus):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert (
        client.post(reverse("conversations:home", args=[chat_corpus.pk]), {"content": "hi"}).status_code
        == 403
    )
    assert not Conversation.objects.exists()
