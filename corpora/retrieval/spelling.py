"""A request's misspelt words, corrected to the words of the corpus it is asked of.

"wich ndas allow the recieving party to share confidential informaton?" matches nothing the
agreements say ("recieving", "informaton") and reads as no question about the collection
("wich"), so it was answered from one passage. Corrected, it is "which ndas allow the receiving
party to share confidential information?", and is researched as typed correctly would be.

A word is corrected only when it is none of: a word of the corpus, an English word in any of
its forms (lemminflect's lexicon: "terminating" is not taken for the corpus's "terminated"), a
word requests are made of (the caller's `request_words`: question words, "agreements", "clause"
...), a name (capitalised within a sentence, all capitals, or holding a digit), or shorter than
MIN_LENGTH. It becomes the nearest word (Damerau-Levenshtein, at most 1 edit for a word of up to
5 letters, 2 above) of the request words and the corpus's words that MIN_PASSAGES passages hold;
of several equally near, a request word in the caller's order ("which" before "with"), then the
corpus's most used ("employes" is "employees" in NDAs, which say it more than "employers"). A
word with no such neighbour stays as typed ("cryptocurrency" asked of NDAs misspells nothing)."""

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lemminflect import getAllLemmas, getAllLemmasOOV
from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

MIN_LENGTH = 4
# A word the corpus holds in fewer passages is no correction (a misspelling in a contract, an
# OCR slip, a name).
MIN_PASSAGES = 2
SHORT_WORD_LENGTH = 5

# Prefixes that make English words of English words, whether or not the lexicon lists the result.
_PREFIXES = "un non re pre sub co anti multi over under inter super counter mis dis semi post cross".split()
_APOSTROPHES = "'\u2019"
_WORD = re.compile(rf"[^\W_]+(?:[{_APOSTROPHES}][^\W_]+)?|\S")
_SENTENCE_END = re.compile(r"[.!?:;\n]")


@dataclass(frozen=True)
class Correction:
    typed: str
    corrected: str

    def as_pair(self) -> list[str]:
        return [self.typed, self.corrected]


def corrections(
    text: str,
    *,
    vocabulary: Mapping[str, int],
    request_words: Sequence[str],
) -> list[Correction]:
    """The corrections of `text`'s misspelt words, in their order (each typed word once).
    `vocabulary`: the corpus's words and how many passages hold each; `request_words`: words
    requests are made of, best first where a typo is equally near two of them."""
    request_rank = {w: i for i, w in enumerate(dict.fromkeys(w.lower() for w in request_words))}
    choices: list[str] | None = None
    found: dict[str, Correction] = {}
    for word in _candidates(text):
        lower = word.lower()
        if lower in found or lower in request_rank or lower in vocabulary or is_english(lower):
            continue
        if choices is None:
            choices = list(request_rank) + [
                w for w, n in vocabulary.items() if n >= MIN_PASSAGES and w not in request_rank
            ]
        near = _nearest(lower, choices, vocabulary, request_rank)
        if near is not None and not _forms_of_one_word(lower, near):
            found[lower] = Correction(word, near.capitalize() if word[0].isupper() else near)
    return list(found.values())


def corrected_text(text: str, found: Sequence[Correction]) -> str:
    """`text` with each corrected word replaced wherever it stands as a whole word, in lower
    case or capitalised ("Wich one, wich two": both); in capitals it is an acronym and stays."""

    def replace(match: re.Match[str], corrected: str) -> str:
        typed = match.group()
        if typed.islower():
            return corrected
        if typed[0].isupper() and typed[1:].islower():
            return corrected.capitalize()
        return typed

    for correction in found:
        corrected = correction.corrected.lower()
        text = re.sub(
            rf"(?<![^\W\d_]){re.escape(correction.typed)}(?![^\W\d_])",
            lambda match, corrected=corrected: replace(match, corrected),
            text,
            flags=re.IGNORECASE,
        )
    return text


def _candidates(text: str) -> list[str]:
    """The words that may be misspelt: lower case ones, and a capitalised one opening a
    sentence; not names ("Cheetah" within a sentence), acronyms or words with digits."""
    found = []
    opening = True
    for match in _WORD.finditer(text):
        token = match.group()
        if not token[0].isalpha():
            opening = opening or bool(_SENTENCE_END.match(token))
            continue
        first = opening
        opening = False
        if len(token) < MIN_LENGTH or token.isupper() or not token.isalpha():
            continue
        if token[0].isupper() and not (first and token[1:].islower()):
            continue
        if not token[1:].islower():
            continue
        found.append(token)
    return found


def _nearest(
    word: str, choices: list[str], vocabulary: Mapping[str, int], request_rank: Mapping[str, int]
) -> str | None:
    limit = 1 if len(word) <= SHORT_WORD_LENGTH else 2
    near = process.extract(word, choices, scorer=DamerauLevenshtein.distance, score_cutoff=limit, limit=None)
    if not near:
        return None
    last = len(request_rank)
    best = min(
        near, key=lambda hit: (hit[1], request_rank.get(hit[0], last), -vocabulary.get(hit[0], 0), hit[0])
    )
    return best[0]


def _forms_of_one_word(typed: str, near: str) -> bool:
    """ "superseded" and the corpus's "supersedes", a verb the lexicon lacks: two forms of one
    word by the inflection rules, so the typed one is no misspelling ("recieving" is "recieve",
    not "receive")."""
    return any(
        set(getAllLemmasOOV(typed, upos).get(upos, ())) & set(getAllLemmasOOV(near, upos).get(upos, ()))
        for upos in ("VERB", "NOUN")
    )


@functools.lru_cache(maxsize=4096)
def is_english(word: str) -> bool:
    """In lemminflect's lexicon, or made of one of its words by a prefix ("uncapped",
    "nonexclusive", "sublicensed": not "untapped", "exclusive", "licensed")."""
    if getAllLemmas(word):
        return True
    for prefix in _PREFIXES:
        rest = word[len(prefix) :]
        if word.startswith(prefix) and len(rest) >= MIN_LENGTH and getAllLemmas(rest):
            return True
    return False
