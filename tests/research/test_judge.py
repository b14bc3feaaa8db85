"""The offline document judge's decision on one question (pure: no database, no model)."""

from research.engine.judge import decide

QUESTION = "Which contracts let a party terminate without cause, for convenience?"
PASSAGES = [
    {
        "passage_id": 1,
        "document_id": 9,
        "is_heading": False,
        "lexical_score": 8.0,
        "text": "Either Party may terminate this Agreement for convenience upon ninety days prior "
        "written notice to the other Party. Fees paid are not refundable.",
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


def test_strong_evidence_addresses_the_question_with_a_verbatim_sentence_sharing_its_words():
    # when
    verdict = decide(_item())

    # then
    assert verdict["addresses"] is True
    assert verdict["passage_id"] == 1
    assert (
        verdict["quote"]
        == "Either Party may terminate this Agreement for convenience upon ninety days prior "
        "written notice to the other Party."
    )
    assert verdict["quote"] in PASSAGES[0]["text"]


def test_without_a_reference_the_bm25_share_alone_decides():
    # when the sweep had no feedback reference (no embedding model)
    strong = decide(_item(feedback_similarity=None))
    weak = decide(_item(feedback_similarity=None, best_scores_in_scope={"lexical": 20.0}))

    # then 8/8 of the best score addresses it, 8/20 does not
    assert strong["addresses"] is True
    assert weak == {"question": 0, "addresses": False}


def test_weak_evidence_does_not_address_the_question():
    # when the document's best passage scores far below the best in scope
    verdict = decide(_item(best_scores_in_scope={"lexical": 40.0}, feedback_similarity=0.7))

    # then
    assert verdict == {"question": 0, "addresses": False}


def test_the_dense_share_tips_a_borderline_document():
    # given a document whose BM25 share (7/8) and feedback similarity (0.55) average 0.71
    borderline = {"best_scores_in_scope": {"lexical": 8.0, "dense": 0.6}, "feedback_similarity": 0.55}
    near = _item(passages=[PASSAGES[0] | {"lexical_score": 7.0, "dense_score": 0.6}], **borderline)
    far = _item(passages=[PASSAGES[0] | {"lexical_score": 7.0, "dense_score": 0.3}], **borderline)

    # then its passage's vector as close to the question as the best in scope keeps it (0.76),
    # half as close turns it down (0.68 < 0.70)
    assert decide(near)["addresses"] is True
    assert decide(far) == {"question": 0, "addresses": False}


def test_a_document_without_vectors_is_judged_on_the_other_two_signals():
    # given a document still being embedded (its passages have no dense score) in a scope that has them
    item = _item(
        passages=[PASSAGES[0] | {"lexical_score": 7.0, "dense_score": None}], feedback_similarity=0.55
    )

    # then the BM25 share and the feedback similarity alone decide: (7/8 + 0.55) / 2 = 0.71
    assert decide(item)["addresses"] is True
    assert decide(item | {"feedback_similarity": 0.5})["addresses"] is False  # 0.69


def test_a_passage_a_researcher_quoted_is_read_but_adds_no_evidence_of_its_own():
    # given a document whose ranked passage is weak, and the passage a researcher quoted from it
    # (unscored: the document's own search did not rank it)
    quoted = {
        "passage_id": 2,
        "document_id": 9,
        "is_heading": False,
        "lexical_score": None,
        "dense_score": None,
        "quoted_by_researcher": True,
        "text": "Either Party may terminate this Agreement for convenience at any time.",
    }
    weak = [PASSAGES[0] | {"lexical_score": 2.0}, quoted]

    # when
    turned_down = decide(_item(passages=weak, feedback_similarity=0.5))
    addressed = decide(_item(passages=[PASSAGES[0], quoted]))

    # then the weak document stays turned down; a strong one may quote either passage verbatim
    assert turned_down == {"question": 0, "addresses": False}
    assert addressed["addresses"] is True
    assert addressed["passage_id"] in {1, 2}
    assert addressed["quote"] in {1: PASSAGES[0]["text"], 2: quoted["text"]}[addressed["passage_id"]]


def test_the_quote_comes_from_the_passage_the_scopes_scores_rank_highest():
    # given a document's two passages: one repeating the question's words in a recital, scored
    # low, and the clause itself, scored high
    recital = PASSAGES[0] | {
        "passage_id": 3,
        "lexical_score": 3.0,
        "dense_score": 0.2,
        "text": "The parties wish to agree when a party may terminate without cause, for convenience.",
    }
    clause = PASSAGES[0] | {
        "passage_id": 4,
        "lexical_score": 8.0,
        "dense_score": 0.6,
        "text": "Licensee may terminate this Agreement for convenience on thirty days notice.",
    }

    # when
    verdict = decide(_item(passages=[recital, clause]))

    # then the clause is quoted, though the recital shares more of the question's words
    assert verdict["addresses"] is True
    assert verdict["passage_id"] == 4
    assert verdict["quote"] == clause["text"]


def test_the_words_naming_the_documents_neither_choose_the_quote_nor_make_a_document_address_it():
    # given an agreement whose passage opens with its name and goes on to its audit clause
    text = (
        "Agreement 4 between Party A4 and Party B4.\n\n"
        "The Customer may audit the books and records of the Supplier once every five months."
    )
    passage = {"passage_id": 1, "document_id": 9, "is_heading": False, "lexical_score": 8.0, "text": text}
    question = "Which agreements have an audit right?"

    # when
    verdict = decide(_item(question=question, passages=[passage]))

    # then the quote is the audit clause, not the line sharing only "agreement" with the question
    assert (
        verdict["quote"]
        == "The Customer may audit the books and records of the Supplier once every five months."
    )

    # and a passage sharing only that word with the question quotes nothing
    named = {**passage, "text": "Agreement 4 between Party A4 and Party B4, made on the first of May."}
    assert decide(_item(question=question, passages=[named])) == {"question": 0, "addresses": False}
