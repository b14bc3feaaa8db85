"""Every GraphQL query through the real schema and database: results, error codes, paging,
anonymous access, token and session authentication, and the depth and size limits."""

import json

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.services import api_token_create, api_token_revoke
from conversations.models import MessageRole
from conversations.services import chat_message_append, conversation_create
from corpora.models import Document, Passage
from corpora.services import corpus_create
from notifications.models import Notification
from notifications.services import notifications_mark_read
from research.constants import DEPTH_PRESETS
from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tests.api.conftest import GraphQL, gid, without_locations
from tests.factories import ingest_agreements

REPORT_FIELDS = """
    id title slug prompt status depth url content error warnings modelUsage toolCallLog durationSeconds
    retryCount cancelRequested startedAt completedAt
    strategy breadth timeLimitSeconds plan
    progress {
        stepCount toolCallCount findingsCount sourcesCount maxSteps lastProgressAt
        phase level levels documentsSwept documentsTotal documentsReread direction modelRequests
    }
    citations {
        footnote passageId documentId documentTitle sourceName page passageNumber quote start end
        passage { id text start end ordinal document { title } }
    }
    findings { findingId claim quote passageId documentId section position origin }
    corpus { id name }
"""
REPORT_BY_ID = "query($id: ID!) { researchReport(id: $id) { " + REPORT_FIELDS + " } }"
CORPUS = "query($id: ID!) { corpus(id: $id) { id name documentCount passageCount } }"
DOCUMENTS = "query($c: ID!) { documents(corpusId: $c) { edges { node { id title sourceName fileType } } } }"
PASSAGE = "query($id: ID!) { passage(id: $id) { id text ordinal headingPath document { title } } }"
NODE = "query($id: ID!) { node(id: $id) { __typename id } }"
CONNECTIONS = {
    "corpora": "corpora(first: $n)",
    "documents": "documents(corpusId: $c, first: $n)",
    "researchReports": "researchReports(corpusId: $c, first: $n)",
    "notifications": "notifications(first: $n)",
    "conversations": "conversations(corpusId: $c, first: $n)",
}


def invalid_id(field: str, message: str, path: str) -> dict:
    return {
        "errors": [
            {
                "message": message,
                "path": [path],
                "extensions": {"code": "invalid_id", "field": field},
            }
        ],
        "data": {path: None},
    }


# --- corpora, corpus, documents, passage ----------------------------------------------------
def test_corpora_lists_the_users_corpora_with_their_counts(gql, user, corpus, samples):
    # given a second corpus of the user's and one of someone else's
    corpus_create(creator=user, name="Archive")
    corpus_create(creator=get_user_model().objects.create_user(username="carol"), name="Hidden")
    # when
    data = gql.data("{ corpora { edges { node { id name documentCount passageCount } } } }")
    # then
    assert data["corpora"]["edges"] == [
        {
            "node": {
                "id": data["corpora"]["edges"][0]["node"]["id"],
                "name": "Archive",
                "documentCount": 0,
                "passageCount": 0,
            }
        },
        {
            "node": {
                "id": gid("Corpus", corpus.pk),
                "name": "Contracts",
                "documentCount": 2,
                "passageCount": Passage.objects.filter(corpus=corpus).count(),
            }
        },
    ]


def test_corpora_pages_with_first_and_after(gql, user):
    # given three corpora
    for name in ("A", "B", "C"):
        corpus_create(creator=user, name=name)
    query = """query($a: String) {
        corpora(first: 2, after: $a) { edges { node { name } } pageInfo { hasNextPage endCursor } } }"""
    # when
    first = gql.data(query)["corpora"]
    second = gql.data(query, {"a": first["pageInfo"]["endCursor"]})["corpora"]
    # then
    assert [e["node"]["name"] for e in first["edges"]] == ["A", "B"]
    assert first["pageInfo"]["hasNextPage"] is True
    assert [e["node"]["name"] for e in second["edges"]] == ["C"]
    assert second["pageInfo"]["hasNextPage"] is False


def test_corpus_by_id(gql, corpus, samples):
    # when
    data = gql.data(CORPUS, {"id": gid("Corpus", corpus.pk)})
    # then
    assert data == {
        "corpus": {
            "id": gid("Corpus", corpus.pk),
            "name": "Contracts",
            "documentCount": 2,
            "passageCount": Passage.objects.filter(corpus=corpus).count(),
        }
    }


def test_a_missing_corpus_is_null(gql, corpus):
    assert gql(CORPUS, {"id": gid("Corpus", corpus.pk + 1000)}) == (200, {"data": {"corpus": None}})


