"""Turn free user text into safe search terms. Nothing the user typed reaches SQL syntax:
terms are plain word tokens, quoted for FTS5 and joined with OR for websearch_to_tsquery."""

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_PHRASE = re.compile(r"[\"\u201c\u201d]([^\"\u201c\u201d]+)[\"\u201c\u201d]")
MAX_TERMS = 32

# Function words plus the question scaffolding of research prompts ("which contracts ...").
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each either few for from further had hadn has hasn have haven
    having he her here hers herself him himself his how i if in into is isn it its itself
    just me more most mustn my myself no nor not now of off on once only or other our ours
    ourselves out over own same shan she should shouldn so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was wasn we were weren what when where which while who whom whose why will with won
    would wouldn you your yours yourself yourselves s t d ll m o re ve y anything everything
    something find list show tell describe explain give identify please
    """.split()
)
_QUESTION_STARTS = frozenset(
    """
    what which who whom whose when where why how does do did is are can could should would
    will was were has have list find show describe explain identify compare summarize
    summarise tell give
    """.split()
)
# Keyword queries are short noun phrases; anything longer reads as a question.
_QUESTION_MIN_WORDS = 7


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]
    is_question: bool

    @property
    def is_empty(self) -> bool:
        return not self.terms and not self.phrases


def words(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def parse_query(text: str) -> ParsedQuery:
    all_words = words(text)
    terms: list[str] = []
    for word in all_words:
        if word not in STOPWORDS and word not in terms:
            terms.append(word)
    phrases = []
    for match in _PHRASE.finditer(text):
        phrase = tuple(words(match.group(1)))
        if len(phrase) > 1 and phrase not in phrases:
            phrases.append(phrase)
    if not terms and not phrases and all_words:
        # A query of stopwords only ("what is it") still searches for its words.
        terms = list(dict.fromkeys(all_words))
    stripped = text.strip()
    is_question = bool(all_words) and (
        "?" in stripped or all_words[0] in _QUESTION_STARTS or len(all_words) >= _QUESTION_MIN_WORDS
    )
    return ParsedQuery(
        text=stripped,
        terms=tuple(terms[:MAX_TERMS]),
        phrases=tuple(phrases[:MAX_TERMS]),
        is_question=is_question,
    )


def _fts5_string(tokens: tuple[str, ...] | list[str]) -> str:
    # Tokens are word characters only; doubling quotes keeps this safe even if that changes.
    return '"' + " ".join(tokens).replace('"', '""') + '"'


def fts5_any(query: ParsedQuery) -> str:
    """FTS5 MATCH expression: any term or phrase, ranked by bm25."""
    parts = [_fts5_string([t]) for t in query.terms]
    parts += [_fts5_string(p) for p in query.phrases]
    return " OR ".join(parts)


def fts5_phrase(tokens: list[str]) -> str:
    return _fts5_string(tokens)


def websearch_any(query: ParsedQuery) -> str:
    """Input for websearch_to_tsquery: terms joined with its `or` operator."""
    parts = list(query.terms)
    parts += ['"' + " ".join(p) + '"' for p in query.phrases]
    return " or ".join(parts)
