"""The corpus mutations through the real schema and database: create, rename, delete (with the
reports rule and the busy rule), delete a document (its passages and lexical index rows with
it, searches consistent), share and unshare. Each typed error code; a refused mutation changes
nothing; another user's corpus answers as a missing one; a user it is shared with reads,
searches and researches it but cannot manage it."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from guardian.models import UserObjectPermission

from accounts.services import api_token_create
from conversations.models import Conversation
from conversations.services import conversation_create
from corpora.exceptions import CorpusNameInvalid
from corpora.models import Corpus, Document, Passage
from corpora.selectors import corpus_get_for_user, passage_search
from corpora.services import corpus_create, corpus_rename, passage_embed_pending
from notifications.models import Notification
from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from research.services import report_cancel, report_mark_running, report_start
from tests.api.conftest import GraphQL, gid
from tests.factories import ingest_samples

MISSING = 10**9

CREATE = """mutation($n: String!) { createCorpus(name: $n) {
    errors { field message code } corpus { id name isCreator sharedWith documentCount } } }"""
RENAME = """mutation($id: ID!, $n: String!) { renameCorpus(id: $id, name: $n) {
    errors { field message code } corpus { id name } } }"""
DELETE = """mutation($id: ID!, $r: Boolean) { deleteCorpus(id: $id, deleteReports: $r) {
    errors { field message code } deletedId deletedDocuments deletedReports } }"""
DELETE_DOCUMENT = """mutation($id: ID!) { deleteDocument(id: $id) {
    errors { field message code } deletedId corpus { id documentCount passageCount } } }"""
SHARE = """mutation($id: ID!, $u: String!) { shareCorpus(id: $id, username: $u) {
    errors { field message code } corpus { id sharedWith } } }"""
UNSHARE = """mutation($id: ID!, $u: String!) { unshareCorpus(id: $id, username: $u) {
    errors { field message code } corpus { id sharedWith } } }"""
CORPORA = "{ corpora { edges { node { id name isCreator sharedWith } } } }"


def error(field: str | None, message: str, code: str) -> list[dict]:
    return [{"field": field, "message": message, "code": code}]


NOT_FOUND = error("id", "corpus not found", "corpus_not_found")
DENIED = error("id", "only the corpus's creator can do that", "permission_denied")
BUSY = error(
    "id", "a research run on this corpus is in progress; wait for it to end or cancel it", "corpus_busy"
)


@pytest.fixture
def carol(db):
    return get_user_model().objects.create_user(username="carol", password="pw-carol-123")


@pytest.fixture
def carol_gql(carol) -> GraphQL:
    from django.test import Client

    return GraphQL(Client(), token=api_token_create(user=carol, name="tests").secret)


@pytest.fixture
def shared(corpus, other_user, samples):
    """Alice's corpus, with her two documents, shared with Bob."""
    from corpora.services import corpus_share

    corpus_share(user=corpus.creator, corpus=corpus, username=other_user.username)
    return corpus


def fts_rows(passage_ids: list[int]) -> int:
    """Lexical index rows for these passages: FTS5 rows on SQLite; on PostgreSQL the tsvector is
    a generated column of the passage row itself."""
    if not passage_ids:
        return 0
    placeholders = ", ".join(["%s"] * len(passage_ids))
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            sql = f"SELECT count(*) FROM corpora_passage_fts WHERE rowid IN ({placeholders})"  # noqa: S608
        else:
            sql = f"SELECT count(search_vector) FROM corpora_passage WHERE id IN ({placeholders})"  # noqa: S608
        cursor.execute(sql, passage_ids)
        return cursor.fetchone()[0]


def object_permissions(corpus_pk: int) -> int:
    content_type = ContentType.objects.get_for_model(Corpus)
    return UserObjectPermission.objects.filter(content_type=content_type, object_pk=str(corpus_pk)).count()


def snapshot() -> tuple:
    """What a refused mutation must leave as it was."""
    return (
        list(Corpus.objects.order_by("pk").values_list("pk", "name", "index_version")),
        Document.objects.count(),
        Passage.objects.count(),
        ResearchReport.objects.count(),
        UserObjectPermission.objects.count(),
    )


