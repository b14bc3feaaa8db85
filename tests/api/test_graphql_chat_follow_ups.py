"""Follow-ups in a chat with the offline mind: "And for Globex?" asks the question before of
Globex, "What about confidentiality?" asks it of the same agreement, and the reply says what it
searched for; a question of its own, a first message and a research request are taken as typed."""

import re

import pytest

from conversations.models import Conversation, MessageRole
from conversations.services import chat_message_append
from corpora.models import Passage
from research.models import ResearchReport
from tests.api.test_graphql_chat import send
from tests.factories import ingest_text

ACME = """# Acme Services Agreement

This Services Agreement is made between Acme Corporation ("Acme") and Northwind Ltd ("Customer").

## 1. Termination

Acme or the Customer may terminate this Agreement for convenience by giving the other party ninety
(90) days' prior written notice.

## 2. Confidentiality

Acme shall maintain the confidentiality of the Customer's Confidential Information and shall not
disclose it to any third party, except to its employees and subcontractors bound by written
obligations of confidentiality.

## 3. Governing Law

This Agreement is governed by the laws of the State of New York.
"""

GLOBEX = """# Globex Supply Agreement

This Supply Agreement is made between Globex Inc. ("Globex") and Northwind Ltd ("Customer").

## 1. Supply

Globex shall supply the Products ordered by the Customer, and Globex shall deliver them to the
Customer's site named in each order placed with Globex.

## 2. Confidentiality

Globex shall maintain the confidentiality of the Customer's Confidential Information for five (5)
years after its disclosure.

## 3. Termination

Globex or the Customer may terminate this Agreement for convenience upon thirty (30) days' written
notice to the other party.

## 4. Governing Law

This Agreement is governed by the laws of the State of Delaware.
"""
ACME_QUESTION = "What is the notice period for terminating the Acme agreement?"
ACME_NOTICE = "Acme or the Customer may terminate this Agreement for convenience by giving the other party"
GLOBEX_NOTICE = "Globex or the Customer may terminate this Agreement for convenience upon thirty (30) days'"
ACME_CONFIDENTIALITY = "Acme shall maintain the confidentiality of the Customer's Confidential Information"
GLOBEX_CONFIDENTIALITY = (
    "Globex shall maintain the confidentiality of the Customer's Confidential Information"
)


@pytest.fixture
def agreements(corpus) -> dict[str, int]:
    return {
        "Acme": ingest_text(corpus, "acme-agreement.md", ACME).document.pk,
        "Globex": ingest_text(corpus, "globex-agreement.md", GLOBEX).document.pk,
    }


def conversation_of(gql, corpus, *texts: str) -> list[str]:
    """The replies to `texts`, sent one after another in one new conversation."""
    replies, conversation = [], None
    for text in texts:
        payload = send(gql, corpus, text, conversation)
        assert payload["errors"] == []
        conversation = payload["conversation"]["id"]
        replies.append(payload["reply"]["content"])
    return replies


def answered(reply: str) -> list[str]:
    """The quoted sentences of an answer, in order."""
    return re.findall(r"^- (.+) \[\d+\]$", reply, re.MULTILINE)


def cited_document(reply: str, n: int) -> int:
    passage = re.search(rf"^\[{n}\] \[[^\]]+\]\(/corpora/passages/(\d+)/\)$", reply, re.MULTILINE)
    assert passage, reply
    return Passage.objects.get(pk=int(passage.group(1))).document_id


def test_and_for_another_party_asks_the_question_before_of_that_party(gql, corpus, agreements):
    # when the user asks of Acme, then "And for Globex?"
    first, follow_up = conversation_of(gql, corpus, ACME_QUESTION, "And for Globex?")
    # then the first is answered with Acme's notice period, the follow-up with Globex's, cited
    assert answered(first)[0].startswith(ACME_NOTICE)
    assert follow_up.startswith(
        "Searching for: What is the notice period for terminating the Globex agreement?\n\n"
        "From the corpus:\n\n- " + GLOBEX_NOTICE
    )
    assert cited_document(follow_up, 1) == agreements["Globex"]


