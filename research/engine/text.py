"""Text tools the offline minds share: how a request splits into sub-questions, the content
words of a question, and the verbatim sentences of a passage that best answer it. Pure
functions over strings: no database, no model."""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lemminflect import getLemma

from corpora.retrieval.query import STOPWORDS, words
from corpora.retrieval.spelling import is_english

SENTENCE_MAX_CHARS = 600
# A heading is a line of at most this many characters.
HEADING_MAX_CHARS = 120
# A line in sentence case this short, with no sentence's end, above a line opening with a
# capital is a heading ("Limitation of liability").
TITLE_MAX_WORDS = 6
TITLE_MAX_CHARS = 60
# A piece ending in a colon this short is a label of what follows ("Primary caregivers:").
LABEL_MAX_WORDS = 5
SENTENCE_MIN_CHARS = 25
# Words that carve something out of a rule. A long sentence is not cut where its carve-out would
# go to a later piece (a quote of the rule without its "provided that ..." would misstate it),
# and a sentence making one is worth a research direction of its own.
CARVE_OUT = re.compile(
    r"\b(?:except|unless|provided(?:,?\s*however,?)?\s+that|notwithstanding|other\s+than|excluding|"
    r"save\s+for|does\s+not\s+apply|shall\s+not\s+apply)\b",
    re.IGNORECASE,
)
# What a question's word that only a sentence's heading says weighs, against one the sentence says.
HEADING_WORD_WEIGHT = 0.5
# A sentence that would be cut before its carve-out is kept whole up to this many characters.
SENTENCE_WITH_CARVE_OUT_MAX_CHARS = 1200
# A quote ending in one of these ends where its sentence (or a clause of it) does.
_CLAIM_END = ".!?;:)\"'\u201d\u2019"
# Fewer words than this is a title or a label, not a statement worth quoting.
SENTENCE_MIN_WORDS = 6
# Words that open a question, and the lead-ins that ask for research rather than name its subject.
_WH = r"which|what|whether|who|whom|whose|when|where|why|how|if"
_QUESTION_START = re.compile(
    rf"^(?:{_WH}|are|is|do|does|can|could|should|will|would|must|may|shall)\b", re.IGNORECASE
)
_LEAD_IN = re.compile(
    # A greeting first ("Hi, could you please look into ...") says nothing either.
    r"^\s*(?:(?:hi|hello|hey|dear\s+\w+|ok|okay|so)\b[\s,!.:;-]*)?"
    # "For each agreement I need to know whether ...": the documents the request is about.
    r"(?:for\s+(?:each|every|all|any)\s+(?:of\s+(?:the|these|our)\s+)?[\w-]+,?\s+)?"
    r"(?:please\s+|can you\s+|could you\s+|would you\s+|i want you to\s+|i'd like you to\s+)*"
    r"(?:do\s+(?:a\s+)?(?:deep\s+dive|deep\s+research|research|investigation)\s+(?:on|into|about|of)\s+|"
    r"(?:deep\s+)?research(?:\s+on|\s+into|\s+about)?(?:\s*:\s*|\s+)|investigate(?:\s*:\s*|\s+)|look\s+into\s+|"
    r"find\s+out\s+(?:everything\s+)?(?:about\s+)?|tell\s+me\s+(?:everything\s+)?about\s+|"
    r"(?:write\s+)?(?:a\s+)?report\s+on\s+|"
    # "I need to know which ...", "tell me which ...": the question that follows is the request.
    r"i\s+(?:need|want|would\s+like|'d\s+like)\s+to\s+(?:know|find\s+out|understand)\s+|"
    rf"(?:tell|show)\s+(?:me|us)\s+(?=(?:{_WH})\b))",
    re.IGNORECASE,
)
# Nouns for the documents of a collection, in the plural and in the singular (regex
# alternations): a question naming them in the plural (or with "each", "every", "all", "any")
# asks about the collection, not one passage (intent.py).
DOCUMENT_NOUNS = (
    r"agreements|contracts|documents|policies|ndas|files|reports|papers|leases|filings|records|"
    r"memos|letters|articles|manuals|handbooks|licen[cs]es|amendments|procedures|guidelines|"
    r"emails|deeds|studies|proposals|invoices"
)
DOCUMENT_NOUN = (
    r"agreement|contract|document|policy|nda|file|report|paper|lease|filing|record|memo|letter|"
    r"article|manual|handbook|licen[cs]e|amendment|procedure|guideline|email|deed|study|proposal|invoice"
)
# A request for documents, asked as the question it is ("List the contracts that renew
# automatically." is "Which contracts renew automatically?"): a verb asking for them, or a
# determiner, then at most two words describing them ("the supply contracts"), their noun, and
# what they must say.
# Verbs that ask for documents ("list the contracts that ...", "show me the NDAs that ...").
DOCUMENT_REQUEST_VERBS = r"list|name|identify|find|locate|flag|highlight|enumerate|show|give|tell"
_DOCUMENTS_REQUEST = re.compile(
    rf"^(?:please\s+)?(?:(?:{DOCUMENT_REQUEST_VERBS})\s+"
    r"(?:(?:me|us)\s+)?)?(?:(?:all|every|any)\s+(?:of\s+)?)?(?:(?:the|these|those|our)\s+)?"
    rf"(?P<documents>(?:(?<=\s)(?:[\w-]+\s+){{0,2}}?)?(?:{DOCUMENT_NOUNS}))\s+"
    r"(?:(?P<link>that|which|without|with)\s+|(?P<participle>(?:not\s+)?[a-z]{2,}ing)\s+|(?=\w{3,}ed\s))"
    r"(?P<rest>[^?]+?)[\s.!?]*$",
    re.IGNORECASE,
)
# A question asking which documents do not say something ("Which contracts do not have a
# non-compete?", "... lack an audit right?", "... have no cap on liability?"): the negation
# right after the documents' noun, so that "Which contracts that are not exclusive require ..."
# is not one. "Are there any contracts that do not ...?" asks the same.
# The documents a "which ..." question names: "contracts", "of these supply agreements".
_NAMED_DOCUMENTS = rf"(?:of\s+(?:the|these|those|our)\s+)?(?:[\w-]+\s+){{0,2}}?(?:{DOCUMENT_NOUNS})"
_NEGATED_QUESTION = re.compile(
    rf"^(?:are\s+there\s+(?:any\s+)?(?P<there>(?:[\w-]+\s+){{0,2}}?(?:{DOCUMENT_NOUNS}))\s+(?:that|which)\s+|"
    rf"(?P<head>(?:which|what|how\s+many)\s+{_NAMED_DOCUMENTS}\s+|which\s+of\s+(?:these|them|those)\s+))"
    r"(?P<rest>.+?)[\s.!?]*$",
    re.IGNORECASE,
)
# The verbs a question says a document has a clause with ("have", "require", "caps"): one list for
# the negations ("have no cap") and the second question whose subject is the first's documents.
_CLAUSE_VERBS = (
    r"(?:contain|include|impose|provide|set|grant|give|allow|permit|require|mention|state|say|forbid|"
    r"prohibit|restrict|cap|limit|let|renew)s?|specify|specifies|have|has"
)
# (negation, what the affirmative says instead): "do not have" -> "have", "lack" -> "have",
# "are not governed" -> "are governed", "have no cap" -> "have any cap".
_NEGATIONS = (
    (re.compile(r"^(?:do|does|did)\s+not\s+|^(?:do|does|did)n['\u2019]t\s+", re.I), ""),
    (re.compile(r"^(are|is|were|was)(?:\s+not|\s+never|n['\u2019]t)\s+", re.I), r"\1 "),
    (re.compile(r"^(?:lacks?|(?:are\s+|is\s+)?(?:without|missing)|miss(?:es)?)\s+", re.I), "have "),
    (re.compile(r"^(?:fails?\s+to|never)\s+", re.I), ""),
    (
        re.compile(
            rf"^({_CLAUSE_VERBS})\s+no\s+",
            re.I,
        ),
        r"\1 any ",
    ),
)
# A line opening with a bullet or an item number is tried first, so that "2." is not kept.
_SEGMENT_SPLIT = re.compile(r"\s*(?:^|\n)\s*(?:[-*\u2022]|\d+[.)])\s+|(?<=\?)\s+|\n+|;\s+")
# A sentence's full stop: after a small letter, a digit or a bracket, before a capital.
_FULL_STOP = re.compile(r"(?<=[a-z0-9)][.!])\s+(?=[A-Z])")
# "Research the following: X, Y and Z": what follows is the request.
_FOLLOWING = re.compile(r"^(?:the\s+)?following(?:\s+(?:points|questions|topics|items|issues))?\s*:\s*", re.I)
# "... cap liability, and what happens on termination?" asks two things.
# "..., and with how much notice?", "... and in which state?": a question word after a preposition.
_ASKING_PREPOSITION = r"(?:with|in|by|within|after|for|at|on|under|to)\s+"
_SECOND_QUESTION = re.compile(
    rf",?\s+(?:and|or)\s+(?=(?:{_ASKING_PREPOSITION}(?:what|which|whom|whose|when|how)\b|"
    r"(?:what|which|who|whom|whose|when|where|how|why|whether|are|is|do|does|can|"
    r"could|should|will|would)\b))",
    re.IGNORECASE,
)
# "..., which have Y and which ...": a question listed between two others, after a comma alone.
_LISTED_QUESTION = re.compile(r",\s+(?=(?:which|what|whether|how)\s)", re.IGNORECASE)
# "and which by California law?": a second question with no verb of its own.
_ELLIPSIS = re.compile(
    r"^(?:which|what)\s+(?P<preposition>by|in|under|to|for|with|from|on|at|about|of)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
# "Which agreements have X, and which have Y?": a second question whose subject is the first's
# documents.
# Only "which" stands for the first question's documents: "and what is the liability cap in each
# agreement?" asks a thing, a question of its own.
_ELLIPTICAL_SUBJECT = re.compile(
    rf"^which\s+(?P<rest>(?:{_CLAUSE_VERBS}|do|does|don't|doesn't|are|is|can|may|must|shall|"
    r"should|will|would|lacks?)\b.+)$",
    re.IGNORECASE,
)
_DOCUMENTS_SUBJECT = re.compile(
    rf"^(?:which|what)\s+(?P<documents>{_NAMED_DOCUMENTS})\s+",
    re.IGNORECASE,
)
# "Which contracts cap liability, and which do not?": the first question in the negative.
_ELLIPTICAL_NEGATION = re.compile(
    r"^(?:which|what)\s+(?P<verb>do|does|did|are|is|were|was)(?:\s+not|n['\u2019]t)[\s?.!]*$", re.IGNORECASE
)
_LEADING_CONJUNCTION = re.compile(
    r"^(?:and\s+also|and|or|but|also|additionally|finally|plus)\s*,?\s+(?=\w)", re.IGNORECASE
)
# A sentence that only sets the scene ("I'm reviewing our NDA portfolio."): it asks nothing.
_CONTEXT = re.compile(
    r"^(?:i\s*'?\s*m|i\s+am|we\s*'?\s*re|we\s+are|i\s+have|we\s+have|i'?ve|we'?ve|our|my|this\s+is)\b",
    re.IGNORECASE,
)
_FRAMED_PAIR = re.compile(
    r"^(?P<frame>(?:what|which)\s+(?:are|is|were|was)\s+)(?P<rest>[^?]+)\?$", re.IGNORECASE
)
_ENUMERATION = re.compile(r",\s*(?:and\s+|or\s+)?|\s+and\s+(?=[^,]*$)", re.IGNORECASE)
# A sentence ends at a full stop (or ? ! ; :) before a capital or a digit, at a blank line, before
# a line opening with a bullet or an item mark, and at a full stop before an item mark ("...
# hereto. (d) No Third Party Beneficiaries." is two; "... under this Agreement. b. The Supplier"
# too, the mark not the end of the sentence before it).
# An item mark opening a line ("(a) ", "12. ") starts a sentence after a line that ends one or
# a clause (", and"), or before a capital: "... in the twelve\n(12) months preceding" is one.
_ITEM = r"\(?[a-z0-9]{1,3}[.)]\s"
_SENTENCE_END = re.compile(
    r"(?<=[.!?;:])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=\.)\s+(?=\([a-z]{1,3}\)\s)|"
    r"(?<=\.)\s+(?=(?:[a-z]|[ivx]{2,4})\.\s+[A-Z])|\n\s*\n|"
    rf"\n(?=\s*[-*\u2022]\s)|(?<=[.:;,])\n(?=\s*{_ITEM})|(?<=\band)\n(?=\s*{_ITEM})|"
    rf"(?<=\bor)\n(?=\s*{_ITEM})|\n(?=\s*{_ITEM}\s*[\"'(\[]?[A-Z])"
)


# --- Planning -------------------------------------------------------------------------------
def plan_questions(prompt: str, breadth: int) -> list[str]:
    """Sub-questions from a request: its questions, lines and bullets, the items of an
    enumeration ("research X, Y and Z") and the two questions of a conjunction ("Which contracts
    have both X and Y?")."""
    questions: list[str] = []
    for segment in request_segments(prompt):
        items = [i.strip(" .,:;") for i in _ENUMERATION.split(segment)]
        # Two items are two subjects only when each names one in two words or more ("the
        # liability caps and the termination rights", not "terms and conditions of renewal").
        is_enumeration = (
            "?" not in segment
            and all(0 < len(words(i)) <= 6 for i in items)
            # "our parental leave entitlements, and whether they changed over time": one subject
            and not any(_follows_up(item) for item in items[1:])
            and (len(items) >= 3 or (len(items) == 2 and all(len(content_words(i)) >= 2 for i in items)))
        )
        pair = conjunction(segment)
        parts = list(pair) if pair else items if is_enumeration else _framed_pair(segment) or [segment]
        for item in parts:
            if item and content_words(item) and item.lower() not in {q.lower() for q in questions}:
                questions.append(item)
    if not questions and prompt.strip():
        questions = [" ".join(prompt.split())[:300]]
    return questions[: max(1, breadth)]


def request_conjunctions(prompt: str) -> list[tuple[str, str, str]]:
    """(the question as asked, its first question, its second) for each question of the request
    that is a conjunction (conjunction): the report answers it with the documents answering both."""
    return [(segment, *pair) for segment in request_segments(prompt) if (pair := conjunction(segment))]


def request_segments(prompt: str) -> list[str]:
    """The request's questions, lines and bullets, without lead-ins, elliptical second questions
    completed, and a request for documents asked as the question it is."""
    text = _LEAD_IN.sub("", prompt.strip(), count=1)
    led = text != prompt.strip()
    lead_in = prompt.strip()[: len(prompt.strip()) - len(text)]
    if re.search(r"\b(?:can|could|would)\s+you\b", lead_in, re.IGNORECASE) and not _QUESTION_START.match(
        text
    ):
        # "Can you research X and Y?": the question mark is the polite request's, not a question
        # of X and Y's (which would keep an enumeration from being one).
        text = text.rstrip().rstrip("?").rstrip()
    text = _FOLLOWING.sub("", text, count=1)
    segments = []
    led_segments: set[int] = set()  # those after a lead-in of their sentence ("I need to know ...")
    pieces = _SEGMENT_SPLIT.split(_sentences_that_ask(text))
    for at, s in enumerate(pieces):
        # "I need a memo on the following:" introduces the lines after it; it asks nothing itself.
        if (s or "").rstrip().endswith(":") and any((p or "").strip() for p in pieces[at + 1 :]):
            continue
        sentence_led = bool(s) and _LEAD_IN.sub("", s.strip(), count=1) != s.strip()
        previous = ""
        parts = _SECOND_QUESTION.split(s or "")
        if len(parts) > 1:
            # "Which contracts have X, which have Y and which are Z?": a list of questions.
            parts = [piece for part in parts for piece in _LISTED_QUESTION.split(part)]
        for position, part in enumerate(parts):
            part = part.strip(" .,:;-\t")
            # "Which contracts cap liability, and which do not?": the first is a question too.
            if position < len(parts) - 1 and (s or "").rstrip().endswith("?") and _QUESTION_START.match(part):
                part += "?"
            if _LEADING_CONJUNCTION.match(part):  # "... liability? And how long ...?"
                part = _LEADING_CONJUNCTION.sub("", part, count=1)
                part = part[0].upper() + part[1:]
            if part:
                completed = _complete_ellipsis(previous, part)
                # Of a question and one more ("... renew automatically, and how much notice is
                # needed to stop the renewal?"), the second may refer back with "the"; in a
                # list ("whether A, whether B, and how long C") each is a question of its own.
                earlier = segments[-1] if segments and len(parts) == 2 else ""
                if segments and completed == part and _follows_up(part, earlier):
                    # "..., and how long does each restriction last?", "If so, what amount?":
                    # asked of the question before it, not of the collection on its own.
                    joined = segments[-1].rstrip(" ?.") + ", and " if position else segments[-1] + " "
                    segments[-1] = previous = joined + (part[0].lower() + part[1:] if position else part)
                    continue
                if sentence_led:
                    led_segments.add(len(segments))
                segments.append(completed)
                previous = completed
    documents = _documents_named(prompt)
    return [
        _as_question(_asked(segment, led=led or i in led_segments), documents=documents)
        for i, segment in enumerate(segments)
    ]


def _sentences_that_ask(text: str) -> str:
    """`text` with each sentence that asks something on a line of its own ("... after
    termination. Also flag any that include a non-solicit."), a sentence that sets the scene
    left out ("I'm reviewing our NDA portfolio."), and one that does neither kept with the
    sentence after it, as before ("Acme Inc. supplies parts. What is the term?")."""
    sentences = [part for part in _FULL_STOP.split(text) if part.strip()]
    if len(sentences) < 2:
        return text
    asks = [_asks(sentence) for sentence in sentences]
    lines: list[str] = []
    pending = ""
    for sentence, asking in zip(sentences, asks, strict=True):
        if any(asks) and _sets_the_scene(sentence):
            continue
        if not asking:
            pending += sentence + " "
            continue
        lines.append(pending + sentence)
        pending = ""
    if pending:
        lines.append(pending.strip())
    return "\n".join(lines)


# Words that make a sentence a request ("For each agreement I need to know", "Also flag any").
_REQUESTING = rf"{_WH}|{DOCUMENT_REQUEST_VERBS}|need|want|research"
_ASKING = re.compile(rf"\b(?:{_REQUESTING}|compare|summari[sz]e|describe|explain)\b", re.IGNORECASE)
_NOT_SCENE = re.compile(rf"\b(?:{_REQUESTING}|like)\b", re.IGNORECASE)


def _asks(sentence: str) -> bool:
    """A question, or a request ("Also flag any that ...", "For each agreement I need to know")."""
    return "?" in sentence or bool(_ASKING.search(sentence))


def _sets_the_scene(sentence: str) -> bool:
    """ "I'm reviewing our NDA portfolio.", "We are a SaaS company.": no question, no request."""
    text = sentence.strip()
    return bool(_CONTEXT.match(text) and "?" not in text and not _NOT_SCENE.search(text))


def _documents_named(prompt: str) -> str:
    """The documents the request names, in the plural ("NDAs" for "our NDA portfolio"), for a
    request that names none itself ("flag any that include a non-solicit"); "documents" else."""
    match = re.search(rf"\b({DOCUMENT_NOUNS}|{DOCUMENT_NOUN})\b", prompt, re.IGNORECASE)
    if match is None:
        return "documents"
    word = match.group(1)
    if re.fullmatch(DOCUMENT_NOUNS, word, re.IGNORECASE):
        return word
    if word.isupper():
        return word + "s"
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def _asked(segment: str, *, led: bool = False) -> str:
    """The segment without its lead-in; a question a lead-in opened (`led`: the request's, or
    the segment's own: "I need to know which agreements have ...") is asked as one: "Which
    agreements have ...?"."""
    text = _LEAD_IN.sub("", segment, count=1).strip(" .,:;")
    led = led or text != segment.strip(" .,:;")
    if led and re.match(rf"(?:{_WH})\b", text, re.IGNORECASE):
        text = text[0].upper() + text[1:].rstrip(" .!") + ("" if text.endswith("?") else "?")
    return text


# "flag any that include a non-solicit": a request for documents that does not name them.
_ANY_THAT = re.compile(
    rf"^(?:please\s+)?(?:{DOCUMENT_REQUEST_VERBS})\s+(?:(?:me|us)\s+)?(?:any|all|those|the\s+ones)\s+"
    r"(?P<link>that|which|with)\s+(?P<rest>[^?]+?)[\s.!?]*$",
    re.IGNORECASE,
)


def _as_question(segment: str, *, documents: str = "documents") -> str:
    """ "List the contracts that renew automatically" -> "Which contracts renew automatically?",
    "find contracts with a non-compete" -> "Which contracts have a non-compete?", "list the
    agreements governed by New York law" -> "Which agreements are governed by New York law?": a
    request for documents is planned, searched and reported as the question it asks."""
    match = _DOCUMENTS_REQUEST.match(segment)
    if match is None:
        unnamed = _ANY_THAT.match(segment)
        if unnamed is not None:  # "flag any that include a non-solicit", of the request's NDAs
            verb = "have " if unnamed["link"].lower() == "with" else ""
            return f"Which {documents} {verb}{unnamed['rest']}?"
        return segment
    documents = match["documents"]
    first = documents.split()[0]
    if first[1:].islower():  # "Contracts that ..." opened the request; "NDAs" stays
        documents = documents[0].lower() + documents[1:]
    link = (match["link"] or "").lower()
    if match["participle"]:
        # "requiring consent" -> "require consent", "not requiring" -> "do not require",
        # "lacking an audit right" -> "lack an audit right" (asked in the negative: negated).
        *negation, participle = match["participle"].lower().split()
        base = _verb_of(participle)
        if base is None:
            return segment
        return f"Which {documents} {'do not ' if negation else ''}{base} {match['rest']}?"
    # "governed by ..." is "are governed by ..."; "without ..." is asked in the negative (negated).
    verb = {"with": "have ", "without": "do not have "}.get(link, "" if link else "are ")
    return f"Which {documents} {verb}{match['rest']}?"


# Participles whose verb reads wrongly after "Which contracts ...": "regarding pricing" asks
# which contracts concern pricing.
_PARTICIPLE_VERBS = {
    "being": "are",
    "having": "have",
    "missing": "lack",
    "regarding": "concern",
    "concerning": "concern",
}


def _verb_of(participle: str) -> str | None:
    """The verb a participle is a form of, as "Which contracts <verb> ..." says it ("requiring"
    -> "require", "permitting" -> "permit"), from lemminflect's English lexicon; None for a word
    it does not know as a verb's participle ("pricing", "nothing")."""
    if participle in _PARTICIPLE_VERBS:
        return _PARTICIPLE_VERBS[participle]
    lemmas = getLemma(participle, upos="VERB", lemmatize_oov=False)
    return lemmas[0] if lemmas and lemmas[0] != participle else None


@dataclass(frozen=True)
class Negated:
    """A question asking which documents do not say something: `affirmative` is the question it
    negates (what is searched and judged; its answer is the documents examined that do not
    address it), `negation` the words taken out."""

    affirmative: str
    negation: str


def negated(question: str) -> Negated | None:
    """ "Which contracts do not have a non-compete?" -> Negated("Which contracts have a
    non-compete?", "do not"); None for a question that is not about documents lacking something."""
    match = _NEGATED_QUESTION.match(" ".join(question.split()))
    if match is None:
        return None
    rest = match["rest"]
    for pattern, replacement in _NEGATIONS:
        found = pattern.match(rest)
        if found is None:
            continue
        affirmed = pattern.sub(replacement, rest, count=1)
        if not content_words(affirmed):
            return None
        head = f"Which {match['there']} " if match["there"] else match["head"]
        return Negated(f"{head}{affirmed}?", found.group(0).strip())
    return None


# "Which contracts have both a non-compete and an exclusivity clause?", "Which contracts have a
# non-compete but no exclusivity clause?": two questions, the documents answering both the answer.
_CONJUNCTION = re.compile(
    rf"^(?:which|what)\s+(?P<documents>{_NAMED_DOCUMENTS})\s+(?P<verb>[a-z]+)\s+"
    r"(?:both\s+(?P<first>.+?)\s+and\s+(?P<second>.+?)|"
    # "and not more than 60 days" bounds an amount: it asks nothing of its own
    r"(?P<kept>.+?)\s+(?:but|and)\s+(?P<negation>not(?!\s+(?:less|more|later|earlier|fewer|greater)\b)|no|lack|"
    r"(?:do\s+not|don't|don\u2019t)\s+have|without)\s+"
    r"(?P<lacked>.+?))[\s?.!]*$",
    re.IGNORECASE,
)


def conjunction(question: str) -> tuple[str, str] | None:
    """ "Which contracts have both a non-compete and an exclusivity clause?" -> ("Which contracts
    have a non-compete?", "Which contracts have an exclusivity clause?"); "... have a non-compete
    but no exclusivity clause?" -> (..., "Which contracts have no exclusivity clause?"), the
    second asked in the negative (negated). The report answers with the documents that answer
    both. None for a question of another shape."""
    match = _CONJUNCTION.match(" ".join(question.split()))
    if match is None or match["verb"].lower() in {"do", "does", "did", "are", "is", "not"}:
        return None
    documents, verb = match["documents"], match["verb"]
    if match["first"]:
        pair = (f"{verb} {match['first']}", f"{verb} {match['second']}")
    else:
        negation = match["negation"].lower()
        lacked = {"not": f"do not {verb}", "no": f"{verb} no"}.get(negation, "do not have")
        pair = (f"{verb} {match['kept']}", f"{lacked} {match['lacked']}")
    if not all(content_words(part) for part in pair):
        return None
    return (f"Which {documents} {pair[0]}?", f"Which {documents} {pair[1]}?")


def without_words(text: str, phrase: str) -> str:
    """`text` without the words of `phrase` that a search would use, in any form (a negation's
    "lack" takes "lacking" too); stopwords ("not", "no") search nothing and stay."""
    dropped = {stem(w) for w in words(phrase) if w not in STOPWORDS}
    kept = [w for w in text.split() if stem(w.strip(".,;:?!").lower()) not in dropped]
    return " ".join(kept)


# A question that only makes sense of the one before it: "If so, what amount?", one pointing
# back at it ("how long does each restriction last?", "what do they require?"; not "it", most
# often the document, nor "that", most often a relative pronoun) with few words of its own, or
# a fragment ("what minimum amounts?").
_FOLLOW_UP_OPENING = re.compile(r"^\W*(?:and\s+)?if\s+(?:so|yes|any|they\s+do|it\s+does)\b", re.IGNORECASE)
_POINTING_BACK = re.compile(r"\b(?:each|such|they|them|their|these|those)\b", re.IGNORECASE)
FOLLOW_UP_MAX_WORDS = 3
FRAGMENT_MAX_WORDS = 3
# "the renewal" names what "renew automatically" asked about: stems sharing this many letters.
REFERENCE_MIN_LETTERS = 4
# What a word of a follow-up joined to its question weighs in choosing a quote (best_sentences).
FOLLOW_UP_WORD_WEIGHT = 0.5
# A request is in English when this share of its lower-case words are English words.
ENGLISH_MIN_SHARE = 0.6


def _follows_up(part: str, previous: str = "") -> bool:
    """A part asked of the question before it ("if so, what amount?", "and how long does each
    restriction last?", "how much notice is needed to stop the renewal?" after "Which contracts
    renew automatically?"), not of the collection on its own."""
    if _FOLLOW_UP_OPENING.match(part):
        return True
    own = content_words(part)
    if _POINTING_BACK.search(part) and len(own) <= FOLLOW_UP_MAX_WORDS:
        return True
    if previous and _refers_back(part, previous):
        return True
    # "what minimum amounts?", "how long?", "with how much notice?"; not "... or can be
    # terminated?", a second predicate
    part = re.sub(rf"^{_ASKING_PREPOSITION}", "", part, flags=re.IGNORECASE)
    return bool(re.match(rf"(?:{_WH})\b", part, re.IGNORECASE)) and len(words(part)) <= FRAGMENT_MAX_WORDS


def _refers_back(part: str, previous: str) -> bool:
    """A "how" or "what" question naming with "the" what the question before it asked about
    ("... stop the renewal?" after "... renew automatically?"); a "which" question is a
    parallel one ("which require the employees to sign?")."""
    if not re.match(r"(?:how|what|when|whether)\b", part, re.IGNORECASE):
        return False
    earlier = {stem(w) for w in content_words(previous)}
    named = (stem(m.group(1).lower()) for m in re.finditer(r"\bthe\s+([^\W\d_]+)", part, re.IGNORECASE))
    return any(_stems_meet(a, b) for a in named for b in earlier)


# --- Follow-ups in a conversation -------------------------------------------------------------
# A chat message asked of the question before it ("And for Globex?", "What about
# confidentiality?", "Does it also cover subcontractors?"): how it opens, what points back.
_CHAT_OPENING = re.compile(r"^\W*(?:and\s+also|and|also|(?:and\s+)?(?:what|how)\s+about)\b[\s,]*", re.I)
_DOCUMENT_POINTER = re.compile(rf"\b(?:that|this|the\s+same)\s+(?:{DOCUMENT_NOUN}|one)\b", re.I)
# Not the "it" of "is it possible ...?", which points at nothing.
_POINTER = re.compile(
    r"\b(?:it(?!\s+(?:is\s+|was\s+)?(?:possible|true|necessary|required|allowed|permitted|legal)\b)|"
    r"its|they|them|their|the\s+same)\b",
    re.I,
)
# "the Acme agreement", "the license agreement" (a noun of a document, then maybe another).
_DOCUMENT_PHRASE = re.compile(
    rf"\bthe\s+(?:[\w&.'\u2019-]+\s+){{0,3}}?(?i:{DOCUMENT_NOUN})(?:\s+(?i:{DOCUMENT_NOUN}))?\b"
)
CHAT_FOLLOW_UP_MAX_WORDS = 8


def follow_up_read(previous: str, message: str) -> str | None:
    """What a short chat message asks when it follows up `previous` (the question before it, as
    read): "And for Globex?" after "What is the notice period for terminating the Acme
    agreement?" asks "What is the notice period for terminating the Globex agreement?" (a new
    subject in the old question); "What about confidentiality?" asks "confidentiality in the
    Acme agreement" (a new aspect of the same subject). None for a message that asks on its
    own: longer, naming both a subject and what it asks of it, or pointing back at nothing."""
    opening = _CHAT_OPENING.match(message)
    rest = message[opening.end() :] if opening else message
    rest = rest.strip(" ?.!")
    if not rest or len(words(message)) > CHAT_FOLLOW_UP_MAX_WORDS:
        return None
    pointing = _DOCUMENT_POINTER.search(rest) or _POINTER.search(rest)
    if not (opening or pointing or _follows_up(message.strip(" ?.!"), previous)):
        return None
    # A sentence's capitalised first word is no name ("Confidentiality too?").
    names = [n for n in proper_names(rest) if not (rest.startswith(n) and is_english(n.lower()))]
    own = _subject(rest, names)
    unnamed = rest.replace(own.phrase, " ") if own else rest
    topic = content_words(_POINTER.sub(" ", _DOCUMENT_POINTER.sub(" ", unnamed)))
    earlier = _subject(previous, proper_names(previous))
    if own and not topic:
        return _with_subject(previous, earlier, rest, own)
    if own or not topic or earlier is None:
        return None
    # "What about confidentiality?", "Does it also cover subcontractors?": asked of the subject
    # before; "that agreement" is that subject.
    read = _DOCUMENT_POINTER.sub(lambda _: earlier.phrase, rest)
    if earlier.phrase not in read:
        read = f"{read} in {earlier.phrase}"
    return read[0].upper() + read[1:] + "?" if _QUESTION_START.match(read) else read


class _Subject(NamedTuple):
    """What a question asks about ("the Acme agreement") and where its name is in the question
    (None for a document named without one, "the license agreement")."""

    phrase: str
    name: tuple[int, int] | None


def _with_subject(previous: str, earlier: _Subject | None, rest: str, own: _Subject) -> str:
    """`previous` asked of the subject `rest` names (`own`): in place of its own subject's name
    ("the Acme agreement" -> "the Globex agreement") or its document, else added ("What is the
    notice period?" -> "What is the notice period for Globex?")."""
    if earlier is None:
        asking = re.search(rf"{_ASKING_PREPOSITION}{re.escape(own.phrase)}", rest, re.I)
        mark = "?" if previous.rstrip().endswith("?") else ""
        return f"{previous.rstrip(' ?.!')} {asking.group() if asking else 'for ' + own.phrase}{mark}"
    if earlier.name and own.name:
        (start, end), named = earlier.name, rest[own.name[0] : own.name[1]]
    else:
        start = previous.find(earlier.phrase)
        end, named = start + len(earlier.phrase), own.phrase
    return previous[:start] + named + previous[end:]


def _subject(text: str, names: Sequence[str]) -> _Subject | None:
    """The party or document `text` asks about: a document named with a name ("the Acme
    agreement"), else the name ("Globex"), else a document ("the license agreement")."""
    runs = []
    if names:
        name = "|".join(re.escape(n) for n in names)
        runs = [(m.start(), m.end()) for m in re.finditer(rf"\b(?:{name})(?:\s+(?:{name}))*\b", text)]
    phrases = [m for m in _DOCUMENT_PHRASE.finditer(text) if not _DOCUMENT_POINTER.fullmatch(m.group())]
    for phrase in phrases:
        for start, end in runs:
            if phrase.start() <= start and end <= phrase.end():
                return _Subject(phrase.group(), (start, end))
    if runs:
        return _Subject(text[runs[0][0] : runs[0][1]], runs[0])
    return _Subject(phrases[0].group(), None) if phrases else None


def core_question(question: str) -> str:
    """`question` without the follow-ups request_segments joined to it ("Which contracts have a
    non-compete, and how long does each restriction last?" -> "Which contracts have a
    non-compete?"): what a document must say to answer it, the words it is searched and judged
    by; its quote then shows the rest ("... ending two years after the Closing Date")."""
    sentences = re.split(r"(?<=\?)\s+", question.strip())
    first = sentences[0]
    if len(sentences) > 1 and not all(_follows_up(s.strip(" ?.")) for s in sentences[1:]):
        return question
    parts = _SECOND_QUESTION.split(first)
    earlier = parts[0] if len(parts) == 2 else ""
    if len(parts) > 1 and all(_follows_up(p.strip(" ?.,"), earlier) for p in parts[1:]):
        first = parts[0].rstrip(" ,;:")
    return first.rstrip(" ?.") + "?" if first.rstrip().endswith("?") or first != sentences[0] else first


def _complete_ellipsis(previous: str, part: str) -> str:
    """ "... governed by Delaware law, and which by California law?" asks "Which agreements are
    governed by California law?": a second question that is only "which" and a phrase takes the
    first question's words before the same preposition. "Which agreements have exclusivity
    provisions, and which have non-competes?" asks "Which agreements have non-competes?": a
    second question that is "which" and a verb takes the first question's documents, and "and
    which do not?" asks the first in the negative ("Which agreements do not have ...?")."""
    match = _ELLIPSIS.match(part)
    documents = _DOCUMENTS_SUBJECT.match(previous)
    negation, subject = _ELLIPTICAL_NEGATION.match(part), _ELLIPTICAL_SUBJECT.match(part)
    if negation and documents:  # "and which do not?", "and which are not?"
        return _negative_of(
            previous[documents.end() :].strip(" ?.!"), documents["documents"], negation["verb"]
        )
    if not match and subject and documents:  # "and which have non-competes?"
        return f"Which {documents['documents']} {subject['rest']}"
    if not match or not previous:
        return part
    before = [m.start() for m in re.finditer(rf"\b{match['preposition']}\b", previous, re.IGNORECASE)]
    if not before:
        return part
    completed = f"{previous[: before[-1]]}{match['preposition']} {match['rest']}"
    return completed[0].upper() + completed[1:]


def _negative_of(said: str, documents: str, verb: str) -> str:
    """ "Which <documents> do not <said>?" ("... are not <said>?" where `said` is "are ...")."""
    verb = verb.lower()
    if verb in {"do", "does", "did"}:
        return f"Which {documents} do not {said}?"
    if said.lower().startswith(f"{verb} "):
        return f"Which {documents} {verb} not {said[len(verb) + 1 :]}?"
    return f"Which {documents} {verb} not?"


def _framed_pair(segment: str) -> list[str] | None:
    """ "What are the liability caps and the termination rights?" asks two questions: "What are
    the liability caps?" and "What are the termination rights?" (each subject two words or more,
    as for an enumeration)."""
    match = _FRAMED_PAIR.match(segment)
    if match is None:
        return None
    pair = [p.strip(" ,") for p in re.split(r"\s+and\s+", match["rest"], flags=re.IGNORECASE)]
    if len(pair) != 2 or not all(len(words(p)) <= 6 and len(content_words(p)) >= 2 for p in pair):
        return None
    return [f"{match['frame']}{p}?" for p in pair]


# Words that frame a question rather than name its subject ("what happens on termination?").
# The parts of a document, and where in it: a clause's subject is what a quote must say, and
# every contract's "clause" and "provision" (its severability clause's above all) match the word.
DOCUMENT_PARTS = frozenset(
    "clause clauses provision provisions section sections subsection subsections paragraph "
    "paragraphs subparagraph subparagraphs".split()
)
QUESTION_FRAMING = DOCUMENT_PARTS | frozenset(
    "happen happens happened mean means say says said mention mentions mentioned describe describes "
    "explain explains tell exist exists regarding concerning any there contain contains include "
    "includes hereof herein hereunder hereto thereof thereunder".split()
)


# The words requests are made of, never corrected as misspelt and, of two equally near a typo,
# preferred in this order ("wich" is "which", not "with"): question words, the documents and their
# parts, what a request asks them, then the query parser's stopwords.
REQUEST_WORDS = (
    "which whether what when where who whom whose why how".split()
    + [w for w in (DOCUMENT_NOUNS + "|" + DOCUMENT_NOUN).split("|") if w.isalpha()]
    + "licences licenses licence license".split()
    + sorted(QUESTION_FRAMING)
    + "research compare comparison versus differ differences between across".split()
    + sorted(STOPWORDS)
)


# The first halves of hyphenated words ("non-compete", "anti-assignment"): alone they say
# nothing, and a sentence under "Non-Waiver" or about a "non-exclusive licence" does not answer a
# question about a non-compete by sharing "non".
PREFIXES = frozenset("non anti co pre sub multi".split())


_NAME = re.compile(r"\b[A-Z][\w&-]*[A-Za-z0-9]")


def proper_names(text: str) -> list[str]:
    """The capitalised words of `text` that may name a party or a document ("Cheetah", "Mobile",
    "GSK"): not a stop word, a framing word or a document noun ("What", "Agreement"). None in a
    request not in English: German capitalises its nouns, and the first word of "Quel est le
    préavis ...?" is no party either."""
    if not reads_as_english(text):
        return []
    found = []
    for match in _NAME.finditer(text):
        word = match.group(0).removesuffix("'s")
        lower = word.lower()
        if (
            len(word) >= 3
            and lower not in STOPWORDS
            and lower not in QUESTION_FRAMING
            and not re.fullmatch(rf"(?:{DOCUMENT_NOUNS}|{DOCUMENT_NOUN})", lower)
        ):
            found.append(word)
    return list(dict.fromkeys(found))


def reads_as_english(text: str) -> bool:
    """Whether most of `text`'s lower-case words of three letters or more are English words
    (lemminflect's lexicon); a text with none is taken as English."""
    lower = [w for w in re.findall(r"[^\W\d_]{3,}", text) if w.islower()]
    if not lower:
        return True
    return sum(is_english(w) or w in STOPWORDS for w in lower) >= ENGLISH_MIN_SHARE * len(lower)


def names_held_by_none(question: str, absent: Sequence[str]) -> list[str]:
    """The names of `absent` (names no document holds) that `question` names."""
    named = set(proper_names(question))
    return [name for name in absent if name in named]


def without_names(text: str, names: Sequence[str]) -> str:
    """`text` without the words of `names` ("What is the term of the Cheetah Mobile cooperation
    agreement?" -> "What is the term of the cooperation agreement?"): asked of the document they
    name, they say nothing a passage of it must say."""
    if not names:
        return text
    name = rf"(?:{'|'.join(re.escape(n) for n in names)})(?:['\u2019]s)?"
    # "with John Coolidge" goes whole: a preposition left behind would ask nothing.
    text = re.sub(rf"\b(?:with|between|and|of|from|by|for|to)\s+{name}(?:\s+(?:and\s+)?{name})*\b", "", text)
    text = re.sub(rf"\b{name}\b", "", text)
    return re.sub(r"\s+([?.!,;:])", r"\1", " ".join(text.split()))


def content_words(text: str) -> list[str]:
    return [
        stem(w)
        for w in words(text)
        if w not in STOPWORDS and w not in QUESTION_FRAMING and w not in PREFIXES and len(w) > 1
    ]


def stem(word: str) -> str:
    """A light suffix stripper, so "incidents", "reported" and "reporting" meet "incident" and
    "report" (the lexical index stems with Porter; sentence choice needs only this much)."""
    for suffix, replacement in (
        ("ies", "y"),
        ("ions", ""),
        ("ion", ""),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    # "terminate" and "terminated" meet at "terminat".
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def claim_of(quote: str) -> str:
    """An offline mind's claim: its quote on one line, with an ellipsis where the quote stops
    before its sentence does (a long sentence cut at a clause, or a passage's end), so that no
    claim reads as if "which consent shall" were all the sentence said."""
    claim = " ".join(quote.split())
    if not claim or claim[-1] in _CLAIM_END:
        return claim
    return claim.rstrip(",") + " \u2026"


def keywords(question: str) -> str:
    return " ".join(dict.fromkeys(w for w in words(question) if w not in STOPWORDS and len(w) > 1))


# --- Sentence selection ---------------------------------------------------------------------
@dataclass(frozen=True)
class Sentence:
    passage_id: int
    document_id: int
    document_title: str
    text: str
    score: float


def sentences(text: str) -> list[str]:
    """Verbatim sentences of a passage (each an exact substring), long ones cut at clause
    boundaries so a quote stays readable; a heading on a line of its own ("2.07 Return of
    Confidential Information") is not the start of the sentence under it, nor a statement."""
    return [sentence for _, sentence in headed_sentences(text)]


def headed_sentences(text: str, heading: str = "") -> list[tuple[str, str]]:
    """The passage's sentences (as `sentences`), each with the heading it is read under: the last
    heading above it in the passage ("3. BACKUPS"), else `heading` (the passage's own)."""
    found: list[tuple[str, str]] = []
    # Each piece keeps the space after it, so that pieces joined are the passage's text still.
    parts = re.split(f"({_SENTENCE_END.pattern})", text)
    ends = [part + (parts[i + 1] if i + 1 < len(parts) else "") for i, part in enumerate(parts) if i % 2 == 0]
    for piece, is_heading in _labels_joined([p for part in ends for p in _heading_lines(part)]):
        piece = piece.strip()
        if not piece:
            continue
        if is_heading:
            heading = piece
            continue
        while len(piece) > SENTENCE_MAX_CHARS:
            cut = max(piece.rfind("; ", 0, SENTENCE_MAX_CHARS), piece.rfind(", ", 0, SENTENCE_MAX_CHARS))
            cut = cut + 1 if cut > SENTENCE_MIN_CHARS else SENTENCE_MAX_CHARS
            if len(piece) <= SENTENCE_WITH_CARVE_OUT_MAX_CHARS and CARVE_OUT.search(piece[cut:]):
                break
            found.append((heading, piece[:cut].strip()))
            piece = piece[cut:].strip()
        if piece:
            found.append((heading, piece))
    return [(h, s) for h, s in found if _is_statement(s)]


def _labels_joined(pieces: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """A label ending in a colon ("Primary caregivers:", "The Receiving Party shall:") read with
    what follows it, so that "16 weeks of fully paid parental leave." does not read as everyone's.
    The pieces are consecutive in the passage: joined, they are its text still."""
    joined: list[tuple[str, bool]] = []
    for piece, is_heading in pieces:
        if joined and not is_heading and piece.strip() and _is_label(joined[-1]):
            joined[-1] = (joined[-1][0] + piece, False)
        else:
            joined.append((piece, is_heading))
    return joined


def _is_label(piece: tuple[str, bool]) -> bool:
    text, is_heading = piece
    text = text.strip()
    return not is_heading and text.endswith(":") and 0 < len(text.split()) <= LABEL_MAX_WORDS


def _heading_lines(text: str) -> list[tuple[str, bool]]:
    """`text` split after each line that reads as a heading (see _is_heading, _is_titled_line),
    each piece with whether it is one, and before one in capitals or a Markdown heading under a
    line that is not a sentence's end ("QuickLinks -- Click here ...\nMUTUAL NON-DISCLOSURE
    AGREEMENT\n This Agreement ..." is a banner, a title and a sentence). The pieces are
    consecutive in `text`, the line breaks after headings left out."""
    pieces: list[tuple[str, bool]] = []
    start, line_start = 0, 0
    for match in re.finditer(r"\n|$", text):
        line = text[line_start : match.start()]
        stripped = line.strip()
        if (
            line_start > start
            and stripped
            and (stripped.startswith("#") or (line == line.upper() and _is_heading(stripped)))
        ):
            pieces.append((text[start:line_start], False))
            start = line_start
        following = text[match.end() :].lstrip(" \t")
        if _is_heading(text[start : match.start()]) or (
            line_start == start and match.group() and _is_titled_line(stripped, following)
        ):
            pieces.append((text[start : match.start()], True))
            start = match.end()
        line_start = match.end()
    return [*pieces, (text[start:], False)]


def _is_titled_line(line: str, following: str) -> bool:
    """A Markdown heading ("## § 2 Umfang des mobilen Arbeitens"), or a short line in sentence
    case with no punctuation of a sentence's end, above a line opening with a capital
    ("Limitation of liability\nExcept for ...")."""
    if line.startswith("#"):
        return True
    return (
        0 < len(line.split()) <= TITLE_MAX_WORDS
        and len(line) <= TITLE_MAX_CHARS
        and line[:1].isupper()
        and line[-1] not in ".,;:!?\"'\u201d)"
        and following[:1].isupper()
    )


def _is_heading(line: str) -> bool:
    """Title Case or capitals, every word of four letters or more capitalised ("Section 7.1
    Aggregate Limit of Liability."); a sentence has lower-case words of its own."""
    long_words = [w.strip("\"'(\u201c\u2018") for w in line.split() if sum(c.isalpha() for c in w) > 3]
    return bool(long_words) and len(line) <= HEADING_MAX_CHARS and all(w[:1].isupper() for w in long_words)


def _is_statement(sentence: str) -> bool:
    """A sentence worth quoting: long enough, and not a heading. One in capitals is a statement
    when it is longer than a heading may be (a contract's "NEITHER PARTY SHALL BE LIABLE FOR ANY
    INDIRECT ... DAMAGES." is the clause itself)."""
    return (
        len(sentence) >= SENTENCE_MIN_CHARS
        and len(sentence.split()) >= SENTENCE_MIN_WORDS
        and (any(c.islower() for c in sentence) or len(sentence) > HEADING_MAX_CHARS)
        and not _is_heading(sentence)
        and not _is_form(sentence)
    )


_FORM_LABELS = frozenset("by name title date signed signature witness its".split())


def _is_form(sentence: str) -> bool:
    """A signature block, its labels or a table of contents, which say nothing a
    question asks ("IN WITNESS WHEREOF, the Parties have signed ...", "By: ____ Title: ____
    Date:", "Signed Signed Name Name Date Date", "12.1 Indemnification by GSK 35 12.5 Insurance
    37"), though they share a word with one ("date", "insurance")."""
    if "witness whereof" in sentence.lower():
        return True
    tokens = sentence.split()
    labels = sum(1 for t in tokens if t.strip(":.,").lower() in _FORM_LABELS)
    numbers = sum(1 for t in tokens if re.fullmatch(r"\d+(?:\.\d+)*\.?|[ivxl]+", t.lower()))
    lower = sum(1 for t in tokens if t.isalpha() and t.islower())  # a sentence's own words
    return labels >= 0.4 * len(tokens) or (
        numbers >= 4 and numbers >= 0.25 * len(tokens) and lower <= 0.2 * len(tokens)
    )


# A document's opening naming itself and its parties ("This Non-Solicitation Agreement (the
# "Agreement") is made as of September 6, 2001 by and between ..."): it says what the document is
# called, not what it requires, and is quoted only for a question about its parties or its date.
_RECITAL = re.compile(
    r"^\W*(?:this|the)\b.{0,200}?\b(?:agreement|contract|nda|memorandum|letter)\b.{0,300}?"
    r"\b(?:is|are)\s+(?:made|entered\s+into|dated|executed)\b.{0,300}?\bbetween\b"
    # ... and the sentence naming its parties ("X and Y are sometimes referred to herein
    # individually as a "Party" and collectively as the "Parties."")
    r"|\breferred\s+to\s+(?:herein\s+|hereinafter\s+)?(?:individually|collectively|together|each)\s+as\b",
    re.IGNORECASE | re.DOTALL,
)
_OBLIGATION = re.compile(
    r"\b(?:shall|must|agrees?|will\s+not|may\s+not|covenants?|undertakes?)\b", re.IGNORECASE
)
# A question about who the parties are or when the document was made ("the receiving party"
# alone is not one).
_ASKS_PARTIES = re.compile(
    r"\bwho\b|\bwhich\s+parties\b|\bparties\s+(?:to|of)\b|\bbetween\s+whom\b|\bdated?\b|"
    r"\beffective\s+date\b|\bentered\s+into\b|\bsigned\b|\bexecuted\b|\bwhen\s+was\b",
    re.IGNORECASE,
)


def is_recital(sentence: str) -> bool:
    """Whether `sentence` is a document's opening recital of its name, date and parties."""
    return bool(_RECITAL.search(sentence)) and not _OBLIGATION.search(sentence)


def best_sentences(
    question: str,
    results: Sequence[dict[str, Any]],
    limit: int,
    *,
    min_coverage: float = 0.0,
    ignore: Sequence[str] = (),
) -> list[Sentence]:
    """The sentences that share the most (and rarest) words with the question, at most one per
    passage, from body passages only; a sentence sharing no content word, or less than
    `min_coverage` of the question's words weighted by their rarity, is never chosen. A
    sentence is read with its section's heading ("Incident Response" says what the sentences
    under it are about): the last heading above it in its passage, else the passage's. A word
    only its heading says weighs HEADING_WORD_WEIGHT of one the sentence says itself (a title's
    "Retention Policy" does not make "Version 3.2, approved by the Council" about retention).
    The words of `ignore` (those naming the documents: "which agreements ...") are not the
    question's: every "This Agreement shall ..." would share them."""
    terms = set(content_words(question)) - set(content_words(" ".join(ignore)))
    if not terms:
        return []
    # A follow-up's words ("..., and with how much notice?") weigh less than the question's own:
    # a sentence saying what is asked ("neither party may terminate ... for convenience") before
    # one saying only the follow-up's ("... within thirty (30) days of being notified").
    core = set(content_words(core_question(question)))
    weight_of = {t: 1.0 if t in core else FOLLOW_UP_WORD_WEIGHT for t in terms}
    recitals = bool(_ASKS_PARTIES.search(question))
    candidates: list[tuple[int, dict[str, Any], str, set[str], set[str]]] = []
    heading_words: dict[str, set[str]] = {}  # a heading's words, read once for all its sentences
    for rank, result in enumerate(results):
        if result.get("is_heading"):
            continue
        own = str(result.get("heading") or "").rsplit(" > ", 1)[-1]
        for heading, sentence in headed_sentences(result.get("text", ""), own):
            if not recitals and is_recital(sentence):
                continue  # "This Non-Solicitation Agreement is made ... between": not a covenant
            if heading not in heading_words:
                heading_words[heading] = set(content_words(heading))
            said = set(content_words(sentence))
            candidates.append((rank, result, sentence, said | heading_words[heading], said))
    if not candidates:
        return []
    # Rarer words among the candidates weigh more, as in BM25's IDF.
    total = len(candidates)
    idf = {t: math.log(1 + total / max(1, sum(1 for c in candidates if t in c[3]))) for t in terms}
    whole = sum(idf.values())
    chosen: dict[int, Sentence] = {}
    scored = []
    for rank, result, sentence, vocabulary, said in candidates:
        matched = terms & vocabulary
        if not matched:
            continue
        weight = sum(idf[t] * weight_of[t] * (1.0 if t in said else HEADING_WORD_WEIGHT) for t in matched)
        if weight / whole < min_coverage:
            continue
        coverage = len(matched) / len(terms)
        score = weight * (0.5 + coverage) / (1 + 0.15 * rank)
        scored.append((score, rank, result, sentence))
    for score, _rank, result, sentence in sorted(scored, key=lambda s: (-s[0], s[1])):
        pid = result["passage_id"]
        if pid in chosen:
            continue
        chosen[pid] = Sentence(pid, result["document_id"], result.get("document_title", ""), sentence, score)
        if len(chosen) >= limit:
            break
    return list(chosen.values())


# --- Denials --------------------------------------------------------------------------------
# A question asking whether something may be done ("Which contracts let us terminate for
# convenience?", "... allow the receiving party to share ...").
_ASKS_PERMISSION = re.compile(
    r"\b(?:may|can|could|allows?|allowing|allowed|permits?|permitting|permitted|let|lets|rights?|"
    r"entitles?|entitled|able|option)\b",
    re.IGNORECASE,
)
_DENIAL = re.compile(
    r"\b(?:neither|no)\s+party\s+(?:\w+\s+){0,3}?(?:may|shall|can|will)\b|"
    r"\b(?:may|shall|can|will)\s+not\b|\bcannot\b|\bno\s+(?:right|option|entitlement)\s+to\b|"
    r"\bnot\s+(?:be\s+)?(?:entitled|permitted|allowed)\s+to\b",
    re.IGNORECASE,
)
_PERMISSION = re.compile(
    r"\b(?:may|can|is\s+entitled\s+to|are\s+entitled\s+to|(?:has|have)\s+the\s+right\s+to)\s+((?:\w+\s+){0,2}\w+)",
    re.IGNORECASE,
)
# What limits a denial: "shall not disclose ... except to its employees" allows something.
_EXCEPTION = re.compile(r"\b(?:except|unless|provided|other\s+than|save\s+for|without\s+the\s+prior)\b", re.I)
DENIAL_CLAUSE_CHARS = 100
# A position of quotes denying it (research.engine.store.group_findings).
DENIED_LABEL = "not allowed: "


def denies(quote: str, question: str) -> bool:
    """Whether `quote` denies what `question` asks may be done: "neither party may terminate this
    agreement for convenience" for "Which contracts let us terminate for convenience?". Not
    where the quote also grants it ("Either party may terminate ...; Customer shall not ..."),
    nor where its denial has an exception ("shall not disclose ... except to its employees"):
    such a quote addresses the question without answering it no."""
    if not _ASKS_PERMISSION.search(question) or negated(question) is not None:
        return False
    asked = re.sub(rf"\b(?:{DOCUMENT_NOUNS}|{DOCUMENT_NOUN})\b", " ", core_question(question), flags=re.I)
    terms = {stem(w) for w in content_words(asked)}
    if not terms or _EXCEPTION.search(quote):
        return False

    def says(text: str) -> bool:  # "assigned" says "assignment"
        return any(_same_stem(stem(w), term) for w in content_words(text) for term in terms)

    def governs(start: int) -> bool:
        return says(re.split(r"[.;:]", quote[start : start + DENIAL_CLAUSE_CHARS], maxsplit=1)[0])

    denials = [m for m in _DENIAL.finditer(quote) if governs(m.end())]
    if not denials:
        return False
    denied = {m.start() for m in denials} | {m.end() for m in denials}
    for granted in _PERMISSION.finditer(quote):
        before = quote[max(0, granted.start() - 20) : granted.start()].lower()
        if (
            granted.start() in denied
            or granted.end() in denied
            or re.search(r"\b(?:neither|no|nor|not)\b", before)
        ):
            continue
        if not re.match(r"not\b", granted.group(1), re.I) and says(granted.group(1)):
            return False
    return True


def _same_stem(a: str, b: str) -> bool:
    return a == b or _stems_meet(a, b)


def _stems_meet(a: str, b: str) -> bool:
    """One stem begins the other, the shorter of REFERENCE_MIN_LETTERS letters or more ("renew"
    and "renewal", "assign" and "assignment")."""
    return min(len(a), len(b)) >= REFERENCE_MIN_LETTERS and (a.startswith(b) or b.startswith(a))