# --- createCorpus ---------------------------------------------------------------------------
def test_create_corpus_makes_a_private_corpus_for_its_creator(gql, other_gql, user):
    # when
    payload = gql.data(CREATE, {"n": "  Board   minutes "})["createCorpus"]
    # then
    corpus = Corpus.objects.get()
    assert payload == {
        "errors": [],
        "corpus": {
            "id": gid("Corpus", corpus.pk),
            "name": "Board minutes",
            "isCreator": True,
            "sharedWith": [],
            "documentCount": 0,
        },
    }
    assert corpus.creator == user
    assert [e["node"]["id"] for e in gql.data(CORPORA)["corpora"]["edges"]] == [gid("Corpus", corpus.pk)]
    assert other_gql.data(CORPORA) == {"corpora": {"edges": []}}


def test_a_200_character_name_is_accepted(gql):
    payload = gql.data(CREATE, {"n": "n" * 200})["createCorpus"]
    assert payload["errors"] == [] and payload["corpus"]["name"] == "n" * 200


@pytest.mark.parametrize("name", ["", "   ", "n" * 201], ids=["empty", "blank", "201-chars"])
def test_create_refuses_an_invalid_name_and_writes_nothing(gql, name):
    payload = gql.data(CREATE, {"n": name})["createCorpus"]
    assert payload == {
        "errors": error("name", "a corpus name is 1 to 200 characters", "corpus_name_invalid"),
        "corpus": None,
    }
    assert Corpus.objects.count() == 0


def test_a_nul_in_a_name_is_refused_at_the_door_and_by_the_service(gql, user, corpus):
    # when the API gets one
    status, body = gql(CREATE, {"n": "a\x00b"})
    # then
    assert (status, body["errors"][0]["extensions"]["code"]) == (400, "invalid_input")
    # and the service refuses one from any other caller
    with pytest.raises(CorpusNameInvalid):
        corpus_create(creator=user, name="a\x00b")
    with pytest.raises(CorpusNameInvalid):
        corpus_rename(user=user, corpus=corpus, name="a\x00b")
    assert list(Corpus.objects.values_list("name", flat=True)) == ["Contracts"]


def test_names_are_unique_per_creator(gql, other_gql, corpus):
    # when Alice reuses her name, and Bob uses it for his own corpus
    mine = gql.data(CREATE, {"n": "Contracts"})["createCorpus"]
    theirs = other_gql.data(CREATE, {"n": "Contracts"})["createCorpus"]
    # then
    assert mine == {
        "errors": error("name", "you already have a corpus named 'Contracts'", "corpus_name_taken"),
        "corpus": None,
    }
    assert theirs["errors"] == [] and theirs["corpus"]["name"] == "Contracts"
    assert Corpus.objects.count() == 2


def test_anonymous_cannot_create(anonymous_gql):
    payload = anonymous_gql.data(CREATE, {"n": "Mine"})["createCorpus"]
    assert payload == {
        "errors": error(None, "sign in or send an API token", "not_authenticated"),
        "corpus": None,
    }
    assert Corpus.objects.count() == 0


def test_a_read_only_token_cannot_create(user):
    from django.test import Client

    gql = GraphQL(Client(), token=api_token_create(user=user, name="ro", read_only=True).secret)
    status, body = gql(CREATE, {"n": "Mine"})
    assert (status, body["errors"][0]["extensions"]["code"]) == (403, "token_read_only")
    assert Corpus.objects.count() == 0


# --- renameCorpus ---------------------------------------------------------------------------
def test_rename_corpus(gql, corpus):
    payload = gql.data(RENAME, {"id": gid("Corpus", corpus.pk), "n": " Signed  contracts "})["renameCorpus"]
    assert payload == {"errors": [], "corpus": {"id": gid("Corpus", corpus.pk), "name": "Signed contracts"}}
    assert Corpus.objects.get().name == "Signed contracts"


