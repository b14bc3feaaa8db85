"""Every GraphQL mutation through the real schema and database: the written result, each typed
error code, and that a refused mutation writes nothing."""

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.services import api_token_create
from conversations.models import ChatMessage, Conversation, MessageRole
from corpora.services import corpus_create
from notifications.models import Notification
from research.constants import DEPTH_PRESETS, MAX_STEPS_CEILING
from research.engine.run import report_run
from research.models import ReportStatus, ResearchReport
from research.services import report_mark_running, report_start
from tests.api.conftest import GraphQL, gid

START = """mutation($c: ID!, $p: String!, $t: String, $d: ResearchDepth, $m: Int, $r: String, $docs: [ID!]) {
    startResearchReport(corpusId: $c, prompt: $p, title: $t, depth: $d, maxSteps: $m, rubric: $r,
                        documentIds: $docs) {
        errors { field message code }
        report { id title prompt rubric status depth progress { maxSteps } }
    }
}"""
CANCEL = """mutation($id: ID!) { cancelResearchReport(id: $id) {
    errors { field message code } report { id status cancelRequested } } }"""
SEND = """mutation($c: ID!, $conv: ID, $text: String!) {
    sendChatMessage(corpusId: $c, conversationId: $conv, content: $text) {
        errors { field message code }
        conversation { id title }
        message { role content }
        reply { role content data }
        report { id status }
    }
}"""
MARK_READ = (
    "mutation($ids: [ID!]) { markNotificationsRead(ids: $ids) { errors { field message code } marked } }"
)
CREATE_TOKEN = """mutation($n: String!) { createApiToken(name: $n) {
    errors { field message code } secret token { id name prefix isActive revokedAt } } }"""
REVOKE_TOKEN = """mutation($id: ID!) { revokeApiToken(id: $id) {
    errors { field message code } token { id isActive revokedAt } } }"""


def error(field: str | None, message: str, code: str) -> list[dict]:
    return [{"field": field, "message": message, "code": code}]


def start(gql: GraphQL, corpus_id: str, prompt: str = "What limits liability?", **more) -> dict:
    return gql.data(START, {"c": corpus_id, "p": prompt, **more})["startResearchReport"]


# --- startResearchReport ---------------------------------------------------------------------
def test_start_research_report_queues_a_report(gql, user, corpus, samples):
    # when
    payload = start(
        gql,
        gid("Corpus", corpus.pk),
        prompt="  What limits liability?  ",
        t="Liability",
        d="DEEP",
        m=7,
        r="Cite every cap.",
        docs=[gid("Document", samples[0].pk)],
    )
    # then
    report = ResearchReport.objects.get()
    assert payload == {
        "errors": [],
        "report": {
            "id": gid("ResearchReport", report.pk),
            "title": "Liability",
            "prompt": "What limits liability?",
            "rubric": "Cite every cap.",
            "status": "QUEUED",
            "depth": "DEEP",
            "progress": {"maxSteps": 7},
        },
    }
    assert (report.creator, report.corpus, report.depth, report.max_steps, report.document_scope) == (
        user,
        corpus,
        "deep",
        7,
        [samples[0].pk],
    )


def test_start_defaults_title_depth_and_steps(gql, corpus):
    payload = start(gql, gid("Corpus", corpus.pk), prompt="Termination for convenience\nand notice")
    assert payload["report"]["title"] == "Termination for convenience"
    assert payload["report"]["depth"] == "STANDARD"
    assert payload["report"]["progress"] == {"maxSteps": DEPTH_PRESETS["standard"].max_steps}


