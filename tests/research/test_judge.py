"""The offline document judge's decision on one question (pure: no database, no model)."""

from research.engine.judge import decide

QUESTION = "Which contracts let a party terminate without cause, for convenience?"
PASSAGES = [
    {
        "passage_id": 1,
        "document_id": 9,
        "is_heading": False,
        "lexical_score": 8.0,
        "text": "Either Party may terminate this Agreement at any time, without prejudice to its other "
        "rights, if the other Party is in breach. Either Party may terminate this Agreement for "
        "convenience upon ninety days prior written notice to the other Party.",
    },
]


def _item(**extra):
    return {
        "index": 0,
        "question": QUESTION,
        "passages": PASSAGES,
        "best_scores_in_scope": {"lexical": 8.0, "dense": 0.6},
        "feedback_similarity": 0.9,
    } | extra


def test_the_quote_is_the_sentence_the_evidence_was_measured_on():
    # given the document's sentence most like what the best documents say
    like_best = PASSAGES[0]["text"].split(". ", 1)[1]

    # when
    verdict = decide(_item(sentence_like_best_documents={"passage_id": 1, "text": like_best}))

    # then that sentence is quoted, not the first one sharing the most words
    assert verdict["addresses"] is True
    assert verdict["passage_id"] == 1
    assert verdict["quote"] == like_best
    assert verdict["quote"] in PASSAGES[0]["text"]


def test_without_a_reference_the_quote_shares_the_most_of_the_questions_words():
    # when the sweep had no feedback reference (no embedding model)
    verdict = decide(_item(feedback_similarity=None, sentence_like_best_documents=None))

    # then a verbatim sentence sharing the question's words is quoted
    assert verdict["addresses"] is True
    assert verdict["quote"] in PASSAGES[0]["text"]
    assert "terminate" in verdict["quote"]


def test_a_sentence_sharing_no_word_with_the_question_is_not_quoted():
    # given a "most like the best" sentence that shares no word with the question
    unrelated = {"passage_id": 1, "text": "Meetings are held quarterly to review the sales forecast."}

    # when
    verdict = decide(_item(sentence_like_best_documents=unrelated))

    # then the judge falls back to a sentence that does
    assert verdict["addresses"] is True
    assert verdict["quote"] != unrelated["text"]
    assert verdict["quote"] in PASSAGES[0]["text"]


def test_weak_evidence_does_not_address_the_question():
    # when the document's best passage scores far below the best in scope
    verdict = decide(_item(best_scores_in_scope={"lexical": 40.0}, feedback_similarity=0.7))

    # then
    assert verdict == {"question": 0, "addresses": False}