def test_renaming_to_its_own_name_changes_nothing(gql, corpus):
    payload = gql.data(RENAME, {"id": gid("Corpus", corpus.pk), "n": "Contracts"})["renameCorpus"]
    assert payload == {"errors": [], "corpus": {"id": gid("Corpus", corpus.pk), "name": "Contracts"}}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Archive", error("name", "you already have a corpus named 'Archive'", "corpus_name_taken")),
        ("", error("name", "a corpus name is 1 to 200 characters", "corpus_name_invalid")),
        ("n" * 201, error("name", "a corpus name is 1 to 200 characters", "corpus_name_invalid")),
    ],
    ids=["taken", "empty", "201-chars"],
)
def test_rename_refuses_and_changes_nothing(gql, user, corpus, name, expected):
    corpus_create(creator=user, name="Archive")
    before = snapshot()
    payload = gql.data(RENAME, {"id": gid("Corpus", corpus.pk), "n": name})["renameCorpus"]
    assert payload == {"errors": expected, "corpus": None}
    assert snapshot() == before


def test_rename_with_a_malformed_id(gql, corpus):
    payload = gql.data(RENAME, {"id": gid("Document", corpus.pk), "n": "x"})["renameCorpus"]
    assert payload == {"errors": error("id", "not a valid Corpus id", "invalid_id"), "corpus": None}


# --- deleteCorpus ---------------------------------------------------------------------------
def test_delete_corpus_removes_its_documents_passages_index_rows_conversations_and_sharing(
    gql, user, other_user, corpus, samples
):
    # given a corpus shared with Bob, a conversation on it and another corpus of Alice's
    from corpora.services import corpus_share

    corpus_share(user=user, corpus=corpus, username="bob")
    conversation_create(creator=user, corpus=corpus, title="notes")
    kept = corpus_create(creator=user, name="Archive")
    ingest_samples(kept)
    passage_ids = list(Passage.objects.filter(corpus=corpus).values_list("pk", flat=True))
    assert fts_rows(passage_ids) == len(passage_ids) > 0
    # when
    payload = gql.data(DELETE, {"id": gid("Corpus", corpus.pk)})["deleteCorpus"]
    # then
    assert payload == {
        "errors": [],
        "deletedId": gid("Corpus", corpus.pk),
        "deletedDocuments": 2,
        "deletedReports": 0,
    }
    assert list(Corpus.objects.all()) == [kept]
    assert Document.objects.filter(corpus_id=corpus.pk).count() == 0
    assert Passage.objects.filter(pk__in=passage_ids).count() == 0
    assert fts_rows(passage_ids) == 0
    assert Conversation.objects.count() == 0
    assert object_permissions(corpus.pk) == 0
    # the other corpus is untouched and still searchable
    assert Document.objects.filter(corpus=kept).count() == 2
    assert passage_search(corpus=kept, query="Delaware", mode="lexical")


def test_a_corpus_with_reports_is_kept_unless_delete_reports(gql, user, corpus, completed_report):
    # given a completed report citing the corpus's passages
    before = snapshot()
    # when
    for flag in (None, False):
        payload = gql.data(DELETE, {"id": gid("Corpus", corpus.pk), "r": flag})["deleteCorpus"]
        # then
        assert payload == {
            "errors": error(
                "deleteReports",
                "this corpus has 1 research report(s) that cite its passages; delete them with it "
                "(deleteReports: true) or keep the corpus",
                "corpus_has_reports",
            ),
            "deletedId": None,
            "deletedDocuments": None,
            "deletedReports": None,
        }
        assert snapshot() == before