@pytest.mark.parametrize(
    ("max_steps", "stored"),
    [(1, 1), (10**6, MAX_STEPS_CEILING), (2**31 - 1, MAX_STEPS_CEILING)],
)
def test_max_steps_is_clamped_to_the_ceiling(gql, corpus, max_steps, stored):
    payload = start(gql, gid("Corpus", corpus.pk), m=max_steps)
    assert payload["report"]["progress"] == {"maxSteps": stored}


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (
            {"p": "x" * 10_001},
            error(
                "prompt",
                "a research prompt is at most 10,000 characters (this one has 10,001)",
                "prompt_invalid",
            ),
        ),
        (
            {"p": "   "},
            error("prompt", "a research prompt needs some text: the question to research", "prompt_invalid"),
        ),
        ({"r": "r" * 8_193}, error("rubric", "a rubric is at most 8,192 characters", "rubric_invalid")),
        (
            {"m": 0},
            error(
                "maxSteps",
                "max steps is a whole number of at least 1 (runs use at most 5,000)",
                "max_steps_invalid",
            ),
        ),
        ({"t": "t" * 201}, error("title", "a title is at most 200 characters", "title_invalid")),
        ({"docs": ["nonsense"]}, error("documentIds", "not a valid Document id", "invalid_id")),
        ({"docs": [gid("Corpus", 1)]}, error("documentIds", "not a valid Document id", "invalid_id")),
        ({"c": "Corpus:1"}, error("corpusId", "not a valid Corpus id", "invalid_id")),
    ],
    ids=[
        "prompt-10001",
        "prompt-blank",
        "rubric-8193",
        "max-steps-0",
        "title-201",
        "doc-junk",
        "doc-wrong-type",
        "corpus-raw",
    ],
)
def test_start_refuses_invalid_input_and_writes_nothing(gql, corpus, variables, expected):
    # when
    payload = gql.data(START, {"c": gid("Corpus", corpus.pk), "p": "What limits liability?", **variables})
    # then
    assert payload["startResearchReport"] == {"errors": expected, "report": None}
    assert ResearchReport.objects.count() == 0


def test_a_10000_character_prompt_is_accepted(gql, corpus):
    payload = start(gql, gid("Corpus", corpus.pk), prompt="p" * 10_000)
    assert payload["errors"] == [] and len(payload["report"]["prompt"]) == 10_000


def test_documents_outside_the_corpus_are_a_document_scope_error(gql, user, corpus, samples):
    # given a document of another corpus of the user's
    archive = corpus_create(creator=user, name="Archive")
    missing = samples[1].pk + 1000
    # when
    payload = start(
        gql, gid("Corpus", archive.pk), docs=[gid("Document", samples[0].pk), gid("Document", missing)]
    )
    # then
    assert payload == {
        "errors": error(
            "documentIds",
            f"documents not in this corpus: [{samples[0].pk}, {missing}]",
            "document_scope_invalid",
        ),
        "report": None,
    }
    assert ResearchReport.objects.count() == 0


def test_an_unknown_depth_is_a_400(gql, corpus):
    status, body = gql(START, {"c": gid("Corpus", corpus.pk), "p": "x", "d": "ABYSMAL"})
    assert status == 400
    assert [e["message"] for e in body["errors"]] == [
        "Variable '$d' got invalid value 'ABYSMAL'; Value 'ABYSMAL' does not exist in 'ResearchDepth' enum."
    ]
    assert ResearchReport.objects.count() == 0


def test_start_on_a_missing_corpus_is_corpus_not_found(gql, corpus):
    payload = start(gql, gid("Corpus", corpus.pk + 1000))
    assert payload == {
        "errors": error("corpusId", "corpus not found", "corpus_not_found"),
        "report": None,
    }


def test_a_second_start_while_one_is_active_is_already_in_progress(gql, corpus):
    # given
    first = start(gql, gid("Corpus", corpus.pk))
    # when
    second = start(gql, gid("Corpus", corpus.pk), prompt="Something else")
    # then it is refused, naming the run in progress and its page
    assert first["errors"] == []
    running = ResearchReport.objects.get()
    assert second == {
        "errors": error(
            "corpusId",
            f"a research run on this corpus is already in progress (\u201c{running.title}\u201d, "
            f"/reports/{running.slug}/); wait for it or cancel it",
            "research_already_in_progress",
        ),
        "report": None,
    }
    assert ResearchReport.objects.count() == 1


# --- cancelResearchReport --------------------------------------------------------------------
def test_cancel_a_queued_report_ends_it_cancelled(gql, user, corpus):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination")
    # when
    payload = gql.data(CANCEL, {"id": gid("ResearchReport", report.pk)})["cancelResearchReport"]
    # then
    assert payload == {
        "errors": [],
        "report": {"id": gid("ResearchReport", report.pk), "status": "CANCELLED", "cancelRequested": False},
    }
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLED


