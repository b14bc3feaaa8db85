"""User B against user A's objects: nothing readable, nothing writable, and every answer exactly
the answer for an object that does not exist, so B cannot even learn that A's objects exist."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import ApiToken
from accounts.services import api_token_create
from conversations.models import ChatMessage, Conversation, MessageRole
from conversations.services import chat_message_append, conversation_create
from corpora.models import Document, Passage
from corpora.services import corpus_create
from notifications.models import Notification
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tests.api.conftest import GraphQL, gid, without_locations

MISSING = 10**9  # a primary key no object has

READS = {
    "researchReport": ("ResearchReport", "query($id: ID!) { researchReport(id: $id) { id status content } }"),
    "corpus": ("Corpus", "query($id: ID!) { corpus(id: $id) { id name } }"),
    "passage": ("Passage", "query($id: ID!) { passage(id: $id) { id text } }"),
    "conversation": ("Conversation", "query($id: ID!) { conversation(id: $id) { id messages { content } } }"),
}


@pytest.fixture
def a_objects(user, corpus, completed_report) -> dict[str, int]:
    """One object of each type, all user A's (A has a completed report, so a notification)."""
    conversation = conversation_create(creator=user, corpus=corpus, title="secret plans")
    message = chat_message_append(conversation=conversation, role=MessageRole.HUMAN, content="secret")
    return {
        "Corpus": corpus.pk,
        "Document": Document.objects.filter(corpus=corpus).first().pk,
        "Passage": Passage.objects.filter(corpus=corpus).first().pk,
        "ResearchReport": completed_report.pk,
        "Conversation": conversation.pk,
        "ChatMessage": message.pk,
        "Notification": Notification.objects.get(recipient=user).pk,
        "ApiToken": api_token_create(user=user, name="A's laptop").token.pk,
    }


@pytest.mark.parametrize("field", sorted(READS))
def test_b_reading_a_s_object_gets_what_a_missing_object_gets(other_gql, gql, a_objects, field):
    type_name, query = READS[field]
    # when
    theirs = other_gql(query, {"id": gid(type_name, a_objects[type_name])})
    missing = other_gql(query, {"id": gid(type_name, MISSING)})
    # then
    assert theirs == missing == (200, {"data": {field: None}})
    assert gql.data(query, {"id": gid(type_name, a_objects[type_name])})[field] is not None  # A can


def test_b_gets_null_from_node_for_every_type_of_a_s_objects(other_gql, gql, a_objects):
    query = "query($id: ID!) { node(id: $id) { id } }"
    for type_name, pk in a_objects.items():
        # when
        theirs = other_gql(query, {"id": gid(type_name, pk)})
        missing = other_gql(query, {"id": gid(type_name, MISSING)})
        # then
        assert theirs == missing == (200, {"data": {"node": None}}), type_name
        assert gql.data(query, {"id": gid(type_name, pk)}) == {"node": {"id": gid(type_name, pk)}}, type_name


def test_b_gets_null_by_slug_for_a_s_report(other_gql, a_objects, completed_report):
    query = "query($s: String!) { researchReportBySlug(slug: $s) { id } }"
    assert other_gql(query, {"s": completed_report.slug}) == other_gql(query, {"s": "no-such-slug"})
    assert other_gql(query, {"s": completed_report.slug}) == (200, {"data": {"researchReportBySlug": None}})


@pytest.mark.parametrize(
    ("field", "query"),
    [
        ("documents", "query($c: ID!) { documents(corpusId: $c) { edges { node { id title } } } }"),
        ("researchReports", "query($c: ID!) { researchReports(corpusId: $c) { edges { node { id } } } }"),
        ("conversations", "query($c: ID!) { conversations(corpusId: $c) { edges { node { id } } } }"),
    ],
)
def test_b_lists_nothing_in_a_s_corpus(other_gql, a_objects, field, query):
    theirs = other_gql(query, {"c": gid("Corpus", a_objects["Corpus"])})
    missing = other_gql(query, {"c": gid("Corpus", MISSING)})
    assert theirs == missing == (200, {"data": {field: {"edges": []}}})


def test_b_s_own_lists_hold_nothing_of_a_s(other_gql, a_objects):
    for field in ("corpora", "researchReports", "notifications", "conversations"):
        assert other_gql.data("{ %s { edges { node { id } } } }" % field) == {field: {"edges": []}}, field  # noqa: UP031


def test_b_cannot_cancel_a_s_report_and_learns_nothing(other_gql, user, corpus):
    # given a queued report of A's
    report = report_start(user=user, corpus=corpus, prompt="termination")
    query = (
        "mutation($id: ID!) { cancelResearchReport(id: $id) { errors { field message code } report { id } } }"
    )
    # when
    theirs = other_gql(query, {"id": gid("ResearchReport", report.pk)})
    missing = other_gql(query, {"id": gid("ResearchReport", MISSING)})
    # then
    expected = {
        "errors": [{"field": "id", "message": "report not found", "code": "report_not_found"}],
        "report": None,
    }
    assert theirs == missing == (200, {"data": {"cancelResearchReport": expected}})
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED


