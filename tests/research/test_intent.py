"""Tests of research.engine.intent: collection questions and the fast or deep strategy."""

import pytest

from research.constants import DEPTH_DEEP, DEPTH_SHALLOW, DEPTH_STANDARD
from research.engine.intent import document_words, is_collection_question, strategy_for
from research.models import ReportStrategy


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.RESEARCH_COLLECTION_MIN_DOCUMENTS = 10
    settings.RESEARCH_FAST_PATH_MAX_WORDS = 12


@pytest.mark.parametrize(
    "text",
    [
        "Which of these agreements allow assignment?",
        "Do the contracts permit subcontracting?",
        "How do they differ on governing law?",
        "What does each contract say about audits?",
        "Is remote work allowed under every policy?",
        "How many leases renew automatically?",
        "I need to know which agreements have exclusivity provisions",
    ],
)
def test_collection_markers_make_a_collection_question(text):
    # when asked of a collection of only two documents
    collection = is_collection_question(text, documents=2)

    # then the wording alone makes it a question about the collection
    assert collection is True


@pytest.mark.parametrize(
    "text",
    [
        "List the agreements governed by New York law",
        "Show me the NDAs that allow disclosure to advisers",
        "Identify agreements that require insurance",
        "Give me all NDAs with a residuals clause",
        "Name the supply contracts that include a non-compete",
        "Contracts that renew automatically",
    ],
)
def test_a_request_naming_the_documents_in_the_plural_is_a_collection_question(text):
    # when put as a request rather than a question, to a collection of only two documents
    collection = is_collection_question(text, documents=2)
    strategy = strategy_for(text, depth=DEPTH_STANDARD, documents=2)

    # then it asks for the collection's documents, as "Which agreements ...?" does
    assert collection is True
    assert strategy == ReportStrategy.DEEP


def test_a_request_is_a_collection_question_from_the_minimum_documents():
    # given a request naming a part of the documents, not the documents (the minimum is 10)
    request = "Summarize the termination provisions"

    # then, as a question would be, it is about the collection only when put to one
    assert is_collection_question(request, documents=9) is False
    assert is_collection_question(request, documents=10) is True


def test_a_request_for_one_fact_of_one_document_takes_the_fast_path():
    request = "Find the notice period in the lease"
    assert is_collection_question(request, documents=3) is False
    assert strategy_for(request, depth=DEPTH_STANDARD, documents=3) == ReportStrategy.FAST


@pytest.mark.parametrize(
    "text",
    [
        "Governing law versus jurisdiction",
        "Compare the indemnity caps",
        "Where do the terms differ?",
        "What changed between these two versions of the expense policy?",
        "How has the remote work policy changed since 2022?",
    ],
)
def test_comparison_words_make_a_collection_question(text):
    assert is_collection_question(text, documents=0) is True


@pytest.mark.parametrize(
    "text", ["confidentiality obligations", "What is the notice period for termination?"]
)
def test_a_topic_or_a_single_fact_question_to_few_documents_is_not_a_collection_question(text):
    assert is_collection_question(text, documents=3) is False


def test_an_interrogative_question_is_a_collection_question_from_the_minimum_documents(settings):
    # given a collection is 10 documents or more
    settings.RESEARCH_COLLECTION_MIN_DOCUMENTS = 10
    question = "May the receiving party disclose information to its advisers?"

    # when it is put to 9 and to 10 documents
    below = is_collection_question(question, documents=9)
    at = is_collection_question(question, documents=10)

    # then only the collection of 10 makes it a question about the collection
    assert below is False
    assert at is True


def test_a_topic_is_not_a_collection_question_however_many_documents():
    # a noun phrase is not interrogative, so a large collection does not make it one
    assert is_collection_question("confidentiality obligations", documents=500) is False


def test_a_topic_asked_as_a_question_is_a_collection_question_from_the_minimum_documents(settings):
    settings.RESEARCH_COLLECTION_MIN_DOCUMENTS = 5
    assert is_collection_question("non-solicit?", documents=4) is False
    assert is_collection_question("non-solicit?", documents=61) is True


def test_a_request_for_research_is_about_the_collection_from_the_minimum_documents(settings):
    # given a collection is 5 documents or more, and a request naming topics, not asking
    settings.RESEARCH_COLLECTION_MIN_DOCUMENTS = 5
    request = "Please research governing law, termination for convenience and limitation of liability"

    # then each topic is wanted across the collection's documents, not from a few passages
    assert is_collection_question(request, documents=5) is True
    assert is_collection_question(request, documents=4) is False