def test_delete_reports_deletes_every_users_reports_with_the_corpus(
    gql, user, other_user, corpus, completed_report
):
    # given Bob, whom the corpus is shared with, has a report on it too
    from corpora.services import corpus_share

    corpus_share(user=user, corpus=corpus, username="bob")
    theirs = report_run(report_id=report_start(user=other_user, corpus=corpus, prompt="Governing law").pk)
    assert Notification.objects.count() == 2
    # when
    payload = gql.data(DELETE, {"id": gid("Corpus", corpus.pk), "r": True})["deleteCorpus"]
    # then
    assert payload == {
        "errors": [],
        "deletedId": gid("Corpus", corpus.pk),
        "deletedDocuments": 2,
        "deletedReports": 2,
    }
    assert not ResearchReport.objects.filter(pk__in=[completed_report.pk, theirs.pk]).exists()
    assert (Corpus.objects.count(), Document.objects.count(), Passage.objects.count()) == (0, 0, 0)
    assert Notification.objects.count() == 0


@pytest.mark.parametrize("status", ["QUEUED", "RUNNING", "CANCELLING"])
@pytest.mark.parametrize("delete_reports", [False, True])
def test_a_corpus_is_not_deleted_while_a_run_on_it_is_active(
    gql, user, corpus, samples, status, delete_reports
):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination")
    if status != "QUEUED":
        report_mark_running(report_id=report.pk)
    if status == "CANCELLING":
        report_cancel(user=user, report_id=report.pk)
    assert ResearchReport.objects.get().status == status
    before = snapshot()
    # when
    payload = gql.data(DELETE, {"id": gid("Corpus", corpus.pk), "r": delete_reports})["deleteCorpus"]
    # then
    assert payload["errors"] == BUSY
    assert snapshot() == before


def test_a_run_of_a_user_it_is_shared_with_makes_it_busy_too(gql, other_user, shared):
    report_start(user=other_user, corpus=shared, prompt="termination")
    before = snapshot()
    payload = gql.data(DELETE, {"id": gid("Corpus", shared.pk), "r": True})["deleteCorpus"]
    assert payload["errors"] == BUSY
    assert snapshot() == before


def test_a_corpus_whose_runs_have_ended_can_be_deleted(gql, user, corpus, samples):
    report = report_start(user=user, corpus=corpus, prompt="termination")
    report_cancel(user=user, report_id=report.pk)  # QUEUED ends CANCELLED at once
    payload = gql.data(DELETE, {"id": gid("Corpus", corpus.pk), "r": True})["deleteCorpus"]
    assert (payload["errors"], payload["deletedReports"]) == ([], 1)
    assert Corpus.objects.count() == 0


# --- deleteDocument -------------------------------------------------------------------------
def test_delete_document_removes_its_passages_and_index_rows_and_searches_agree(gql, corpus, samples):
    # given
    acme, initech = samples
    acme_passages = list(acme.passages.values_list("pk", flat=True))
    version = Corpus.objects.get().index_version
    assert passage_search(corpus=corpus, query="Delaware", mode="lexical")
    # when
    payload = gql.data(DELETE_DOCUMENT, {"id": gid("Document", acme.pk)})["deleteDocument"]
    # then
    assert payload == {
        "errors": [],
        "deletedId": gid("Document", acme.pk),
        "corpus": {
            "id": gid("Corpus", corpus.pk),
            "documentCount": 1,
            "passageCount": initech.passages.count(),
        },
    }
    assert list(Document.objects.all()) == [initech]
    assert Passage.objects.filter(pk__in=acme_passages).count() == 0
    assert fts_rows(acme_passages) == 0
    assert Corpus.objects.get().index_version == version + 1
    assert passage_search(corpus=corpus, query="Delaware", mode="lexical") == []
    assert passage_search(corpus=corpus, query="Delaware insurance liability", mode="lexical") == []
    hits = passage_search(corpus=corpus, query="terminate convenience", mode="lexical")
    assert hits and {h.passage.document_id for h in hits} == {initech.pk}


def test_hybrid_and_dense_searches_forget_a_deleted_document(gql, corpus, embedding_server):
    # given embedded passages and warm in-memory term and dense indexes
    acme, initech = (r.document for r in ingest_samples(corpus, schedule_embedding=False))
    passage_embed_pending(corpus=corpus)
    for mode in ("hybrid", "dense"):
        hits = passage_search(corpus=corpus, query="liability insurance Delaware", mode=mode, top_k=50)
        assert acme.pk in {h.passage.document_id for h in hits}, mode
    # when
    gql.data(DELETE_DOCUMENT, {"id": gid("Document", acme.pk)})
    # then
    for mode in ("hybrid", "dense", "lexical"):
        hits = passage_search(corpus=corpus, query="liability insurance Delaware", mode=mode, top_k=50)
        assert {h.passage.document_id for h in hits} <= {initech.pk}, mode