def test_b_cannot_start_research_on_a_s_corpus(other_gql, corpus):
    query = """mutation($c: ID!) { startResearchReport(corpusId: $c, prompt: "everything") {
        errors { field message code } report { id } } }"""
    # when
    _, theirs = other_gql(query, {"c": gid("Corpus", corpus.pk)})
    _, missing = other_gql(query, {"c": gid("Corpus", MISSING)})
    # then the answers are identical
    assert (
        theirs["data"]["startResearchReport"]
        == missing["data"]["startResearchReport"]
        == {
            "errors": [{"field": "corpusId", "message": "corpus not found", "code": "corpus_not_found"}],
            "report": None,
        }
    )
    assert ResearchReport.objects.count() == 0


SEND = """mutation($c: ID!, $conv: ID, $text: String!) {
    sendChatMessage(corpusId: $c, conversationId: $conv, content: $text) {
        errors { field message code } conversation { id } reply { content } } }"""


def test_b_cannot_post_into_a_s_conversation(other_gql, other_user, a_objects):
    # given B's own corpus
    own = corpus_create(creator=other_user, name="B's corpus")
    before = (Conversation.objects.count(), ChatMessage.objects.count())
    # when B names A's conversation on B's own corpus, or on A's corpus
    theirs = other_gql(
        SEND,
        {"c": gid("Corpus", own.pk), "conv": gid("Conversation", a_objects["Conversation"]), "text": "hi"},
    )
    missing = other_gql(
        SEND, {"c": gid("Corpus", own.pk), "conv": gid("Conversation", MISSING), "text": "hi"}
    )
    on_a_corpus = other_gql(
        SEND,
        {
            "c": gid("Corpus", a_objects["Corpus"]),
            "conv": gid("Conversation", a_objects["Conversation"]),
            "text": "hi",
        },
    )
    # then
    not_found = {
        "errors": [
            {"field": "conversationId", "message": "conversation not found", "code": "conversation_not_found"}
        ],
        "conversation": None,
        "reply": None,
    }
    assert theirs == missing == (200, {"data": {"sendChatMessage": not_found}})
    assert on_a_corpus == (
        200,
        {
            "data": {
                "sendChatMessage": {
                    "errors": [
                        {
                            "field": "corpusId",
                            "message": "corpus not found",
                            "code": "corpus_not_found",
                        }
                    ],
                    "conversation": None,
                    "reply": None,
                }
            }
        },
    )
    assert (Conversation.objects.count(), ChatMessage.objects.count()) == before


def test_b_cannot_mark_a_s_notifications_read(other_gql, a_objects):
    query = "mutation($ids: [ID!]) { markNotificationsRead(ids: $ids) { errors { code } marked } }"
    theirs = other_gql(query, {"ids": [gid("Notification", a_objects["Notification"])]})
    everything = other_gql(query, {})
    assert theirs == everything == (200, {"data": {"markNotificationsRead": {"errors": [], "marked": 0}}})
    assert Notification.objects.get(pk=a_objects["Notification"]).read_at is None


def test_b_cannot_revoke_a_s_token(other_gql, a_objects):
    query = "mutation($id: ID!) { revokeApiToken(id: $id) { errors { field message code } token { id } } }"
    theirs = other_gql(query, {"id": gid("ApiToken", a_objects["ApiToken"])})
    missing = other_gql(query, {"id": gid("ApiToken", MISSING)})
    expected = {
        "errors": [{"field": "id", "message": "token not found", "code": "token_not_found"}],
        "token": None,
    }
    assert theirs == missing == (200, {"data": {"revokeApiToken": expected}})
    assert ApiToken.objects.get(pk=a_objects["ApiToken"]).revoked_at is None


def test_malformed_ids_get_the_same_answer_for_everyone(gql, other_gql, a_objects):
    query = "query($id: ID!) { researchReport(id: $id) { id } }"
    assert without_locations(gql(query, {"id": "junk"})) == without_locations(
        other_gql(query, {"id": "junk"})
    )


def test_a_superuser_reads_no_one_elses_report_through_the_api_or_the_page(a_objects, completed_report):
    admin = get_user_model().objects.create_superuser(username="root", password="pw-root-123")
    admin_gql = GraphQL(Client(), token=api_token_create(user=admin, name="ops").secret)
    report_id = gid("ResearchReport", completed_report.pk)
    assert admin_gql.data(READS["researchReport"][1], {"id": report_id}) == {"researchReport": None}
    listed = admin_gql.data("{ researchReports { edges { node { id } } } }")
    assert listed == {"researchReports": {"edges": []}}
    client = Client()
    client.force_login(admin)
    assert client.get(f"/reports/{completed_report.slug}/").status_code == 404