@pytest.mark.parametrize(
    "bad_id",
    ["abc", "", "Q29ycHVzOmFiYw==", gid("Corpus", 0), gid("Corpus", -3), gid("Corpus", 2**70), "x" * 201],
    ids=["garbage", "empty", "non-numeric", "zero", "negative", "huge", "too-long"],
)
def test_a_malformed_corpus_id_is_invalid_id(gql, corpus, bad_id):
    assert without_locations(gql(CORPUS, {"id": bad_id})) == (
        200,
        invalid_id("id", "not a valid Corpus id", "corpus"),
    )


def test_an_id_of_another_type_is_invalid_id(gql, corpus, samples):
    # given the id of an existing document, not a corpus
    document_id = gid("Document", samples[0].pk)
    # then
    assert without_locations(gql(CORPUS, {"id": document_id})) == (
        200,
        invalid_id("id", "not a valid Corpus id", "corpus"),
    )
    assert without_locations(gql(DOCUMENTS, {"c": document_id})) == (
        200,
        invalid_id("corpusId", "not a valid Corpus id", "documents"),
    )


def test_documents_of_a_corpus_by_title(gql, corpus, samples):
    # when
    data = gql.data(DOCUMENTS, {"c": gid("Corpus", corpus.pk)})
    # then
    acme, initech = samples
    assert data["documents"]["edges"] == [
        {
            "node": {
                "id": gid("Document", acme.pk),
                "title": acme.title,
                "sourceName": "acme-supply.md",
                "fileType": acme.file_type,
            }
        },
        {
            "node": {
                "id": gid("Document", initech.pk),
                "title": initech.title,
                "sourceName": "initech-license.txt",
                "fileType": initech.file_type,
            }
        },
    ]
    assert acme.title < initech.title


def test_documents_of_a_missing_corpus_is_empty(gql, corpus, samples):
    assert gql(DOCUMENTS, {"c": gid("Corpus", corpus.pk + 1000)}) == (
        200,
        {"data": {"documents": {"edges": []}}},
    )


def test_passage_by_id(gql, samples):
    # given
    passage = Passage.objects.filter(document=samples[1]).order_by("ordinal").first()
    # when
    data = gql.data(PASSAGE, {"id": gid("Passage", passage.pk)})
    # then
    assert data == {
        "passage": {
            "id": gid("Passage", passage.pk),
            "text": passage.text,
            "ordinal": passage.ordinal,
            "headingPath": list(passage.heading_path or []),
            "document": {"title": samples[1].title},
        }
    }


def test_passage_missing_or_of_another_type(gql, samples):
    missing = Passage.objects.order_by("-pk").first().pk + 1000
    assert gql(PASSAGE, {"id": gid("Passage", missing)}) == (200, {"data": {"passage": None}})
    assert without_locations(gql(PASSAGE, {"id": gid("Document", samples[0].pk)})) == (
        200,
        invalid_id("id", "not a valid Passage id", "passage"),
    )


# --- research reports -----------------------------------------------------------------------
def test_a_completed_report_exposes_status_progress_content_citations_and_run_record(gql, completed_report):
    # given
    report = ResearchReport.objects.get(pk=completed_report.pk)
    # when
    data = gql.data(REPORT_BY_ID, {"id": gid("ResearchReport", report.pk)})["researchReport"]
    # then
    assert data["status"] == "COMPLETED"
    assert data["depth"] == "STANDARD"
    assert data["url"] == f"/reports/{report.slug}/"
    assert data["content"] == report.content and "## Summary" in data["content"]
    assert data["strategy"] == "DEEP" and data["breadth"] == 5
    assert data["plan"] == report.plan and len(data["plan"]) == 2
    assert data["progress"] == {
        "stepCount": report.step_count,
        "toolCallCount": report.tool_call_count,
        "findingsCount": len(report.findings),
        "sourcesCount": len(report.citations),
        "maxSteps": DEPTH_PRESETS["standard"].max_steps,
        "lastProgressAt": report.last_progress_at.isoformat(),
        "phase": "completed",
        "level": report.progress.get("level"),
        "levels": report.progress.get("levels"),
        "documentsSwept": None,
        "documentsTotal": None,
        "documentsReread": None,
        "direction": report.progress.get("direction"),
        "modelRequests": report.model_usage["requests"],
    }
    assert data["progress"]["stepCount"] > 0 and data["progress"]["findingsCount"] >= 2
    assert len(data["citations"]) == len(report.citations) > 0
    for citation, stored in zip(data["citations"], report.citations, strict=True):
        passage = Passage.objects.select_related("document").get(pk=stored["passage_id"])
        assert citation["passage"] == {
            "id": gid("Passage", passage.pk),
            "text": passage.text,
            "start": passage.start,
            "end": passage.end,
            "ordinal": passage.ordinal,
            "document": {"title": passage.document.title},
        }
        assert citation["passageNumber"] == passage.ordinal + 1
        assert citation["passageId"] == gid("Passage", passage.pk)
        assert citation["documentId"] == gid("Document", passage.document_id)
        assert citation["quote"] == stored["quote"]
        assert (
            passage.text[citation["start"] - passage.start : citation["end"] - passage.start]
            == citation["quote"]
        )
    assert data["warnings"] == report.warnings
    assert data["modelUsage"] == report.model_usage and data["modelUsage"]["engine"] == "offline-extractive"
    assert data["toolCallLog"] == report.tool_call_log and data["toolCallLog"][0]["tool"] == "search_passages"
    assert data["durationSeconds"] == round((report.completed_at - report.started_at).total_seconds(), 3)
    assert [f["claim"] for f in data["findings"]] == [f["claim"] for f in report.findings]
    assert [f["findingId"] for f in data["findings"]] == list(range(1, len(report.findings) + 1))
    assert {f["origin"] for f in data["findings"]} <= {"researcher", "follow-up", "gap"}
    assert data["corpus"] == {"id": gid("Corpus", report.corpus_id), "name": "Contracts"}


