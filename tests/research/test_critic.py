"""The offline critic's review of a draft (pure: no database, no model)."""

from research.engine.critic import review


def test_a_question_without_findings_goes_back_to_research_unless_asked_in_the_negative():
    # given two swept questions with no finding: the second asked in the negative, which the
    # documents without it answer
    data = {
        "draft": "# Report",
        "rubric": "",
        "findings": [],
        "questions": [
            {"index": 0, "question": "Which contracts cap liability?", "swept": True},
            {
                "index": 1,
                "question": "Which contracts have any audit right?",
                "swept": True,
                "asked": "Which contracts have no audit right?",
            },
        ],
    }

    # when
    critique = review(data)

    # then only the first is a gap
    assert [(g["question"], g["reason"]) for g in critique["gaps"]] == [
        (0, "no finding answers this sub-question")
    ]
    assert critique["satisfied"] is False
