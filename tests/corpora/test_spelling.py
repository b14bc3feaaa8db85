"""A request's misspelt words corrected to the corpus's (corpora.retrieval.spelling)."""

import pytest

from corpora.retrieval.spelling import MIN_PASSAGES, corrected_text, corrections
from corpora.selectors import spelling_corrections
from research.engine.text import REQUEST_WORDS
from tests.factories import ingest_text

VOCABULARY = {
    "receiving": 40,
    "information": 90,
    "employees": 30,
    "employers": 3,
    "confidential": 80,
    "loyalty": 5,
    "untapped": 2,
    "indemnify": 12,
    "rare": 1,
    "supersedes": 4,
}


def _pairs(text: str, vocabulary=VOCABULARY) -> list[list[str]]:
    return [c.as_pair() for c in corrections(text, vocabulary=vocabulary, request_words=REQUEST_WORDS)]


def test_misspelt_words_become_the_nearest_request_or_corpus_words():
    text = "wich ndas allow the recieving party to share confidential informaton with its employes?"
    found = _pairs(text)
    # "wich" is one edit from both "which" and "with": question words come first; "employes" is
    # one edit from "employees" and "employers": the corpus's more used; "ndas" is a request word
    assert found == [
        ["wich", "which"],
        ["recieving", "receiving"],
        ["informaton", "information"],
        ["employes", "employees"],
    ]
    corrected = corrected_text(text, corrections(text, vocabulary=VOCABULARY, request_words=REQUEST_WORDS))
    assert corrected == (
        "which ndas allow the receiving party to share confidential information with its employees?"
    )


@pytest.mark.parametrize(
    "text",
    [
        # English words, even with a corpus word one edit away, and prefixed ones
        "What royalty rate applies to uncapped claims?",
        # names: capitalised within a sentence, acronyms, words with digits
        "Does the Recieving Corp agreement mention INFORMATON or employes2?",
        # a word no corpus word is near
        "Which agreements mention cryptocurrency?",
        # short words
        "Is teh fee due?",
        # another form of a corpus word the lexicon lacks ("supersedes"), by inflection rules
        "Which policies are superseded?",
    ],
)
def test_words_that_are_not_misspellings_of_the_corpus_are_kept(text):
    assert _pairs(text) == []


def test_a_capitalised_first_word_is_corrected_and_keeps_its_capital():
    assert _pairs("Wich agreements protect confidential informaton?") == [
        ["Wich", "Which"],
        ["informaton", "information"],
    ]
    # every occurrence is corrected, whichever was found first; in capitals it is an acronym
    assert corrected_text("Wich one, wich two", _to(["Wich", "Which"])) == "Which one, which two"
    assert corrected_text("wich one? Wich WICH", _to(["wich", "which"])) == "which one? Which WICH"


def test_a_word_few_passages_hold_is_no_correction():
    assert VOCABULARY["rare"] < MIN_PASSAGES
    assert _pairs("Which agreements say rarw?") == []


def test_only_whole_words_are_replaced():
    assert corrected_text("informaton informatonal", _to(["informaton", "information"])) == (
        "information informatonal"
    )


def _to(pair):
    from corpora.retrieval.spelling import Correction

    return [Correction(*pair)]


@pytest.mark.django_db
def test_a_corpus_corrects_to_its_own_words(corpus):
    # given a corpus whose passages say "indemnification" (twice) and "arbitration" (once)
    ingest_text(corpus, "a.txt", "The indemnification obligations survive. Disputes go to arbitration.\n")
    ingest_text(corpus, "b.txt", "Each party's indemnification obligations are capped.\n")
    # then a misspelling of a word it holds twice is corrected; of one it holds once, not
    found = spelling_corrections(
        corpus=corpus, text="what are the indemnifcation and arbitraton terms?", request_words=REQUEST_WORDS
    )
    assert [c.as_pair() for c in found] == [["indemnifcation", "indemnification"]]