ANSWERS = """query($id: ID!) { researchReport(id: $id) { citations { footnote documentId }
    answers { index question asked swept documentsExamined
              documents { documentId title addresses position quote footnotes } }
    conjunctions { question of documents { documentId title addresses } } } }"""


def test_a_swept_report_answers_each_question_per_document(gql, user, corpus):
    # given a question asked in the negative, swept over five agreements of which two insure
    documents = ingest_agreements(corpus, 5, insured=2)
    report = report_start(user=user, corpus=corpus, prompt="Which agreements do not require insurance?")
    report_run(report_id=report.pk)
    # when
    data = gql.data(ANSWERS, {"id": gid("ResearchReport", report.pk)})["researchReport"]
    # then
    [answer] = data["answers"]
    assert answer["asked"] == "Which agreements do not require insurance?"
    assert answer["question"] == "Which agreements require insurance?"
    assert (answer["swept"], answer["documentsExamined"]) == (True, 5)
    assert [(d["documentId"], d["title"], d["addresses"]) for d in answer["documents"]] == [
        (gid("Document", pk), f"agreement-{i:02d}", i < 2) for i, pk in enumerate(documents)
    ]
    cited = {c["footnote"]: c["documentId"] for c in data["citations"]}
    for document in answer["documents"][:2]:
        assert document["quote"].startswith("The Supplier shall maintain")
        assert [cited[n] for n in document["footnotes"]] == [document["documentId"]]
    assert all(d["quote"] is None and d["footnotes"] == [] for d in answer["documents"][2:])
    assert data["conjunctions"] == []


def test_a_question_about_two_clauses_has_the_documents_answering_both(gql, user, corpus):
    # given five agreements, two of which insure; asked which insure and which of them are governed
    # by a state's law (all are)
    documents = ingest_agreements(corpus, 5, insured=2)
    prompt = "Which agreements have both an insurance requirement and a governing law?"
    report = report_start(user=user, corpus=corpus, prompt=prompt)
    report_run(report_id=report.pk)
    # when
    data = gql.data(ANSWERS, {"id": gid("ResearchReport", report.pk)})["researchReport"]
    # then
    [both] = data["conjunctions"]
    assert (both["question"], both["of"]) == (prompt, [0, 1])
    assert [d["documentId"] for d in both["documents"]] == [gid("Document", pk) for pk in documents[:2]]
    assert [a["index"] for a in data["answers"]] == [0, 1]
    # and selecting the conjunctions beside the answers reads the report's answers once
    selection = "conjunctions { question of documents { documentId title addresses } } "
    answers_only = ANSWERS.replace(selection, "")
    with CaptureQueriesContext(connection) as alone:
        gql.data(answers_only, {"id": gid("ResearchReport", report.pk)})
    with CaptureQueriesContext(connection) as together:
        gql.data(ANSWERS, {"id": gid("ResearchReport", report.pk)})
    assert answers_only != ANSWERS and len(together) == len(alone)


