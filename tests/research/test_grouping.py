"""Tests of research.engine.grouping: quotes grouped by the position they take."""

import numpy as np

from research.engine.grouping import POOLED_LABEL, group_texts


def _in_plane(axis_a: int, axis_b: int, degrees: float, dim: int = 4) -> np.ndarray:
    """The unit vector at `degrees` from axis_a towards axis_b."""
    vector = np.zeros(dim)
    vector[axis_a] = np.cos(np.radians(degrees))
    vector[axis_b] = np.sin(np.radians(degrees))
    return vector


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float64)
    return vector / np.linalg.norm(vector)


def test_two_clusters_of_vectors_are_the_two_groups_largest_first_most_central_first():
    # given four vectors near the x axis (at 20, 0, -25 and 10 degrees) and three near the y axis
    # (at 5, -20 and 25 degrees), in orthogonal planes, interleaved
    vectors = np.array(
        [
            _in_plane(1, 3, 5),
            _in_plane(0, 2, 20),
            _in_plane(1, 3, -20),
            _in_plane(0, 2, 0),
            _in_plane(0, 2, -25),
            _in_plane(1, 3, 25),
            _in_plane(0, 2, 10),
        ]
    )
    texts = [f"quote number {i}" for i in range(7)]

    # when
    groups = group_texts(texts, vectors)

    # then the larger cluster comes first although the smaller holds index 0, and each lists its
    # members most central first (the highest mean similarity to the cluster's members)
    assert [g.members for g in groups] == [[3, 6, 1, 4], [0, 5, 2]]


def test_without_vectors_texts_sharing_rare_words_are_grouped_by_tfidf():
    # given three quotes about returning materials and two about court orders, interleaved
    texts = [
        "The recipient shall return or destroy all confidential materials.",
        "The recipient shall notify the disclosing party of any court order.",
        "On request the recipient must return or destroy the confidential materials.",
        "If a court order compels disclosure, notify the disclosing party promptly.",
        "Confidential materials shall be returned or destroyed within ten days.",
    ]

    # when
    groups = group_texts(texts)

    # then
    assert [sorted(g.members) for g in groups] == [[0, 2, 4], [1, 3]]


def test_past_max_groups_the_smallest_clusters_are_pooled_into_the_last_group():
    # given clusters of three (near x), two (near y) and two single vectors (z and w)
    vectors = np.array(
        [
            _in_plane(1, 2, 5, dim=6),  # y
            _in_plane(0, 4, 10, dim=6),  # x
            [0, 0, 1, 0, 0, 0],  # z alone
            _in_plane(0, 4, 0, dim=6),  # x
            _in_plane(1, 2, -5, dim=6),  # y
            _in_plane(0, 4, -10, dim=6),  # x
            [0, 0, 0, 1, 0, 0],  # w alone
        ]
    )
    texts = [f"quote number {i}" for i in range(7)]
    unlimited = group_texts(texts, vectors)

    # when
    groups = group_texts(texts, vectors, max_groups=3)

    # then
    assert len(unlimited) == 4
    assert len(groups) == 3
    assert [sorted(g.members) for g in groups] == [[1, 3, 5], [0, 4], [2, 6]]
    assert sorted(i for g in groups for i in g.members) == list(range(7))


def test_max_groups_of_two_pools_every_cluster_but_the_largest():
    # given the same kind of clusters: three near x, two near y, one alone
    vectors = np.array(
        [
            _in_plane(0, 3, 0),
            _in_plane(1, 3, 5),
            _in_plane(0, 3, 10),
            [0, 0, 1, 0],
            _in_plane(1, 3, -5),
            _in_plane(0, 3, -10),
        ]
    )
    texts = [f"quote number {i}" for i in range(6)]

    # when
    groups = group_texts(texts, vectors, max_groups=2)

    # then
    assert [sorted(g.members) for g in groups] == [[0, 2, 5], [1, 3, 4]]
    assert sorted(i for g in groups for i in g.members) == list(range(6))


def test_the_label_is_the_central_quotes_run_of_words_its_group_shares_most():
    # given a group {0, 1, 2} whose most central text is 0, and a text apart
    texts = [
        "The Supplier shall return or destroy all copies, at its own cost.",
        "return or destroy all copies",
        "destroy all copies promptly",
        "indemnity supplier",
    ]
    vectors = np.array([_unit(1, 0, 0), _unit(1, 0.3, 0), _unit(1, -0.3, 0), _unit(0, 0, 1)])

    # when
    groups = group_texts(texts, vectors)

    # then the label is the central text's words as it says them, the run (at most six words,
    # within one clause: not past "copies,") scoring highest by share in the group times
    # log(1 + 4 / texts holding the word): "return" 2/3*ln 3, "destroy" and "copies"
    # 3/3*ln(7/3), against "Supplier shall return or destroy" (supplier only 1/3*ln 3, "shall"
    # a modal that weighs nothing); the text apart is named by its own words
    assert [g.members for g in groups] == [[0, 1, 2], [3]]
    assert groups[0].label == "return or destroy all copies"
    assert groups[1].label == "indemnity supplier"


def test_the_pooled_smallest_groups_are_named_as_no_one_position():
    # given four quotes apart from each other, grouped into at most three
    texts = ["cap liability", "indemnity supplier", "governing law", "notice period"]
    vectors = np.array([_unit(1, 0, 0, 0), _unit(0, 1, 0, 0), _unit(0, 0, 1, 0), _unit(0, 0, 0, 1)])

    # when
    groups = group_texts(texts, vectors, max_groups=3)

    # then the last pools the two smallest, and no one quote names it
    assert [g.label for g in groups] == ["cap liability", "indemnity supplier", POOLED_LABEL]
    assert sorted(groups[2].members) == [2, 3]


def test_texts_of_no_content_words_share_nothing_and_are_labelled_other():
    # when
    groups = group_texts(["of the and", "of the and"])

    # then their TF-IDF vectors are zero, so they are not similar and stay apart
    assert [(g.members, g.label) for g in groups] == [([0], "other"), ([1], "other")]


def test_no_texts_make_no_groups():
    assert group_texts([]) == []
    assert group_texts([], np.zeros((0, 3))) == []


def test_a_label_ends_where_a_phrase_does_not_on_a_modifier():
    # given a group saying "a sale of all or substantially all of its assets" and a group apart
    # saying "may assign without consent"
    texts = [
        "Either party may assign without consent upon a sale of all or substantially all of its assets.",
        "upon a sale of all or substantially all of its assets",
        "on a sale of all or substantially all the assets",
        "neither party may assign without the other party's consent",
        "no party may assign without consent",
    ]
    vectors = np.array([_unit(1, 0), _unit(1, 0.2), _unit(1, -0.2), _unit(0, 1), _unit(0.1, 1)])

    # when
    groups = group_texts(texts, vectors)

    # then the first label does not stop on the adverb ("sale of all or substantially" scores
    # higher but leaves it dangling): it runs on to the noun it qualifies
    assert [sorted(g.members) for g in groups] == [[0, 1, 2], [3, 4]]
    assert groups[0].label == "substantially all of its assets"
    assert groups[1].label == "party may assign without consent"