@pytest.mark.parametrize("status", ["QUEUED", "RUNNING"])
def test_a_document_is_not_deleted_while_a_run_on_its_corpus_is_active(gql, user, corpus, samples, status):
    report = report_start(user=user, corpus=corpus, prompt="termination")
    if status == "RUNNING":
        report_mark_running(report_id=report.pk)
    before = snapshot()
    payload = gql.data(DELETE_DOCUMENT, {"id": gid("Document", samples[0].pk)})["deleteDocument"]
    assert payload == {"errors": BUSY, "deletedId": None, "corpus": None}
    assert snapshot() == before


def test_a_report_that_cited_a_deleted_document_keeps_its_content_and_quotes(gql, corpus, completed_report):
    # given
    cited = completed_report.citations[0]
    content = completed_report.content
    # when
    payload = gql.data(DELETE_DOCUMENT, {"id": gid("Document", cited["document_id"])})["deleteDocument"]
    # then
    assert payload["errors"] == []
    query = "query($id: ID!) { researchReport(id: $id) { content citations { quote passage { id } } } }"
    report = gql.data(query, {"id": gid("ResearchReport", completed_report.pk)})["researchReport"]
    assert report["content"] == content
    gone = [c for c in report["citations"] if c["quote"] == cited["quote"]]
    assert gone and all(c["passage"] is None for c in gone)
    # The suite's closed-graph check reads every finalized report's passages; this one's
    # were deleted on purpose.
    ResearchReport.objects.filter(pk=completed_report.pk).delete()


def test_delete_document_with_a_malformed_id(gql, samples):
    payload = gql.data(DELETE_DOCUMENT, {"id": gid("Corpus", samples[0].pk)})["deleteDocument"]
    assert payload["errors"] == error("id", "not a valid Document id", "invalid_id")
    assert Document.objects.count() == 2


# --- Another user's corpus answers as a missing one -----------------------------------------
MANAGE = {
    "renameCorpus": (RENAME, lambda c, d: {"id": gid("Corpus", c), "n": "Mine now"}),
    "deleteCorpus": (DELETE, lambda c, d: {"id": gid("Corpus", c), "r": True}),
    "shareCorpus": (SHARE, lambda c, d: {"id": gid("Corpus", c), "u": "carol"}),
    "unshareCorpus": (UNSHARE, lambda c, d: {"id": gid("Corpus", c), "u": "bob"}),
    "deleteDocument": (DELETE_DOCUMENT, lambda c, d: {"id": gid("Document", d)}),
}


@pytest.mark.parametrize("field", sorted(MANAGE))
def test_a_user_who_cannot_see_the_corpus_gets_not_found_as_for_a_missing_one(
    carol_gql, shared, samples, field
):
    query, variables = MANAGE[field]
    before = snapshot()
    # when
    theirs = carol_gql(query, variables(shared.pk, samples[0].pk))
    missing = carol_gql(query, variables(MISSING, MISSING))
    # then
    assert theirs == missing
    expected = (
        error("id", "document not found", "document_not_found") if field == "deleteDocument" else NOT_FOUND
    )
    assert theirs[1]["data"][field]["errors"] == expected
    assert snapshot() == before


@pytest.mark.parametrize("field", sorted(MANAGE))
def test_a_user_it_is_shared_with_cannot_manage_it(other_gql, shared, samples, carol, field):
    query, variables = MANAGE[field]
    before = snapshot()
    payload = other_gql.data(query, variables(shared.pk, samples[0].pk))[field]
    assert payload["errors"] == DENIED
    assert snapshot() == before


