"""Names users give things are shown to other users, on pages and in terminals through the CLI:
control characters (an ESC sequence retitles or clears a terminal) and bidi overrides are
dropped from corpus names, report titles, conversation titles and token names when stored."""

from accounts.models import ApiToken
from conversations.models import Conversation
from corpora.models import Corpus
from research.models import ResearchReport
from tests.api.conftest import gid

HOSTILE = "Team docs\x1b]0;owned\x07\x1b[2J\x9b31m \u202eslx.exe\r\n"
CLEAN = "Team docs]0;owned[2J31m slx.exe"

CREATE = "mutation($n: String!) { createCorpus(name: $n) { errors { code } corpus { name } } }"
RENAME = (
    "mutation($id: ID!, $n: String!) { renameCorpus(id: $id, name: $n) { errors { code } corpus { name } } }"
)
START = """mutation($c: ID!, $t: String) {
    startResearchReport(corpusId: $c, prompt: "Liability caps?", title: $t) {
        errors { code } report { title } } }"""
TOKEN = "mutation($n: String!) { createApiToken(name: $n) { errors { code } token { name } } }"
SEND = """mutation($c: ID!, $text: String!) { sendChatMessage(corpusId: $c, content: $text) {
    errors { code } conversation { id } } }"""


def test_corpus_names_lose_control_and_bidi_characters(gql, corpus):
    # when
    renamed = gql.data(RENAME, {"id": gid("Corpus", corpus.pk), "n": HOSTILE})["renameCorpus"]
    created = gql.data(CREATE, {"n": "\u202eTeam\u2066 notes\x7f"})["createCorpus"]
    # then
    assert renamed == {"errors": [], "corpus": {"name": CLEAN}}
    assert created == {"errors": [], "corpus": {"name": "Team notes"}}
    assert sorted(Corpus.objects.values_list("name", flat=True)) == [CLEAN, "Team notes"]


def test_a_name_of_control_characters_only_is_refused(gql, corpus):
    # when
    payload = gql.data(RENAME, {"id": gid("Corpus", corpus.pk), "n": "\x1b\u202e"})["renameCorpus"]
    # then
    assert payload == {"errors": [{"code": "corpus_name_invalid"}], "corpus": None}
    assert Corpus.objects.get().name == "Contracts"


def test_report_token_and_conversation_titles_lose_control_and_bidi_characters(gql, corpus, samples):
    # when
    report = gql.data(START, {"c": gid("Corpus", corpus.pk), "t": HOSTILE})["startResearchReport"]
    token = gql.data(TOKEN, {"n": HOSTILE})["createApiToken"]
    chat = gql.data(SEND, {"c": gid("Corpus", corpus.pk), "text": "What caps\x1b[8m liability?"})[
        "sendChatMessage"
    ]
    # then
    assert report == {"errors": [], "report": {"title": CLEAN}}
    assert token == {"errors": [], "token": {"name": CLEAN}}
    assert chat["errors"] == []
    assert ResearchReport.objects.get().title == CLEAN
    assert ApiToken.objects.get(name=CLEAN)
    assert Conversation.objects.get().title == "What caps[8m liability?"
