"""Findings grouped by the position their quotes take: average-link clustering of the quotes'
vectors (the embedding model's, or TF-IDF over their content words when there is none), each
group named by the run of words of its most central quote that the group shares most. Pure
numpy over plain lists; the offline writer and the salvage composer both use it."""

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from research.engine.text import content_words

# Quotes at least this similar (average link, cosine) take the same position. Measured on a
# ContractNLI report's 21 quotes (MiniLM): 0.62 put 19 in one group; 0.75 separated "upon written
# request", "on expiration", "oral information stays confidential".
EMBEDDING_THRESHOLD = 0.75
TFIDF_THRESHOLD = 0.3
MAX_GROUPS = 6
LABEL_WORDS = 6
# A label stays within one clause of its quote.
_CLAUSE_END = ".,;:)"
_PUNCTUATION = ".,;:()[]\"'\u201c\u201d\u2018\u2019"
# The group that pools the smallest clusters past max_groups: no one position, so no quote names it.
POOLED_LABEL = "other positions"
# What a word of the question weighs in a label: less than any word of the group's own.
_QUESTION_WORD_WEIGHT = 1e-3
# Modal and linking words say how, not what: never a position's name.
LABEL_FUNCTION_WORDS = frozenset("shall must may will would should upon hereby herein thereof".split())
_FUNCTION_STEMS = frozenset(content_words(" ".join(LABEL_FUNCTION_WORDS)))
# A label ending where a phrase ends is preferred to a better-scoring one cut mid-phrase while it
# keeps at least this share of that one's score.
WHOLE_PHRASE_SHARE = 0.5
# Words ending in -ly that are not adverbs: a label may end on them.
_LY_WORDS = frozenset("supply apply comply reply rely assembly family monopoly anomaly italy july".split())


@dataclass(frozen=True)
class Group:
    members: list[int]  # indices into the texts, most central first
    label: str


def group_texts(
    texts: Sequence[str],
    vectors: np.ndarray | None = None,
    *,
    max_groups: int = MAX_GROUPS,
    exclude: Sequence[str] = (),
) -> list[Group]:
    """Groups of `texts` (largest first); past `max_groups` the smallest are pooled into one.
    Words of `exclude` (the question's own) never name a group."""
    if not texts:
        return []
    if vectors is None:
        matrix, threshold = _tfidf(texts), TFIDF_THRESHOLD
    else:
        matrix, threshold = np.asarray(vectors, dtype=np.float64), EMBEDDING_THRESHOLD
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    similarity = matrix @ matrix.T
    clusters = _average_link(similarity, threshold)
    clusters.sort(key=lambda c: (-len(c), min(c)))
    pooled = len(clusters) > max_groups
    if pooled:
        clusters = [*clusters[: max_groups - 1], sorted(i for c in clusters[max_groups - 1 :] for i in c)]
    weights = _term_weights(texts)
    excluded = set(content_words(" ".join(exclude)))
    groups = []
    for number, cluster in enumerate(clusters):
        ordered = sorted(cluster, key=lambda i: (-float(similarity[i, cluster].mean()), i))
        if pooled and number == len(clusters) - 1:
            label = POOLED_LABEL
        else:
            label = _label(texts[ordered[0]], [texts[i] for i in cluster], weights, excluded)
        groups.append(Group(ordered, label))
    return groups


def _average_link(similarity: np.ndarray, threshold: float) -> list[list[int]]:
    n = len(similarity)
    clusters: dict[int, list[int]] = {i: [i] for i in range(n)}
    linkage = similarity.astype(np.float64).copy()
    np.fill_diagonal(linkage, -np.inf)
    active = np.ones(n, dtype=bool)
    while active.sum() > 1:
        masked = np.where(active[:, None] & active[None, :], linkage, -np.inf)
        flat = int(np.argmax(masked))
        a, b = divmod(flat, n)
        if masked[a, b] < threshold:
            break
        size_a, size_b = len(clusters[a]), len(clusters[b])
        # Lance-Williams update for average linkage: the merged cluster's mean similarity.
        merged = (linkage[a] * size_a + linkage[b] * size_b) / (size_a + size_b)
        linkage[a, :] = merged
        linkage[:, a] = merged
        linkage[a, a] = -np.inf
        active[b] = False
        clusters[a] = clusters[a] + clusters.pop(b)
    return [sorted(members) for members in clusters.values()]