def test_cancel_a_running_report_asks_it_to_stop(gql, user, corpus):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination")
    report_mark_running(report_id=report.pk)
    # when
    payload = gql.data(CANCEL, {"id": gid("ResearchReport", report.pk)})["cancelResearchReport"]
    # then
    assert payload["report"] == {
        "id": gid("ResearchReport", report.pk),
        "status": "CANCELLING",
        "cancelRequested": True,
    }
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLING


def test_an_administrator_stops_another_users_run_and_reads_only_its_status(user, corpus, django_user_model):
    # given another user's running report, and an administrator's token
    report = report_start(user=user, corpus=corpus, prompt="termination")
    report_mark_running(report_id=report.pk)
    admin = django_user_model.objects.create_superuser("root", password="root pass 42")
    as_admin = GraphQL(Client(), token=api_token_create(user=admin, name="tests").secret)
    # when the administrator cancels it, asking for the report's prompt and findings too
    payload = as_admin.data(
        """mutation($id: ID!) { cancelResearchReport(id: $id) {
            errors { code } status report { prompt findings { quote } } } }""",
        {"id": gid("ResearchReport", report.pk)},
    )["cancelResearchReport"]
    # then the run is asked to stop; the payload says so and shows nothing of the report
    assert payload == {"errors": [], "status": "CANCELLING", "report": None}
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLING


@pytest.mark.parametrize("ending", ["completed", "cancelled"])
def test_a_finished_report_is_not_cancellable(gql, user, corpus, completed_report, ending):
    # given a completed report, or a queued one cancelled once already
    report = completed_report
    if ending == "cancelled":
        report = report_start(user=user, corpus=corpus, prompt="again")
        gql.data(CANCEL, {"id": gid("ResearchReport", report.pk)})
    # when
    payload = gql.data(CANCEL, {"id": gid("ResearchReport", report.pk)})["cancelResearchReport"]
    # then
    assert payload == {
        "errors": error("id", f"the report is already {ending}", "report_not_cancellable"),
        "report": None,
    }
    assert ResearchReport.objects.get(pk=report.pk).status == ending.upper()


def test_cancel_a_missing_or_malformed_report(gql, user, corpus):
    report = report_start(user=user, corpus=corpus, prompt="termination")
    missing = gql.data(CANCEL, {"id": gid("ResearchReport", report.pk + 1000)})["cancelResearchReport"]
    wrong_type = gql.data(CANCEL, {"id": gid("Corpus", corpus.pk)})["cancelResearchReport"]
    assert missing == {"errors": error("id", "report not found", "report_not_found"), "report": None}
    assert wrong_type == {
        "errors": error("id", "not a valid ResearchReport id", "invalid_id"),
        "report": None,
    }
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED


# --- anonymous mutations ---------------------------------------------------------------------
NOT_AUTHENTICATED = error(None, "sign in or send an API token", "not_authenticated")


def test_every_mutation_refuses_anonymous_and_writes_nothing(anonymous_gql, user, corpus):
    # given
    report = report_start(user=user, corpus=corpus, prompt="termination")
    token = ApiToken.objects.create(user=user, name="x", prefix="dc_x", digest="0" * 64)
    cases = {
        "startResearchReport": (START, {"c": gid("Corpus", corpus.pk), "p": "x"}, "report"),
        "cancelResearchReport": (CANCEL, {"id": gid("ResearchReport", report.pk)}, "report"),
        "sendChatMessage": (SEND, {"c": gid("Corpus", corpus.pk), "text": "hello"}, None),
        "markNotificationsRead": (MARK_READ, {}, "marked"),
        "createApiToken": (CREATE_TOKEN, {"n": "x"}, None),
        "revokeApiToken": (REVOKE_TOKEN, {"id": gid("ApiToken", token.pk)}, "token"),
    }
    for name, (query, variables, _) in cases.items():
        # when
        payload = anonymous_gql.data(query, variables)[name]
        # then
        assert payload["errors"] == NOT_AUTHENTICATED, name
        assert all(value is None for key, value in payload.items() if key != "errors"), name
    assert ResearchReport.objects.get().status == ReportStatus.QUEUED
    assert (Conversation.objects.count(), ChatMessage.objects.count(), ApiToken.objects.count()) == (0, 0, 1)
    assert ApiToken.objects.get().revoked_at is None