def test_what_about_another_aspect_asks_it_of_the_same_agreement(gql, corpus, agreements):
    # when the user asks of Globex's notice period, then "What about confidentiality?"
    question = "What is the notice period for terminating the Globex agreement?"
    _, follow_up = conversation_of(gql, corpus, question, "What about confidentiality?")
    # then Globex's confidentiality clause answers, not Acme's (which the words alone find first)
    assert follow_up.startswith("Searching for: confidentiality in the Globex agreement\n\n")
    assert answered(follow_up)[0].startswith(GLOBEX_CONFIDENTIALITY)
    assert cited_document(follow_up, 1) == agreements["Globex"]


def test_follow_ups_follow_the_subject_as_it_changes(gql, corpus, agreements):
    # when the user moves to Globex, then asks another aspect, then another, with a pronoun
    replies = conversation_of(
        gql,
        corpus,
        ACME_QUESTION,
        "And for Globex?",
        "What about confidentiality?",
        "Does it also cover subcontractors?",
        "and how much notice?",
    )
    # then each is read of Globex, the subject the one before it was read with
    assert [r.split("\n\n", 1)[0] for r in replies[1:]] == [
        "Searching for: What is the notice period for terminating the Globex agreement?",
        "Searching for: confidentiality in the Globex agreement",
        "Searching for: Does it also cover subcontractors in the Globex agreement?",
        "Searching for: How much notice in the Globex agreement?",
    ]
    assert answered(replies[2])[0].startswith(GLOBEX_CONFIDENTIALITY)
    assert answered(replies[4])[0].startswith(GLOBEX_NOTICE)


def test_a_question_of_its_own_is_searched_as_typed_and_its_subject_followed(gql, corpus, agreements):
    # given the answer to a question about Globex asked first in a conversation
    standalone = "What is the governing law of the Globex agreement?"
    [alone] = conversation_of(gql, corpus, standalone)
    # when the same question is asked second, after a question about Acme, then followed up
    _, second, follow_up = conversation_of(
        gql, corpus, ACME_QUESTION, standalone, "What about confidentiality?"
    )
    # then the second is answered exactly as when asked alone, and the follow-up is of Globex
    assert second == alone and not second.startswith("Searching for")
    assert "State of Delaware" in answered(second)[0]
    assert follow_up.startswith("Searching for: confidentiality in the Globex agreement\n\n")
    assert answered(follow_up)[0].startswith(GLOBEX_CONFIDENTIALITY)


def test_a_follow_up_opening_a_conversation_is_searched_as_typed(gql, corpus, agreements):
    # when a conversation opens with a follow-up, and a second follow-up comes after it
    first, second = conversation_of(gql, corpus, "And for Globex?", "What about confidentiality?")
    # then the first is searched as typed (no question before it), the second of Globex
    assert first.startswith("From the corpus:\n\n- ") and not answered(first)[0].startswith(GLOBEX_NOTICE)
    assert second.startswith("Searching for: confidentiality in Globex\n\n")
    assert answered(second)[0].startswith(GLOBEX_CONFIDENTIALITY)


def test_a_notice_is_not_the_question_before_and_a_research_request_stays_as_typed(gql, corpus, agreements):
    # given a question about Acme, then a Deepcite notice in the conversation
    payload = send(gql, corpus, ACME_QUESTION)
    conversation = Conversation.objects.get()
    chat_message_append(
        conversation=conversation, role=MessageRole.SYSTEM, content="What is the governing law of Initech?"
    )
    # when the user follows up, then asks for research
    follow_up = send(gql, corpus, "And for Globex?", payload["conversation"]["id"])
    research = send(gql, corpus, "please research it for Globex", payload["conversation"]["id"])
    # then the follow-up is read of the user's question, and the research request is the prompt as typed
    assert follow_up["reply"]["content"].startswith(
        "Searching for: What is the notice period for terminating the Globex agreement?\n\n"
    )
    assert research["report"] is not None
    assert ResearchReport.objects.get().prompt == "please research it for Globex"


def test_a_question_naming_an_agreement_is_answered_from_that_agreement_alone(gql, corpus, agreements):
    # when a question names one agreement ("the Globex agreement") of a corpus where another
    # has a clause of the same words
    [reply] = conversation_of(gql, corpus, "What is the notice period for terminating the Globex agreement?")
    # then every passage quoted is Globex's: the search was of the document the name names
    quoted = answered(reply)
    assert quoted and quoted[0].startswith(GLOBEX_NOTICE)
    assert {cited_document(reply, n) for n in range(1, len(quoted) + 1)} == {agreements["Globex"]}
    assert ACME_NOTICE not in reply