def _tfidf(texts: Sequence[str]) -> np.ndarray:
    documents = [Counter(content_words(t)) for t in texts]
    vocabulary = sorted({term for d in documents for term in d})
    index = {term: i for i, term in enumerate(vocabulary)}
    frequency = Counter(term for d in documents for term in d)
    matrix = np.zeros((len(texts), max(1, len(vocabulary))), dtype=np.float64)
    for row, counts in enumerate(documents):
        for term, count in counts.items():
            matrix[row, index[term]] = (1 + math.log(count)) * math.log(1 + len(texts) / frequency[term])
    return matrix


def _term_weights(texts: Sequence[str]) -> dict[str, float]:
    frequency = Counter(term for t in texts for term in set(content_words(t)))
    return {term: math.log(1 + len(texts) / count) for term, count in frequency.items()}


def _label(central: str, members: Sequence[str], weights: dict[str, float], excluded: set[str]) -> str:
    """The central quote's words as it says them: the run of at most LABEL_WORDS words, within
    one clause, whose words its group shares most and the others least ("return or destroy all
    copies", not a list of terms). Modal words weigh nothing; the question's own words (of
    `excluded`) next to nothing, enough to finish a phrase ("confidential materials") but never
    to name a group alone. 'other' where no word weighs."""
    in_group = Counter(term for m in members for term in set(content_words(m)))
    spoken = central.split()
    scores = []
    for word in spoken:
        cleaned = word.strip(_PUNCTUATION).lower().removesuffix("\u2019s").removesuffix("'s")
        stems = content_words(cleaned)
        if not stems or not cleaned.isalpha() or stems[0] in _FUNCTION_STEMS:
            scores.append(0.0)
        elif stems[0] in excluded:
            scores.append(_QUESTION_WORD_WEIGHT)
        else:
            scores.append(in_group.get(stems[0], 0) / len(members) * weights.get(stems[0], 0.0))
    # The best run that ends where a phrase does, else the best run at all.
    whole: tuple[float, tuple[int, int] | None] = (0.0, None)
    cut: tuple[float, tuple[int, int] | None] = (0.0, None)
    for start, score in enumerate(scores):
        if score <= 0:
            continue
        total = 0.0
        for end in range(start, min(start + LABEL_WORDS, len(spoken))):
            if end > start and spoken[end].startswith("("):
                break  # nor into a parenthesis
            total += scores[end]
            if scores[end] > 0:
                if total > cut[0]:
                    cut = (total, (start, end))
                if total > whole[0] and _phrase_ends(spoken, end):
                    whole = (total, (start, end))
            if spoken[end][-1] in _CLAUSE_END:
                break
    score, span = whole if whole[1] is not None and whole[0] >= WHOLE_PHRASE_SHARE * cut[0] else cut
    if span is None or score < 2 * LABEL_WORDS * _QUESTION_WORD_WEIGHT:
        return "other"
    return " ".join(spoken[span[0] : span[1] + 1]).strip(_PUNCTUATION)


def _phrase_ends(spoken: Sequence[str], end: int) -> bool:
    """Whether a label may stop after spoken[end]: not on an adverb ("all or substantially"),
    nor on a participle before the noun it qualifies ("prior written" consent)."""
    word = spoken[end].strip(_PUNCTUATION).lower()
    if word.endswith("ly") and len(word) > 4 and word not in _LY_WORDS:
        return False
    if end + 1 >= len(spoken) or spoken[end][-1] in _CLAUSE_END or not word.endswith(("ed", "en")):
        return True
    following = content_words(spoken[end + 1].strip(_PUNCTUATION).lower())
    return not following or following[0] in _FUNCTION_STEMS