# --- sendChatMessage -------------------------------------------------------------------------
def test_send_chat_message_answers_from_the_corpus_in_a_new_conversation(gql, user, corpus, samples):
    # when
    payload = gql.data(
        SEND, {"c": gid("Corpus", corpus.pk), "text": "Which law governs the supply agreement?"}
    )["sendChatMessage"]
    # then
    conversation = Conversation.objects.get()
    assert (conversation.creator, conversation.corpus) == (user, corpus)
    assert payload["errors"] == [] and payload["report"] is None
    assert payload["conversation"] == {
        "id": gid("Conversation", conversation.pk),
        "title": "Which law governs the supply agreement?",
    }
    assert payload["message"] == {"role": "HUMAN", "content": "Which law governs the supply agreement?"}
    assert payload["reply"]["role"] == "ASSISTANT"
    assert payload["reply"]["content"].startswith("From the corpus:")
    assert "State of Delaware" in payload["reply"]["content"]
    assert "\nSources:\n[1] " in payload["reply"]["content"]
    assert list(conversation.messages.values_list("role", flat=True)) == ["HUMAN", "ASSISTANT"]


def test_send_chat_message_continues_a_conversation(gql, user, corpus, samples):
    # given
    first = gql.data(SEND, {"c": gid("Corpus", corpus.pk), "text": "Who is the supplier?"})["sendChatMessage"]
    # when
    second = gql.data(
        SEND, {"c": gid("Corpus", corpus.pk), "conv": first["conversation"]["id"], "text": "Can I terminate?"}
    )["sendChatMessage"]
    # then
    assert second["conversation"] == first["conversation"]
    assert Conversation.objects.count() == 1
    assert ChatMessage.objects.count() == 4


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("   ", error("content", "a message is 1 to 20,000 characters", "message_invalid")),
        ("x" * 20_001, error("content", "a message is 1 to 20,000 characters", "message_invalid")),
    ],
    ids=["blank", "over-long"],
)
def test_send_chat_message_refuses_an_empty_or_over_long_message(gql, corpus, content, expected):
    payload = gql.data(SEND, {"c": gid("Corpus", corpus.pk), "text": content})["sendChatMessage"]
    assert payload["errors"] == expected
    assert (Conversation.objects.count(), ChatMessage.objects.count()) == (0, 0)


def test_send_chat_message_to_a_conversation_of_another_corpus_is_not_found(gql, user, corpus, samples):
    # given a conversation on another corpus of the user's
    archive = corpus_create(creator=user, name="Archive")
    other = gql.data(SEND, {"c": gid("Corpus", archive.pk), "text": "hello"})["sendChatMessage"]
    # when
    payload = gql.data(
        SEND, {"c": gid("Corpus", corpus.pk), "conv": other["conversation"]["id"], "text": "hi"}
    )["sendChatMessage"]
    malformed = gql.data(SEND, {"c": gid("Corpus", corpus.pk), "conv": "zzz", "text": "hi"})[
        "sendChatMessage"
    ]
    # then
    assert payload["errors"] == error("conversationId", "conversation not found", "conversation_not_found")
    assert malformed["errors"] == error("conversationId", "not a valid Conversation id", "invalid_id")
    assert ChatMessage.objects.count() == 2


# --- markNotificationsRead -------------------------------------------------------------------
def test_mark_some_or_all_notifications_read(gql, user, corpus, samples):
    # given two completion notifications
    for prompt in ("liability", "termination"):
        report_run(report_id=report_start(user=user, corpus=corpus, prompt=prompt).pk)
    first, second = Notification.objects.order_by("pk")
    # when
    some = gql.data(MARK_READ, {"ids": [gid("Notification", first.pk)]})["markNotificationsRead"]
    again = gql.data(MARK_READ, {"ids": [gid("Notification", first.pk)]})["markNotificationsRead"]
    rest = gql.data(MARK_READ)["markNotificationsRead"]
    # then
    assert (some, again, rest) == (
        {"errors": [], "marked": 1},
        {"errors": [], "marked": 0},
        {"errors": [], "marked": 1},
    )
    assert Notification.objects.filter(read_at__isnull=True).count() == 0
    assert second.pk != first.pk