def test_a_queued_report_has_no_duration_content_or_citations(gql, user, corpus):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination", depth="shallow", max_steps=7)
    # when
    data = gql.data(REPORT_BY_ID, {"id": gid("ResearchReport", report.pk)})["researchReport"]
    # then
    assert (data["status"], data["depth"], data["content"], data["citations"], data["durationSeconds"]) == (
        "QUEUED",
        "SHALLOW",
        "",
        [],
        None,
    )
    assert data["progress"] == {
        "stepCount": 0,
        "toolCallCount": 0,
        "findingsCount": 0,
        "sourcesCount": 0,
        "maxSteps": 7,
        "lastProgressAt": None,
        "phase": None,
        "level": None,
        "levels": None,
        "documentsSwept": None,
        "documentsTotal": None,
        "documentsReread": None,
        "direction": None,
        "modelRequests": None,
    }
    assert (data["strategy"], data["plan"]) == (None, [])


def test_report_missing_or_malformed_id(gql, user, corpus):
    report = report_start(user=user, corpus=corpus, prompt="termination")
    assert gql(REPORT_BY_ID, {"id": gid("ResearchReport", report.pk + 1000)}) == (
        200,
        {"data": {"researchReport": None}},
    )
    assert without_locations(gql(REPORT_BY_ID, {"id": gid("Corpus", corpus.pk)})) == (
        200,
        invalid_id("id", "not a valid ResearchReport id", "researchReport"),
    )


def test_report_by_slug(gql, user, corpus):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination")
    query = "query($s: String!) { researchReportBySlug(slug: $s) { id slug } }"
    # then
    assert gql.data(query, {"s": report.slug}) == {
        "researchReportBySlug": {"id": gid("ResearchReport", report.pk), "slug": report.slug}
    }
    assert gql(query, {"s": "no-such-report"}) == (200, {"data": {"researchReportBySlug": None}})
    assert gql(query, {"s": report.slug + "x" * 5000}) == (200, {"data": {"researchReportBySlug": None}})


def test_report_list_filters_by_corpus_and_status_enum(gql, user, corpus, completed_report):
    # given a completed report on one corpus and a queued one on another
    archive = corpus_create(creator=user, name="Archive")
    queued = report_start(user=user, corpus=archive, prompt="anything")
    query = """query($c: ID, $s: ResearchReportStatus) {
        researchReports(corpusId: $c, status: $s) { edges { node { id status } } } }"""

    def ids(variables: dict) -> list[tuple[str, str]]:
        edges = gql.data(query, variables)["researchReports"]["edges"]
        return [(e["node"]["id"], e["node"]["status"]) for e in edges]

    done = (gid("ResearchReport", completed_report.pk), "COMPLETED")
    waiting = (gid("ResearchReport", queued.pk), "QUEUED")
    # then
    assert ids({}) == [waiting, done]
    assert ids({"c": gid("Corpus", corpus.pk)}) == [done]
    assert ids({"s": "QUEUED"}) == [waiting]
    assert ids({"s": "COMPLETED", "c": gid("Corpus", archive.pk)}) == []
    assert ids({"s": "CANCELLED"}) == []


def test_an_unknown_status_enum_value_is_a_400(gql, completed_report):
    # when the value is inline or a variable
    inline = gql("{ researchReports(status: DONE) { edges { node { id } } } }")
    variable = gql(
        "query($s: ResearchReportStatus) { researchReports(status: $s) { edges { node { id } } } }",
        {"s": "completed"},
    )
    # then
    assert inline == (
        400,
        {
            "errors": [
                {
                    "message": "Value 'DONE' does not exist in 'ResearchReportStatus' enum.",
                    "locations": [{"line": 1, "column": 27}],
                    "extensions": {"code": "invalid_query"},
                }
            ]
        },
    )
    assert variable == (
        400,
        {
            "errors": [
                {
                    "message": "Variable '$s' got invalid value 'completed'; Value 'completed' does not "
                    "exist in 'ResearchReportStatus' enum. Did you mean the enum value 'COMPLETED'?",
                    "locations": [{"line": 1, "column": 7}],
                    "extensions": {"code": "invalid_query"},
                }
            ]
        },
    )