# --- shareCorpus / unshareCorpus ------------------------------------------------------------
def test_share_corpus_lets_the_user_list_and_read_it(gql, other_gql, corpus, samples, other_user):
    # when
    payload = gql.data(SHARE, {"id": gid("Corpus", corpus.pk), "u": "bob"})["shareCorpus"]
    # then
    assert payload == {"errors": [], "corpus": {"id": gid("Corpus", corpus.pk), "sharedWith": ["bob"]}}
    assert other_user.has_perm("corpora.view_corpus", corpus)
    assert not other_user.has_perm("corpora.change_corpus", corpus)
    assert not other_user.has_perm("corpora.delete_corpus", corpus)
    assert other_gql.data(CORPORA) == {
        "corpora": {
            "edges": [
                {
                    "node": {
                        "id": gid("Corpus", corpus.pk),
                        "name": "Contracts",
                        "isCreator": False,
                        "sharedWith": [],
                    }
                }
            ]
        }
    }
    documents = other_gql.data(
        "query($c: ID!) { documents(corpusId: $c) { edges { node { title } } } }",
        {"c": gid("Corpus", corpus.pk)},
    )
    assert [e["node"]["title"] for e in documents["documents"]["edges"]] == ["acme-supply", "initech-license"]


def test_sharing_twice_changes_nothing(gql, corpus, other_user):
    for _ in range(2):
        payload = gql.data(SHARE, {"id": gid("Corpus", corpus.pk), "u": "bob"})["shareCorpus"]
        assert payload["corpus"]["sharedWith"] == ["bob"]
    assert object_permissions(corpus.pk) == 3 + 1  # the creator's view/change/delete, Bob's view


@pytest.mark.parametrize("mutation", [SHARE, UNSHARE], ids=["share", "unshare"])
@pytest.mark.parametrize(
    ("username", "expected"),
    [
        ("nobody", error("username", "no user named 'nobody'", "user_not_found")),
        ("", error("username", "give the username of the user", "user_not_found")),
        ("inactive", error("username", "no user named 'inactive'", "user_not_found")),
        ("alice", error("username", "you cannot share a corpus with yourself", "cannot_share_with_self")),
    ],
    ids=["unknown", "empty", "inactive", "self"],
)
def test_share_and_unshare_refuse_and_change_nothing(gql, corpus, mutation, username, expected):
    get_user_model().objects.create_user(username="inactive", password="pw-inactive-123", is_active=False)
    before = snapshot()
    payload = gql.data(mutation, {"id": gid("Corpus", corpus.pk), "u": username})
    assert next(iter(payload.values())) == {"errors": expected, "corpus": None}
    assert snapshot() == before


def test_a_shared_user_searches_chats_and_researches_and_their_reports_are_their_own(
    gql, other_gql, user, other_user, shared
):
    # search: the command line as Bob
    out = io.StringIO()
    call_command(
        "search", "Delaware", corpus=str(shared.pk), user="bob", mode="lexical", json=True, stdout=out
    )
    assert "Delaware" in json.loads(out.getvalue())[0]["text"]
    assert passage_search(corpus=corpus_get_for_user(user=other_user, corpus_id=shared.pk), query="Delaware")
    # chat: an answer quoting the corpus's passages
    chat = other_gql.data(
        "mutation($c: ID!) { sendChatMessage(corpusId: $c, "
        'content: "Which law governs the supply agreement?") { errors { code } reply { content } } }',
        {"c": gid("Corpus", shared.pk)},
    )["sendChatMessage"]
    assert chat["errors"] == [] and "Delaware" in chat["reply"]["content"]
    # research: Bob's report, run to completion
    start = other_gql.data(
        'mutation($c: ID!) { startResearchReport(corpusId: $c, prompt: "What law governs the agreements?") '
        "{ errors { code } report { id } } }",
        {"c": gid("Corpus", shared.pk)},
    )["startResearchReport"]
    assert start["errors"] == []
    report = ResearchReport.objects.get()
    assert report.creator == other_user
    assert report_run(report_id=report.pk).status == ReportStatus.COMPLETED
    # the report is Bob's alone: Alice, the corpus's creator, does not see it
    query = "query($id: ID!) { researchReport(id: $id) { id status } }"
    assert other_gql.data(query, {"id": gid("ResearchReport", report.pk)})["researchReport"] == {
        "id": gid("ResearchReport", report.pk),
        "status": "COMPLETED",
    }
    assert gql.data(query, {"id": gid("ResearchReport", report.pk)}) == {"researchReport": None}
    assert gql.data("{ researchReports { edges { node { id } } } }") == {"researchReports": {"edges": []}}