def test_mark_read_with_a_malformed_id(gql):
    payload = gql.data(MARK_READ, {"ids": ["nope"]})["markNotificationsRead"]
    assert payload == {"errors": error("ids", "not a valid Notification id", "invalid_id"), "marked": None}


# --- API tokens ------------------------------------------------------------------------------
def test_create_api_token_shows_the_secret_once(gql, user, corpus):
    # when
    payload = gql.data(CREATE_TOKEN, {"n": "  ci   runner "})["createApiToken"]
    # then
    token = ApiToken.objects.get(name="ci runner")
    secret = payload["secret"]
    assert payload == {
        "errors": [],
        "secret": secret,
        "token": {
            "id": gid("ApiToken", token.pk),
            "name": "ci runner",
            "prefix": secret[:10],
            "isActive": True,
            "revokedAt": None,
        },
    }
    assert secret.startswith("dc_") and len(secret) > 40
    # the secret works, is stored only as a digest and cannot be read back
    assert GraphQL(Client(), token=secret).data("{ corpora { edges { node { name } } } }") == {
        "corpora": {"edges": [{"node": {"name": "Contracts"}}]}
    }
    assert secret not in str(list(ApiToken.objects.values()))
    status, body = gql(
        "query($id: ID!) { node(id: $id) { ... on ApiToken { secret } } }", {"id": gid("ApiToken", token.pk)}
    )
    assert (status, [e["message"] for e in body["errors"]]) == (
        400,
        ["Cannot query field 'secret' on type 'ApiToken'."],
    )
    assert gql.data(
        "query($id: ID!) { node(id: $id) { ... on ApiToken { name prefix } } }",
        {"id": gid("ApiToken", token.pk)},
    ) == {"node": {"name": "ci runner", "prefix": secret[:10]}}


@pytest.mark.parametrize("name", ["", "   ", "n" * 101], ids=["empty", "blank", "101-chars"])
def test_create_api_token_refuses_an_invalid_name(gql, user, name):
    # given the fixture's own token
    before = ApiToken.objects.count()
    # when
    payload = gql.data(CREATE_TOKEN, {"n": name})["createApiToken"]
    # then
    assert payload == {
        "errors": error("name", "a token name is 1 to 100 characters", "token_name_invalid"),
        "secret": None,
        "token": None,
    }
    assert ApiToken.objects.count() == before


def test_create_api_token_stops_at_50_active_tokens(gql, user):
    # given the fixture's token and 49 more
    for i in range(49):
        assert gql.data(CREATE_TOKEN, {"n": f"t{i}"})["createApiToken"]["errors"] == []
    # when
    payload = gql.data(CREATE_TOKEN, {"n": "one too many"})["createApiToken"]
    # then
    assert payload["errors"] == error(
        None, "at most 50 active tokens; revoke one first", "token_limit_reached"
    )
    assert ApiToken.objects.filter(user=user).count() == 50


def test_revoke_api_token_disables_it(gql, user, corpus):
    # given a second token
    created = gql.data(CREATE_TOKEN, {"n": "laptop"})["createApiToken"]
    # when
    payload = gql.data(REVOKE_TOKEN, {"id": created["token"]["id"]})["revokeApiToken"]
    # then
    token = ApiToken.objects.get(name="laptop")
    assert payload == {
        "errors": [],
        "token": {"id": created["token"]["id"], "isActive": False, "revokedAt": token.revoked_at.isoformat()},
    }
    assert GraphQL(Client(), token=created["secret"])("{ corpora { edges { node { id } } } }")[0] == 401
    assert gql.data("{ corpora { edges { node { name } } } }") == {
        "corpora": {"edges": [{"node": {"name": "Contracts"}}]}
    }


def test_revoking_the_token_in_use_locks_that_client_out(gql, user):
    own = ApiToken.objects.get(user=user)
    assert gql.data(REVOKE_TOKEN, {"id": gid("ApiToken", own.pk)})["revokeApiToken"]["errors"] == []
    assert gql("{ corpora { edges { node { id } } } }")[0] == 401