# --- paging limits ---------------------------------------------------------------------------
@pytest.mark.parametrize("connection", sorted(CONNECTIONS))
@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"n": 101}, "first", "first must be between 0 and 100"),
        ({"n": -1}, "first", "first must be between 0 and 100"),
    ],
)
def test_a_page_over_100_or_negative_is_a_clear_error(gql, corpus, connection, arguments, field, message):
    # when
    variables = "$n: Int, $c: ID!" if "$c" in CONNECTIONS[connection] else "$n: Int"
    query = "query(" + variables + ") { " + CONNECTIONS[connection] + " { edges { node { id } } } }"
    status, body = gql(query, {**arguments, "c": gid("Corpus", corpus.pk)})
    # then
    assert status == 200
    assert body["data"] == {connection: None}
    assert [(e["message"], e["extensions"]) for e in body["errors"]] == [
        (message, {"code": "pagination_invalid", "field": field})
    ]


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ("last: 101", "last", "last must be between 0 and 100"),
        ("offset: -5", "offset", "offset must not be negative"),
        (
            'offset: 1, before: "YXJyYXljb25uZWN0aW9uOjA="',
            "offset",
            "offset and before cannot be used together",
        ),
        ('after: "garbage"', "after", "after is not a cursor from this connection"),
        ('after: "YXJyYXljb25uZWN0aW9uOi05"', "after", "after is not a cursor from this connection"),
        ('before: "YXJyYXljb25uZWN0aW9uOi05"', "before", "before is not a cursor from this connection"),
    ],
    ids=[
        "last-101",
        "negative-offset",
        "offset-and-before",
        "junk-cursor",
        "negative-after",
        "negative-before",
    ],
)
def test_bad_paging_arguments_are_clear_errors(gql, corpus, arguments, field, message):
    status, body = gql("{ corpora(" + arguments + ") { edges { node { id } } } }")
    assert (status, body["data"]) == (200, {"corpora": None})
    assert [(e["message"], e["extensions"]) for e in body["errors"]] == [
        (message, {"code": "pagination_invalid", "field": field})
    ]


def test_first_over_the_int_range_is_a_400(gql, corpus):
    status, body = gql("query($n: Int) { corpora(first: $n) { edges { node { id } } } }", {"n": 2**70})
    assert status == 400
    assert body["errors"][0]["message"].startswith(
        "Variable '$n' got invalid value 1180591620717411303424; Int cannot"
    )


def test_exactly_100_is_allowed(gql, corpus):
    assert gql.data("{ corpora(first: 100) { edges { node { name } } } }") == {
        "corpora": {"edges": [{"node": {"name": "Contracts"}}]}
    }


# --- notifications ---------------------------------------------------------------------------
def test_notifications_and_unread_only(gql, user, completed_report):
    # given the completion notification, then a second report's, read
    notification = Notification.objects.get(recipient=user)
    query = "query($u: Boolean) { notifications(unreadOnly: $u) { edges { node { id kind isRead data } } } }"
    # when
    unread = gql.data(query, {"u": True})["notifications"]["edges"]
    notifications_mark_read(user=user)
    unread_after = gql.data(query, {"u": True})["notifications"]["edges"]
    everything = gql.data(query)["notifications"]["edges"]
    # then
    assert unread == [
        {
            "node": {
                "id": gid("Notification", notification.pk),
                "kind": "RESEARCH_REPORT_COMPLETED",
                "isRead": False,
                "data": notification.data,
            }
        }
    ]
    assert unread_after == []
    assert [(e["node"]["id"], e["node"]["isRead"]) for e in everything] == [
        (gid("Notification", notification.pk), True)
    ]


# --- conversations ---------------------------------------------------------------------------
def test_conversation_and_its_messages(gql, user, corpus):
    # given
    conversation = conversation_create(creator=user, corpus=corpus, title="Liability")
    chat_message_append(conversation=conversation, role=MessageRole.HUMAN, content="Who is liable?")
    chat_message_append(conversation=conversation, role=MessageRole.ASSISTANT, content="The Supplier.")
    query = """query($id: ID!, $last: Int) { conversation(id: $id) {
        id title corpus { name } messages(last: $last) { role content } } }"""
    # when
    everything = gql.data(query, {"id": gid("Conversation", conversation.pk)})
    last_one = gql.data(query, {"id": gid("Conversation", conversation.pk), "last": 1})
    # then
    assert everything == {
        "conversation": {
            "id": gid("Conversation", conversation.pk),
            "title": "Liability",
            "corpus": {"name": "Contracts"},
            "messages": [
                {"role": "HUMAN", "content": "Who is liable?"},
                {"role": "ASSISTANT", "content": "The Supplier."},
            ],
        }
    }
    assert last_one["conversation"]["messages"] == [{"role": "ASSISTANT", "content": "The Supplier."}]


def test_conversation_missing_or_malformed(gql, user, corpus):
    conversation = conversation_create(creator=user, corpus=corpus)
    query = "query($id: ID!) { conversation(id: $id) { id } }"
    assert gql(query, {"id": gid("Conversation", conversation.pk + 1000)}) == (
        200,
        {"data": {"conversation": None}},
    )
    assert without_locations(gql(query, {"id": "not-an-id"})) == (
        200,
        invalid_id("id", "not a valid Conversation id", "conversation"),
    )


