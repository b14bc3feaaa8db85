"""No N+1: a list costs the same number of queries for one row as for many."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import MessageRole
from conversations.services import chat_message_append, conversation_create
from corpora.services import corpus_create
from research.engine.run import report_run
from research.services import report_start
from tests.api.conftest import GraphQL, gid
from tests.factories import ingest_text

REPORTS = """{ researchReports { edges { node {
    id status progress { stepCount findingsCount sourcesCount }
    corpus { name documentCount passageCount }
    citations { quote passage { id text document { title } } }
} } } }"""
CORPORA = "{ corpora { edges { node { id name documentCount passageCount } } } }"
DOCUMENTS = (
    "query($c: ID!) { documents(corpusId: $c) { edges { node { id title corpus { name documentCount } } } } }"
)
CONVERSATIONS = """{ conversations { edges { node {
    id title corpus { name passageCount } messages { role content }
} } } }"""
NOTIFICATIONS = "{ notifications { edges { node { id kind isRead data } } } }"


def queries_for(gql: GraphQL, query: str, variables: dict | None = None) -> int:
    gql.data(query, variables)  # warm: the token's last-used stamp is written once a minute
    with CaptureQueriesContext(connection) as captured:
        gql.data(query, variables)
    return len(captured)


def run_reports(user, corpus, count: int) -> None:
    for i in range(count):
        report_run(
            report_id=report_start(user=user, corpus=corpus, prompt=f"liability and termination {i}").pk
        )


def test_report_list_with_citations_costs_the_same_for_1_and_5_reports(
    gql, user, corpus, samples, django_assert_max_num_queries
):
    # given one completed report
    run_reports(user, corpus, 1)
    one = queries_for(gql, REPORTS)
    # when four more complete
    run_reports(user, corpus, 4)
    five = queries_for(gql, REPORTS)
    # then
    edges = gql.data(REPORTS)["researchReports"]["edges"]
    assert len(edges) == 5 and all(e["node"]["citations"] for e in edges)
    assert five == one
    with django_assert_max_num_queries(one):
        gql.data(REPORTS)


def test_corpora_list_costs_the_same_for_1_and_5_corpora(gql, user, corpus, samples):
    one = queries_for(gql, CORPORA)
    for i in range(4):
        ingest_text(
            corpus_create(creator=user, name=f"extra {i}"), "note.md", f"# Note {i}\n\nSome text {i}."
        )
    assert len(gql.data(CORPORA)["corpora"]["edges"]) == 5
    assert queries_for(gql, CORPORA) == one


def test_documents_list_costs_the_same_for_2_and_6_documents(gql, corpus, samples):
    variables = {"c": gid("Corpus", corpus.pk)}
    two = queries_for(gql, DOCUMENTS, variables)
    for i in range(4):
        ingest_text(corpus, f"note-{i}.md", f"# Note {i}\n\nSome text about clause {i}.")
    assert len(gql.data(DOCUMENTS, variables)["documents"]["edges"]) == 6
    assert queries_for(gql, DOCUMENTS, variables) == two


def test_conversations_list_with_messages_costs_the_same_for_1_and_5(gql, user, corpus):
    def add_conversation(i: int) -> None:
        conversation = conversation_create(creator=user, corpus=corpus, title=f"c{i}")
        for role in (MessageRole.HUMAN, MessageRole.ASSISTANT):
            chat_message_append(conversation=conversation, role=role, content=f"{role} {i}")

    add_conversation(0)
    one = queries_for(gql, CONVERSATIONS)
    for i in range(1, 5):
        add_conversation(i)
    edges = gql.data(CONVERSATIONS)["conversations"]["edges"]
    assert len(edges) == 5 and all(len(e["node"]["messages"]) == 2 for e in edges)
    assert queries_for(gql, CONVERSATIONS) == one


def test_notifications_list_costs_the_same_for_1_and_5(gql, user, corpus, samples):
    run_reports(user, corpus, 1)
    one = queries_for(gql, NOTIFICATIONS)
    run_reports(user, corpus, 4)
    assert len(gql.data(NOTIFICATIONS)["notifications"]["edges"]) == 5
    assert queries_for(gql, NOTIFICATIONS) == one