def test_revoke_a_missing_or_malformed_token(gql, user):
    own = ApiToken.objects.get(user=user)
    missing = gql.data(REVOKE_TOKEN, {"id": gid("ApiToken", own.pk + 1000)})["revokeApiToken"]
    wrong_type = gql.data(REVOKE_TOKEN, {"id": gid("Corpus", own.pk)})["revokeApiToken"]
    assert missing == {"errors": error("id", "token not found", "token_not_found"), "token": None}
    assert wrong_type == {"errors": error("id", "not a valid ApiToken id", "invalid_id"), "token": None}
    assert ApiToken.objects.get(pk=own.pk).revoked_at is None


def test_human_message_is_stored_before_the_reply(gql, corpus, samples):
    gql.data(SEND, {"c": gid("Corpus", corpus.pk), "text": "Who is the buyer?"})
    assert [m.role for m in ChatMessage.objects.order_by("pk")] == [MessageRole.HUMAN, MessageRole.ASSISTANT]


def test_nul_characters_are_refused_with_a_code_not_a_500(gql, corpus):
    # PostgreSQL text cannot hold NUL: the API refuses it before any query runs, whether it
    # comes in a variable (400) or as an escape inside the query text (a typed error).
    start = (
        "mutation($p: String!, $c: ID!) { startResearchReport(corpusId: $c, prompt: $p) { errors { code } } }"
    )
    for query, variables in [
        (start, {"p": "liability\x00", "c": gid("Corpus", corpus.pk)}),
        ("query($s: String!) { researchReportBySlug(slug: $s) { id } }", {"s": "a\x00b"}),
    ]:
        status, body = gql(query, variables)
        assert (status, body["errors"][0]["extensions"]["code"]) == (400, "invalid_input")
    status, body = gql('{ researchReportBySlug(slug: "a\\u0000b") { id } }')
    assert status == 200
    assert body["errors"][0]["extensions"]["code"] == "invalid_input"
    assert body["data"] == {"researchReportBySlug": None}
    assert ResearchReport.objects.count() == 0


START_OVERRIDES = """mutation($c: ID!, $p: String!, $b: Int, $time: Int, $model: String) {
    startResearchReport(corpusId: $c, prompt: $p, breadth: $b, timeLimitSeconds: $time, model: $model) {
        errors { field message code }
        report { breadth timeLimitSeconds model strategy progress { phase } }
    }
}"""


def test_start_takes_per_request_breadth_time_limit_and_model(gql, corpus, settings, monkeypatch):
    settings.RESEARCH_ALLOWED_MODELS = ["openai:gpt-4o-mini"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the model is usable as configured
    payload = gql.data(
        START_OVERRIDES,
        {"c": gid("Corpus", corpus.pk), "p": "liability", "b": 2, "time": 120, "model": "openai:gpt-4o-mini"},
    )["startResearchReport"]
    assert payload == {
        "errors": [],
        "report": {
            "breadth": 2,
            "timeLimitSeconds": 120,
            "model": "openai:gpt-4o-mini",
            "strategy": None,
            "progress": {"phase": None},
        },
    }


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"b": 0}, error("breadth", "breadth is a whole number from 1 to 12", "breadth_invalid")),
        (
            {"time": 1},
            error(
                "timeLimitSeconds",
                "a time limit is at least 30 seconds (a longer one is capped at 1800)",
                "time_limit_invalid",
            ),
        ),
        (
            {"model": "anthropic:claude-opus-4"},
            error(
                "model",
                "model 'anthropic:claude-opus-4' is not offered here; use one of: offline",
                "model_not_allowed",
            ),
        ),
    ],
    ids=["breadth-0", "time-1", "model-not-offered"],
)
def test_start_refuses_overrides_out_of_bounds(gql, corpus, variables, expected):
    payload = gql.data(START_OVERRIDES, {"c": gid("Corpus", corpus.pk), "p": "liability", **variables})
    assert payload["startResearchReport"] == {"errors": expected, "report": None}
    assert ResearchReport.objects.count() == 0