def test_conversations_filtered_by_corpus_newest_first(gql, user, corpus):
    # given
    archive = corpus_create(creator=user, name="Archive")
    older = conversation_create(creator=user, corpus=corpus, title="older")
    newer = conversation_create(creator=user, corpus=corpus, title="newer")
    elsewhere = conversation_create(creator=user, corpus=archive, title="elsewhere")
    chat_message_append(conversation=newer, role=MessageRole.HUMAN, content="bump")
    query = "query($c: ID) { conversations(corpusId: $c) { edges { node { title } } } }"

    def titles(variables: dict) -> list[str]:
        return [e["node"]["title"] for e in gql.data(query, variables)["conversations"]["edges"]]

    # then
    assert titles({"c": gid("Corpus", corpus.pk)}) == ["newer", "older"]
    assert set(titles({})) == {older.title, newer.title, elsewhere.title}
    assert titles({"c": gid("Corpus", corpus.pk + 1000)}) == []


# --- node ------------------------------------------------------------------------------------
def test_node_resolves_every_node_type_of_the_user(gql, user, corpus, completed_report):
    # given one object of each type
    conversation = conversation_create(creator=user, corpus=corpus)
    message = chat_message_append(conversation=conversation, role=MessageRole.HUMAN, content="hello")
    objects = {
        "Corpus": corpus.pk,
        "Document": Document.objects.filter(corpus=corpus).first().pk,
        "Passage": Passage.objects.filter(corpus=corpus).first().pk,
        "ResearchReport": completed_report.pk,
        "Conversation": conversation.pk,
        "ChatMessage": message.pk,
        "Notification": Notification.objects.get(recipient=user).pk,
        "ApiToken": api_token_create(user=user, name="node").token.pk,
    }
    for type_name, pk in objects.items():
        # then
        assert gql.data(NODE, {"id": gid(type_name, pk)}) == {
            "node": {"__typename": type_name, "id": gid(type_name, pk)}
        }, type_name
        assert gql.data(NODE, {"id": gid(type_name, pk + 1000)}) == {"node": None}, type_name


@pytest.mark.parametrize(
    "bad_id",
    [
        "garbage",
        "Q29ycHVzOmFiYw==",
        gid("Foo", 1),
        gid("Query", 1),
        gid("String", 1),
        gid("__Schema", 1),
        gid("", 1),
    ],
    ids=["garbage", "non-numeric", "unknown-type", "query-type", "scalar", "introspection", "no-type"],
)
def test_node_with_a_malformed_or_unknown_id_is_invalid_id(gql, corpus, bad_id):
    assert without_locations(gql(NODE, {"id": bad_id})) == (200, invalid_id("id", "not a valid id", "node"))


# --- anonymous -------------------------------------------------------------------------------
ANONYMOUS_LISTS = {
    "corpora": "{ corpora { edges { node { id } } } }",
    "documents": "query($c: ID!) { documents(corpusId: $c) { edges { node { id } } } }",
    "researchReports": "{ researchReports { edges { node { id } } } }",
    "notifications": "{ notifications { edges { node { id } } } }",
    "conversations": "{ conversations { edges { node { id } } } }",
}


def test_anonymous_sees_empty_connections(anonymous_gql, user, corpus, completed_report):
    # given a conversation of the user's
    conversation_create(creator=user, corpus=corpus)
    for name, query in ANONYMOUS_LISTS.items():
        # then
        assert anonymous_gql(query, {"c": gid("Corpus", corpus.pk)}) == (
            200,
            {"data": {name: {"edges": []}}},
        ), name


def test_anonymous_sees_null_objects(anonymous_gql, user, corpus, completed_report):
    # given
    conversation = conversation_create(creator=user, corpus=corpus)
    passage = Passage.objects.filter(corpus=corpus).first()
    lookups = [
        ("corpus", CORPUS, gid("Corpus", corpus.pk)),
        ("passage", PASSAGE, gid("Passage", passage.pk)),
        ("researchReport", REPORT_BY_ID, gid("ResearchReport", completed_report.pk)),
        (
            "conversation",
            "query($id: ID!) { conversation(id: $id) { id } }",
            gid("Conversation", conversation.pk),
        ),
        ("node", NODE, gid("Corpus", corpus.pk)),
        ("node", NODE, gid("ResearchReport", completed_report.pk)),
    ]
    for name, query, global_id in lookups:
        # then
        assert anonymous_gql(query, {"id": global_id}) == (200, {"data": {name: None}}), name
    assert anonymous_gql(
        "query($s: String!) { researchReportBySlug(slug: $s) { id } }", {"s": completed_report.slug}
    ) == (200, {"data": {"researchReportBySlug": None}})


