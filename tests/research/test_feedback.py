"""Tests of research.engine.feedback: candidate sentences and the relevance-feedback reference."""

import math

import numpy as np
import pytest

from research.engine.feedback import (
    QUESTION_WEIGHT,
    SENTENCES_PER_DOCUMENT,
    Reference,
    candidate_sentences,
    reference,
    similarity,
)

QUESTION = "When may the supplier terminate the agreement for convenience?"
PASSAGES = [
    {
        "passage_id": 1,
        "text": "Termination of the agreement by the supplier for convenience",
        "is_heading": True,
    },
    {
        "passage_id": 2,
        "text": (
            "The supplier may terminate this agreement for convenience on notice. "
            "Fees are payable monthly in arrears by the customer. "
            "The supplier may terminate the agreement upon material breach."
        ),
        "is_heading": False,
    },
    {
        "passage_id": 3,
        "text": (
            "Either party may terminate for convenience with ninety days notice. "
            "Invoices are due within thirty days of their receipt."
        ),
    },
]


def _at(degrees: float) -> np.ndarray:
    """The unit vector of the plane at `degrees` from the x axis."""
    return np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees))])


def test_candidate_sentences_are_the_body_sentences_sharing_most_question_words():
    # when
    candidates = candidate_sentences(QUESTION, PASSAGES)

    # then the heading (which shares every word) is skipped, and the sentences sharing 4, 3 and 2
    # of the question's words (supplier, terminate, agreement, convenience) come before those
    # sharing none, whatever their passage's rank
    assert SENTENCES_PER_DOCUMENT == 3
    assert candidates == [
        (2, "The supplier may terminate this agreement for convenience on notice."),
        (2, "The supplier may terminate the agreement upon material breach."),
        (3, "Either party may terminate for convenience with ninety days notice."),
    ]


def test_candidate_sentences_are_verbatim_substrings_of_their_passages():
    # given
    texts = {p["passage_id"]: p["text"] for p in PASSAGES}

    # when
    candidates = candidate_sentences(QUESTION, PASSAGES)

    # then
    assert len(candidates) == 3
    for passage_id, sentence in candidates:
        assert sentence in texts[passage_id]


def test_candidate_sentences_break_ties_by_passage_rank_then_position():
    # given sentences that share no question word at all
    passages = [
        {
            "passage_id": 8,
            "text": "Invoices are due within thirty days of receipt. Fees are payable monthly in arrears.",
        },
        {"passage_id": 9, "text": "The customer shall keep accurate records of all usage."},
    ]

    # when
    candidates = candidate_sentences(QUESTION, passages)

    # then
    assert candidates == [
        (8, "Invoices are due within thirty days of receipt."),
        (8, "Fees are payable monthly in arrears."),
        (9, "The customer shall keep accurate records of all usage."),
    ]


def test_candidate_sentences_of_headings_or_fragments_only_are_none():
    # given a heading and a passage too short to be a statement
    passages = [PASSAGES[0], {"passage_id": 4, "text": "Termination for convenience."}]

    # when / then
    assert candidate_sentences(QUESTION, passages) == []


def test_reference_is_the_unit_mean_of_each_documents_row_most_like_the_query():
    # given a query along x; document A's rows at 0 and 40 degrees, document B's at 60 and 100
    query = _at(0)
    document_a = np.array([_at(0), _at(40)])
    document_b = np.array([_at(60), _at(100)])

    # when
    ref = reference(query, [document_a, document_b])

    # then A gives its row at 0 degrees and B its row at 60: the reference lies at 30 degrees
    # (the question itself weighs nothing)
    assert QUESTION_WEIGHT == 0.0
    assert ref is not None
    assert ref.vector == pytest.approx(_at(30))
    assert float(np.linalg.norm(ref.vector)) == pytest.approx(1.0)
    # the best similarity is A's row at 40 degrees (10 from the reference), which was not picked
    assert ref.best == pytest.approx(math.cos(math.radians(10)))


def test_reference_ignores_documents_without_rows():
    # given
    query = _at(0)
    documents = [np.array([_at(0), _at(40)]), np.zeros((0, 2)), np.array([_at(60), _at(100)])]

    # when
    ref = reference(query, documents)

    # then
    assert ref is not None
    assert ref.vector == pytest.approx(_at(30))
    assert ref.best == pytest.approx(math.cos(math.radians(10)))


def test_reference_of_no_rows_is_none():
    assert reference(_at(0), []) is None
    assert reference(_at(0), [np.zeros((0, 2)), np.zeros((0, 2))]) is None


def test_similarity_is_the_best_rows_similarity_relative_to_the_references_best():
    # given a reference at 30 degrees whose best row reaches cos(10 degrees)
    ref = Reference(vector=_at(30), best=math.cos(math.radians(10)))

    # when
    as_good = similarity(np.array([_at(90), _at(20)]), ref)
    lesser = similarity(np.array([_at(-30), _at(75)]), ref)

    # then
    assert as_good == pytest.approx(1.0)
    assert lesser == pytest.approx(math.cos(math.radians(45)) / math.cos(math.radians(10)))


def test_similarity_of_no_rows_is_zero():
    # given
    ref = Reference(vector=_at(30), best=0.9)

    # when / then
    assert similarity(np.zeros((0, 2)), ref) == 0.0


def test_similarity_to_a_reference_no_row_resembles_is_zero():
    # given a reference whose best similarity is not positive
    ref = Reference(vector=_at(30), best=0.0)

    # when / then
    assert similarity(np.array([_at(30)]), ref) == 0.0
