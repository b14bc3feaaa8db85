"""What kind of request a prompt is, decided without a model so that it is the same for every
engine: a question about the collection ("which of these agreements ...", "do the contracts
...", "list the contracts that ...", "how do they differ ...", or any question or request put
to a collection of many documents) has
every candidate document swept; a short single question put to a few documents takes the fast
path (one retrieval round); anything else is researched in depth."""

import re

from django.conf import settings

from corpora.retrieval.query import words
from research.constants import DEPTH_DEEP
from research.engine.text import (
    DOCUMENT_NOUN,
    DOCUMENT_NOUNS,
    DOCUMENT_PARTS,
    DOCUMENT_REQUEST_VERBS,
    plan_questions,
)
from research.models import ReportStrategy

# Verbs that open a request for documents or for what they say ("list the agreements ...",
# "show me the NDAs ...", "summarize the termination provisions").
_REQUEST_VERBS = rf"{DOCUMENT_REQUEST_VERBS}|extract|summari[sz]e|describe|outline|explain|compare"
# A question naming documents in the plural ("the agreements", "these contracts"), or one with
# each / every / all / any ("each contract"), asks about the collection; "the agreement" does not.
# So does a request that names them in the plural first ("contracts that renew automatically"),
# or after its verb ("list the agreements governed by ...", "show me all NDAs that ...").
_COLLECTION = re.compile(
    rf"^\W*(?:(?:please\s+)?(?:{_REQUEST_VERBS})\s+(?:me\s+|us\s+)?(?:all\s+|every\s+|any\s+)?"
    rf"(?:of\s+)?(?:the\s+|our\s+|these\s+|those\s+)?(?:\w+\s+){{0,2}})?(?:{DOCUMENT_NOUNS})\b"
    rf"|\b(?:which|what|how\s+many|do|does|did|are|have|in|across|among|of|for)\s+"
    rf"(?:of\s+)?(?:these|those|the|our|all|all\s+the|all\s+of\s+the|any|any\s+of\s+the|its|their)\s+"
    rf"(?:\w+\s+){{0,2}}(?:{DOCUMENT_NOUNS})\b"
    rf"|\b(?:each|every|all|any)\s+(?:\w+\s+)?(?:{DOCUMENT_NOUNS}|{DOCUMENT_NOUN})\b"
    rf"|\b(?:these|those)\s+(?:\w+\s+)?(?:{DOCUMENT_NOUNS})\b"
    rf"|\bwhich\s+(?:[\w-]+\s+){{0,2}}?(?:{DOCUMENT_NOUNS})\b"
    r"|\bwhich\s+of\s+(?:these|them|those)\b|\bhow\s+(?:do|does)\s+(?:they|these|those|the\s+\w+)\s+differ\b"
    r"|\bhow\s+many\b|\bacross\s+the\b|\bin\s+the\s+collection\b|\bin\s+(?:this|the)\s+corpus\b",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(?:compare|comparison|versus|vs\.?|differ|differs|difference|differences|contrast|"
    r"similarities|similar|whereas|rather\s+than|better|worse|"
    # "What changed between v1 and v2?", "How has the policy changed since 2022?"
    r"what\s+(?:has\s+|have\s+)?changed|chang(?:e|ed|es)\s+(?:between|from|since|over)|"
    r"how\s+(?:has|have|did)\s+(?:\w+\s+){0,4}?(?:changed?|evolved?))\b",
    re.IGNORECASE,
)
# A request for research ("research X", "deep dive", "report on") wants the deep path whatever its length.
_RESEARCH_REQUEST = re.compile(
    r"\b(?:research|investigate|investigation|deep[\s-]*dive|report\s+on|everything\s+about|"
    r"analy[sz]e|analysis|survey|overview|review)\b",
    re.IGNORECASE,
)


_INTERROGATIVE = re.compile(
    r"^\W*(?:what|which|who|whom|whose|when|where|why|how|whether|is|are|was|were|do|does|did|can|"
    r"could|may|might|must|shall|should|will|would|has|have|had)\b",
    re.IGNORECASE,
)


# "A non-compete clause" asks for what the clause says (text.DOCUMENT_PARTS).
_PARTS = "|".join(sorted(DOCUMENT_PARTS))
_NAMING_DOCUMENTS = re.compile(rf"\b(?:{DOCUMENT_NOUNS}|{DOCUMENT_NOUN}|{_PARTS})\b", re.IGNORECASE)


# Words that say how to answer, not what a document holds: a comparison ("how do they differ
# on ...": "differ" would match every "different"; "compare ... across the NDAs") and "how long"
# (a duration clause says "for a period of", and "long" matches every "so long as").
_ANSWER_FRAMING = re.compile(
    r"\b(differ|differs|difference|differences|compare|compared|comparison|contrast|versus|vs|across)\b"
    r"|\bhow\s+(long|often|soon)\b",
    re.IGNORECASE,
)
# A request ("summarize the termination provisions", "list the notice periods") asks as a
# question does; its verb (and "me") names no subject.
_REQUEST_OPENING = re.compile(rf"^\W*(?:please\s+)?({_REQUEST_VERBS})(?:\s+(me|us))?\b", re.IGNORECASE)


def document_words(text: str) -> list[str]:
    """The words of `text` that name the collection's documents or their parts ("contracts",
    "agreement", "clause"), the verb of a request for them ("name the contracts that ..."), and
    those framing the answer ("how do they differ", "how long"): they ask which documents, or
    how to answer, and say nothing of what one holds."""
    found = {w.lower() for w in _NAMING_DOCUMENTS.findall(text)}
    found |= {w.lower() for pair in _ANSWER_FRAMING.findall(text) for w in pair if w}
    opening = _REQUEST_OPENING.match(text)
    if opening:
        found |= {w.lower() for w in opening.groups() if w}
    return sorted(found)


def names_the_collection(text: str) -> bool:
    """Whether `text` says it is about the collection's documents ("these agreements", "which
    contracts", "how do they differ"), whatever it names besides."""
    return bool(_COLLECTION.search(text) or _COMPARISON.search(text))


def is_collection_question(text: str, *, documents: int = 0) -> bool:
    """Whether `text` asks about the documents of the collection rather than one fact: it says
    so ("these agreements", "each contract", "list the contracts that ...", "how do they
    differ"), or it is a question (a topic with a question mark, "non-solicit?", too), a
    request ("summarize the termination provisions") or a request for research ("please
    research governing law and liability caps") put to a
    collection of at least RESEARCH_COLLECTION_MIN_DOCUMENTS documents, which no one passage
    can answer for all of them."""
    if names_the_collection(text):
        return True
    return documents >= settings.RESEARCH_COLLECTION_MIN_DOCUMENTS and bool(
        _INTERROGATIVE.search(text)
        or _REQUEST_OPENING.match(text)
        or _RESEARCH_REQUEST.search(text)
        # "non-solicit?": a topic asked as a question, of every document
        or "?" in text
    )


def strategy_for(prompt: str, *, depth: str, documents: int) -> str:
    """FAST for a short single question (RESEARCH_FAST_PATH_MAX_WORDS words at most) with no
    collection, comparison or research markers, put to fewer documents than make a collection,
    unless the depth is deep; else DEEP."""
    if depth == DEPTH_DEEP:
        return ReportStrategy.DEEP
    text = " ".join(prompt.split())
    if (
        len(words(text)) > settings.RESEARCH_FAST_PATH_MAX_WORDS
        or text.count("?") > 1
        or "\n" in prompt.strip()
        or is_collection_question(text, documents=documents)
        or _RESEARCH_REQUEST.search(text)
        or len(plan_questions(text, breadth=2)) > 1
    ):
        return ReportStrategy.DEEP
    return ReportStrategy.FAST