# --- authentication --------------------------------------------------------------------------
INVALID_TOKEN = {
    "errors": [
        {
            "message": "the API token is missing, unknown, expired or revoked",
            "extensions": {"code": "invalid_token"},
        }
    ]
}


def test_a_revoked_token_is_refused_with_401(user, corpus):
    # given a token that worked, then was revoked
    issued = api_token_create(user=user, name="laptop")
    client = GraphQL(Client(), token=issued.secret)
    assert client.data("{ corpora { edges { node { name } } } }") == {
        "corpora": {"edges": [{"node": {"name": "Contracts"}}]}
    }
    api_token_revoke(user=user, token_id=issued.token.pk)
    # then
    assert client("{ corpora { edges { node { name } } } }") == (401, INVALID_TOKEN)


@pytest.mark.parametrize(
    "header", ["Bearer dc_unknown", "Bearer ", "Bearer", "Basic dXNlcjpwdw==", "Token dc_x", "dc_x"]
)
def test_an_unknown_or_malformed_authorization_header_is_401(db, header):
    response = Client().post(
        "/graphql",
        data=json.dumps({"query": "{ corpora { edges { node { id } } } }"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=header,
    )
    assert (response.status_code, response.json()) == (401, INVALID_TOKEN)


def test_a_session_reads_with_get_and_must_pass_csrf_to_post(user, corpus):
    # given a signed-in browser that enforces CSRF
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    query = "{ corpora { edges { node { name } } } }"
    # when
    read = browser.get("/graphql", {"query": query}, HTTP_ACCEPT="application/json")
    refused = browser.post("/graphql", data=json.dumps({"query": query}), content_type="application/json")
    browser.get("/accounts/login/")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    allowed = browser.post(
        "/graphql", data=json.dumps({"query": query}), content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    # then
    assert (read.status_code, read.json()) == (
        200,
        {"data": {"corpora": {"edges": [{"node": {"name": "Contracts"}}]}}},
    )
    assert (refused.status_code, refused.json()) == (
        403,
        {"errors": [{"message": "CSRF check failed", "extensions": {"code": "csrf_failed"}}]},
    )
    assert (allowed.status_code, allowed.json()) == (200, read.json())


def test_a_mutation_over_get_is_refused(gql):
    response = gql.client.get(
        "/graphql",
        {"query": 'mutation { createApiToken(name: "x") { secret } }'},
        HTTP_AUTHORIZATION=f"Bearer {gql.token}",
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 405
    assert response.json() == {
        "errors": [
            {
                "message": "Can only perform a mutation operation from a POST request.",
                "extensions": {"code": "invalid_request"},
            }
        ]
    }


# --- query limits ----------------------------------------------------------------------------
def nested(depth: int) -> str:
    """A query `depth` fields deep (field names need not exist: the limit is checked anyway)."""
    return "{ " + " { ".join(f"f{i}" for i in range(depth)) + " }" * depth


def test_a_query_deeper_than_the_limit_is_rejected(gql):
    # when
    status, body = gql(nested(settings.GRAPHQL_MAX_DEPTH + 1))
    # then
    assert settings.GRAPHQL_MAX_DEPTH == 10
    assert status == 400 and "data" not in body
    assert {
        "message": "query is 11 levels deep; the limit is 10",
        "locations": [{"line": 1, "column": 1}],
        "extensions": {"code": "invalid_query"},
    } in body["errors"]


def test_the_deepest_real_query_is_within_the_limit(gql, completed_report):
    # eight levels: the deepest path the schema offers
    query = (
        "{ researchReports { edges { node { citations { passage { document { corpus { name } } } } } } } }"
    )
    data = gql.data(query)
    assert data["researchReports"]["edges"][0]["node"]["citations"][0]["passage"]["document"]["corpus"] == {
        "name": "Contracts"
    }


def test_a_query_over_the_field_limit_is_rejected(gql, corpus):
    # given 134 aliases of three fields each: 402 fields
    over = "{ " + " ".join(f"a{i}: corpora {{ pageInfo {{ hasNextPage }} }}" for i in range(134)) + " }"
    at_limit = (
        "{ __typename "
        + " ".join(f"a{i}: corpora {{ pageInfo {{ hasNextPage }} }}" for i in range(133))
        + " }"
    )
    # when
    status, body = gql(over)
    # then
    assert settings.GRAPHQL_MAX_FIELDS == 400
    assert (status, body) == (
        400,
        {
            "errors": [
                {
                    "message": "query selects 402 fields; the limit is 400",
                    "locations": [{"line": 1, "column": 1}],
                    "extensions": {"code": "invalid_query"},
                }
            ]
        },
    )
    assert gql(at_limit)[0] == 200


def test_fragments_count_towards_the_limits_and_cannot_explode(gql):
    # given fragments that double at each of 40 levels: 2**40 fields if expanded naively
    fragments = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(40))
    query = "query { ...F0 } " + fragments + " fragment F40 on Query { __typename }"
    # then
    assert gql(query) == (
        400,
        {
            "errors": [
                {
                    "message": "query selects 1099511627776 fields; the limit is 400",
                    "locations": [{"line": 1, "column": 1}],
                    "extensions": {"code": "invalid_query"},
                }
            ]
        },
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("query { ...A } fragment A on Query { ...A }", "Cannot spread fragment 'A' within itself."),
        ("query { ...Missing }", "Unknown fragment 'Missing'."),
        ("{ nope }", "Cannot query field 'nope' on type 'Query'. Did you mean 'node'?"),
        (
            "{ corpora }",
            "Field 'corpora' of type 'CorpusConnection' must have a selection of subfields. "
            "Did you mean 'corpora { ... }'?",
        ),
    ],
    ids=["fragment-cycle", "unknown-fragment", "unknown-field", "no-subselection"],
)
def test_invalid_documents_are_400_not_500(gql, query, message):
    # these reached the depth limiter unvalidated and crashed it (500), or executed unvalidated
    status, body = gql(query)
    assert status == 400
    assert [e["message"] for e in body["errors"]] == [message]


def test_a_body_over_256_kib_is_413(gql):
    status, body = gql("{ __typename }", {"pad": "x" * 300_000})
    assert (status, body) == (
        413,
        {
            "errors": [
                {
                    "message": "the request body is over 262144 bytes",
                    "extensions": {"code": "request_too_large"},
                }
            ]
        },
    )


def test_report_status_values_match_the_model(gql):
    # the enum offered to clients is the model's statuses, nothing more
    data = gql.data('{ __type(name: "ResearchReportStatus") { enumValues { name } } }')
    assert [v["name"] for v in data["__type"]["enumValues"]] == list(ReportStatus.values)


def test_a_document_over_the_token_limit_is_refused_before_validation(gql):
    # 8,000 repeated selections made the overlapping-fields rule take seconds per request
    status, body = gql("{ " + "corpora { pageInfo { hasNextPage } } " * 2_000 + "}")
    assert (status, [e["message"] for e in body["errors"]]) == (
        400,
        ["Syntax Error: Document contains more than 10000 tokens. Parsing aborted."],
    )


def test_a_query_that_is_not_a_string_is_a_400(gql):
    response = gql.client.post(
        "/graphql",
        data=json.dumps({"query": 5}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {gql.token}",
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        # found by the fuzzer: the base view decoded it unguarded (500)
        (b"\x80{", "application/graphql"),
        # and a JSON body's bad byte was an invalid_request naming Python's codec error
        (b"\xff\xfe", "application/json"),
        (b'{"query": "{ me { username } }\xff"}', "application/json"),
    ],
)
def test_a_non_utf8_body_is_a_400_invalid_body(gql, body, content_type):
    response = gql.client.generic(
        "POST", "/graphql", data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {gql.token}"
    )
    assert (response.status_code, response.json()) == (
        400,
        {"errors": [{"message": "the request body is not UTF-8", "extensions": {"code": "invalid_body"}}]},
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"--xyz\r\n" + b"X" * 20_000 + b"\r\n\r\n", "multipart/form-data; boundary=xyz"),
        (b"&".join(b"f%d=1" % i for i in range(1_500)), "application/x-www-form-urlencoded"),
    ],
    ids=["multipart-header-too-large", "too-many-form-fields"],
)
def test_form_bodies_django_cannot_parse_are_a_400(gql, body, content_type):
    # found by the fuzzer: Django's parser errors reached the view's catch-all (500)
    response = gql.client.generic(
        "POST", "/graphql", data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {gql.token}"
    )
    assert (response.status_code, response.json()) == (
        400,
        {
            "errors": [
                {"message": "the request body could not be parsed", "extensions": {"code": "invalid_body"}}
            ]
        },
    )