@pytest.mark.parametrize("depth", [DEPTH_STANDARD, DEPTH_SHALLOW])
def test_a_short_single_question_to_few_documents_takes_the_fast_path(depth):
    # when
    strategy = strategy_for("What is the notice period for termination?", depth=depth, documents=3)

    # then
    assert strategy == ReportStrategy.FAST
    assert strategy == "fast"


def test_deep_depth_is_always_deep():
    # given the question the fast path takes at standard depth
    question = "What is the notice period for termination?"

    # when
    strategy = strategy_for(question, depth=DEPTH_DEEP, documents=1)

    # then
    assert strategy == ReportStrategy.DEEP
    assert strategy == "deep"


def test_a_question_longer_than_the_fast_path_limit_is_deep(settings):
    # given a limit of 5 words and questions of 5 and 6 words
    settings.RESEARCH_FAST_PATH_MAX_WORDS = 5

    # when
    five = strategy_for("What is the notice period?", depth=DEPTH_STANDARD, documents=3)
    six = strategy_for("What is the notice period here?", depth=DEPTH_STANDARD, documents=3)

    # then
    assert five == ReportStrategy.FAST
    assert six == ReportStrategy.DEEP


@pytest.mark.parametrize(
    "prompt",
    [
        # two question marks
        "What is the notice period??",
        # a newline inside the question
        "What is\nthe notice period?",
        # research requests
        "research the indemnity clause",
        "deep dive into indemnities",
        "report on confidentiality",
        # an enumeration of topics
        "liability, termination and insurance",
        # a collection question
        "Which of these agreements allow assignment?",
    ],
)
def test_markers_of_research_make_a_short_prompt_deep(prompt):
    # a short prompt to three documents, which the fast path would take without its marker
    assert strategy_for(prompt, depth=DEPTH_STANDARD, documents=3) == ReportStrategy.DEEP


def test_a_single_question_to_a_collection_is_deep(settings):
    # given the single fact question the fast path takes with 9 documents
    settings.RESEARCH_COLLECTION_MIN_DOCUMENTS = 10
    question = "What is the notice period for termination?"

    # when
    few = strategy_for(question, depth=DEPTH_STANDARD, documents=9)
    many = strategy_for(question, depth=DEPTH_STANDARD, documents=10)

    # then put to a collection it is researched in depth
    assert few == ReportStrategy.FAST
    assert many == ReportStrategy.DEEP


def test_a_trailing_newline_is_not_a_second_line():
    assert (
        strategy_for("What is the notice period?\n", depth=DEPTH_STANDARD, documents=3) == ReportStrategy.FAST
    )


@pytest.mark.parametrize(
    "question",
    [
        "What is the governing law of the supply agreement?",
        "What does the agreement say about termination?",
        "What is the notice period in the contract?",
    ],
)
def test_a_question_naming_one_document_in_the_singular_is_not_a_collection_question(question):
    # given a question about one agreement, phrased like "What law governs the supply agreement?",
    # which is not a collection question, put to two documents
    assert is_collection_question("What law governs the supply agreement?", documents=2) is False

    # when
    collection = is_collection_question(question, documents=2)
    strategy = strategy_for(question, depth=DEPTH_STANDARD, documents=2)

    # then, as the module says, only plural nouns (or each, every, all, any) name the collection
    assert collection is False
    assert strategy == ReportStrategy.FAST


def test_document_words_are_the_words_that_name_the_collections_documents():
    assert document_words("Which contracts require a party to keep insurance, per agreement?") == [
        "agreement",
        "contracts",
    ]
    assert document_words("What is the insurance limit?") == []


def test_the_verb_of_a_request_for_documents_is_one_of_its_document_words():
    # "name" asks which documents at the start of a request, and is what they say after it
    assert document_words("Name the contracts that include a non-compete") == ["contracts", "name"]
    assert document_words("Show me the NDAs that allow disclosure") == ["me", "ndas", "show"]
    assert document_words("Which contracts name third-party beneficiaries?") == ["contracts"]


def test_the_words_framing_the_answer_are_document_words():
    # a comparison and "how long" say how to answer, not what a document holds
    assert document_words("How do these agreements differ on how long confidentiality lasts?") == [
        "agreements",
        "differ",
        "long",
    ]
    assert document_words("Compare the non-solicitation provisions across the NDAs") == [
        "across",
        "compare",
        "ndas",
        "provisions",
    ]
    assert document_words("May the parties extend the term so long as both agree?") == []
