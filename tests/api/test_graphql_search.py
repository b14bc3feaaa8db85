"""The `search` query: a corpus's passages as `manage.py search` ranks them, for any corpus the
user may read (shared ones too), each mode, a document subset, and errors with codes."""

import pytest

from corpora.models import Passage
from corpora.selectors import passage_search
from corpora.services import corpus_create, corpus_share
from tests.api.conftest import gid, without_locations
from tests.factories import ingest_text

SEARCH = """
query($corpus: ID!, $q: String!, $k: Int, $mode: SearchMode, $docs: [ID!]) {
  search(corpusId: $corpus, query: $q, topK: $k, mode: $mode, documentIds: $docs) {
    score passage { id text page document { id title } }
  }
}"""


@pytest.mark.parametrize("mode", ["HYBRID", "LEXICAL"])
def test_search_ranks_as_the_selector_does(gql, corpus, samples, mode):
    hits = gql.data(SEARCH, {"corpus": gid("Corpus", corpus.pk), "q": "liability cap", "k": 3, "mode": mode})
    expected = passage_search(corpus=corpus, query="liability cap", top_k=3, mode=mode.lower())
    assert [h["passage"]["id"] for h in hits["search"]] == [gid("Passage", h.passage.pk) for h in expected]
    assert [h["score"] for h in hits["search"]] == pytest.approx([h.score for h in expected])
    assert hits["search"][0]["passage"]["document"]["title"] == samples[0].title


def test_search_within_chosen_documents(gql, corpus, samples):
    variables = {
        "corpus": gid("Corpus", corpus.pk),
        "q": "agreement",
        "docs": [gid("Document", samples[1].pk)],
    }
    hits = gql.data(SEARCH, variables)["search"]
    assert hits and {h["passage"]["document"]["id"] for h in hits} == {gid("Document", samples[1].pk)}


def test_a_shared_corpus_is_searchable_and_another_users_is_not_found(gql, other_gql, user, corpus, samples):
    variables = {"corpus": gid("Corpus", corpus.pk), "q": "liability"}
    status, body = without_locations(other_gql(SEARCH, variables))
    assert status == 200 and body["errors"][0]["extensions"]["code"] == "corpus_not_found"
    assert body["data"] is None
    corpus_share(user=user, corpus=corpus, username="bob")
    assert other_gql.data(SEARCH, variables)["search"]


@pytest.mark.parametrize(
    ("variables", "code"),
    [
        ({"k": 0}, "invalid_top_k"),
        ({"k": 501}, "invalid_top_k"),
        ({"q": "x" * 5000}, "query_too_long"),
        ({"docs": ["not-an-id"]}, "invalid_id"),
    ],
)
def test_bad_arguments_are_errors_with_codes(gql, corpus, samples, variables, code):
    status, body = gql(SEARCH, {"corpus": gid("Corpus", corpus.pk), "q": "liability", **variables})
    assert status == 200 and [e["extensions"]["code"] for e in body["errors"]] == [code]


def test_a_document_of_another_corpus_is_an_error_not_an_empty_list(gql, user, corpus, samples):
    # given a document of the user's other corpus
    other = corpus_create(creator=user, name="Other")
    elsewhere = ingest_text(other, "memo.md", "# Memo\n\nThe liability cap is one million dollars.").document
    # when the search is scoped to it and to one of this corpus's
    docs = [gid("Document", samples[0].pk), gid("Document", elsewhere.pk)]
    status, body = gql(SEARCH, {"corpus": gid("Corpus", corpus.pk), "q": "liability", "docs": docs})
    # then it is refused with the code startResearchReport gives
    assert status == 200 and [e["extensions"]["code"] for e in body["errors"]] == ["document_scope_invalid"]
    assert gid("Document", elsewhere.pk) in body["errors"][0]["message"]


def test_nothing_matching_is_an_empty_list(gql, corpus, samples):
    assert gql.data(SEARCH, {"corpus": gid("Corpus", corpus.pk), "q": "zyxwvutq"}) == {"search": []}
    assert Passage.objects.filter(corpus=corpus).exists()