def test_unshare_takes_the_corpus_back_and_leaves_their_reports_theirs(gql, other_gql, other_user, shared):
    # given a report of Bob's on the shared corpus
    report = report_run(report_id=report_start(user=other_user, corpus=shared, prompt="Governing law").pk)
    # when
    payload = gql.data(UNSHARE, {"id": gid("Corpus", shared.pk), "u": "bob"})["unshareCorpus"]
    # then
    assert payload == {"errors": [], "corpus": {"id": gid("Corpus", shared.pk), "sharedWith": []}}
    assert other_gql.data(CORPORA) == {"corpora": {"edges": []}}
    assert other_gql.data("query($id: ID!) { corpus(id: $id) { id } }", {"id": gid("Corpus", shared.pk)}) == {
        "corpus": None
    }
    start = other_gql.data(
        'mutation($c: ID!) { startResearchReport(corpusId: $c, prompt: "More") { errors { code } } }',
        {"c": gid("Corpus", shared.pk)},
    )["startResearchReport"]
    assert start["errors"] == [{"code": "corpus_not_found"}]
    query = "query($id: ID!) { researchReport(id: $id) { id status } }"
    assert (
        other_gql.data(query, {"id": gid("ResearchReport", report.pk)})["researchReport"]["status"]
        == "COMPLETED"
    )
    # unsharing again changes nothing
    again = gql.data(UNSHARE, {"id": gid("Corpus", shared.pk), "u": "bob"})["unshareCorpus"]
    assert again == payload


def test_a_corpus_taken_back_takes_its_conversations_and_resumes_with_it(gql, other_gql, other_user, shared):
    # given Bob's conversation on the shared corpus and his cancelled report
    conversation = conversation_create(creator=other_user, corpus=shared, title="Governing law")
    report = report_start(user=other_user, corpus=shared, prompt="Governing law")
    report_cancel(user=other_user, report_id=report.pk)
    by_id = "query($id: ID!) { conversation(id: $id) { id } }"
    assert other_gql.data(by_id, {"id": gid("Conversation", conversation.pk)})["conversation"] is not None
    # when Alice takes the corpus back
    gql.data(UNSHARE, {"id": gid("Corpus", shared.pk), "u": "bob"})
    # then the conversation is gone for Bob, as on the pages, and resuming is refused at once
    assert other_gql.data(by_id, {"id": gid("Conversation", conversation.pk)})["conversation"] is None
    assert other_gql.data("{ conversations { edges { node { id } } } }")["conversations"]["edges"] == []
    resumed = other_gql.data(
        "mutation($id: ID!) { resumeResearchReport(id: $id) { errors { code } } }",
        {"id": gid("ResearchReport", report.pk)},
    )["resumeResearchReport"]
    assert resumed["errors"] == [{"code": "corpus_not_found"}]
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLED


def test_a_queued_run_of_a_user_no_longer_shared_with_fails_when_it_starts(gql, other_user, shared):
    # given Bob's run, queued while the corpus was shared with him
    report = report_start(user=other_user, corpus=shared, prompt="Governing law")
    # when Alice takes the corpus back before the run starts
    gql.data(UNSHARE, {"id": gid("Corpus", shared.pk), "u": "bob"})
    ended = report_run(report_id=report.pk)
    # then
    assert ended.status == ReportStatus.FAILED
    assert ended.error == f"CorpusNotFound: corpus {shared.pk} not found"
    assert ended.findings == []
