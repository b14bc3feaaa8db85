"""Versions of one document among those a report cites: "Travel Policy 2023" and "Travel Policy
2025", "... v1" and "... v2", "... (draft)" and "...", or a document whose own text says it
supersedes or replaces another's title; and which of them is current, so that a report does not
set their answers side by side as equals.

Conservative, since a document wrongly called superseded misleads more than a missed version:
two titles are versions only where they are equal once their version markers (version numbers,
years and dates, draft, final, revised, amended, updated) are set aside and at least two real
words are left (a periodic document's two dates, "Annual Report 2023" and "... 2024", are two
documents), and an order is claimed only where the text says so or a version number, a
date or a draft mark gives one; titles alike with no such order are named as versions with none.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corpora.retrieval.query import STOPWORDS

# How a current version is told from an older one, strongest first.
BY_TEXT = "text"
BY_VERSION = "version"
BY_DATE = "date"
BY_DRAFT = "draft"
# A title is a version's only where this many real words are left once its markers are set aside.
CORE_WORDS_MIN = 2
# Documents of a period (a year's report, a meeting's minutes): two of them dated apart are two
# documents, neither superseding the other.
PERIODIC_WORDS = frozenset(
    """
    report reports minutes statement statements invoice invoices newsletter newsletters budget
    budgets forecast forecasts audit audits survey surveys agenda agendas notes review reviews
    results return returns summary bulletin digest accounts log logs filing filings transcript
    transcripts receipt receipts calendar timesheet timesheets payslip payslips memo memos letter
    letters
    """.split()
)
# A version number names a version ("replaces version 1") this close after the verb.
VERSION_NEAR_CHARS = 40
# The verbs a document's text uses to say it supersedes another, for the run store's search.
SUPERSEDING_PHRASES = ("supersedes", "supersede", "replaces", "replace", "superseded", "replaced")

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d{2}"
_DATE_ISO = re.compile(rf"(?<![^\W_]|\.)({_YEAR})[-_./](\d{{1,2}})[-_./](\d{{1,2}})(?![^\W_]|\.\d)")
# "06_15_2020", "15.06.2020": day and month may be either way round, so only the year is read.
_DATE_NUMERIC = re.compile(rf"(?<![^\W_]|\.)\d{{1,2}}[-_./]\d{{1,2}}[-_./]({_YEAR})(?![^\W_]|\.\d)")
_DATE_MONTH = re.compile(
    rf"(?<![^\W_])({_MONTH})\.?[\s_-]+(?:\d{{1,2}}(?:st|nd|rd|th)?,?[\s_-]+)?({_YEAR})(?![^\W_])",
    re.IGNORECASE,
)
_YEAR_ALONE = re.compile(rf"(?<![^\W_]|\.){_YEAR}(?![^\W_]|\.\d)")
_VERSION = re.compile(
    r"(?<![^\W_])(?:v|ver\.?|version|rev\.?|revision)\s*(\d{1,3}(?:\.\d{1,3}){0,2})(?![^\W_]|\.\d)",
    re.IGNORECASE,
)
_DRAFT = re.compile(r"\bdrafts?\b", re.IGNORECASE)
_MARKER_WORDS = re.compile(
    r"\b(?:amended\s+and\s+restated|drafts?|final|revised|amended|updated|restated)\b", re.IGNORECASE
)
_TOKEN = re.compile(r"[^\W_]+")
# A sentence ends at a stop followed by a capital ("rev. 2" and "v2.1" do not end one) or a line.
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?=[A-Z])|\n")
# A word after a named title that makes it another title ("Travel Policy" in "Travel Policy 2023").
_TITLE_GOES_ON = re.compile(r"^(?:\d.*|v\d.*|version|ver|rev|revision|draft|final|revised|amended|updated)$")
# "this policy supersedes the ...", "replaces version 1 ..." (this document is the current one);
# "is superseded by the ..." (the one it names is).
_SUPERSEDES = re.compile(r"\b(?:supersedes?|replaces?)\b", re.IGNORECASE)
_SUPERSEDED_BY = re.compile(r"\b(?:superseded|replaced)\s+by\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no\s+longer|nothing\s+in)\b[^.;]*$", re.IGNORECASE)


@dataclass(frozen=True)
class TitleVersion:
    """What a title says of its version: its words with the markers set aside, and the markers."""

    core: tuple[str, ...]
    # all its words, markers too
    words: tuple[str, ...]
    version: tuple[int, ...] | None
    # (year, month or 0); month 0 where the title gives none
    date: tuple[int, int] | None
    draft: bool


@dataclass(frozen=True)
class Supersession:
    """`current` is the version of one document that applies where it and `older` differ."""

    current: int
    older: int
    by: str  # BY_TEXT, BY_VERSION, BY_DATE or BY_DRAFT


@dataclass(frozen=True)
class DocumentVersions:
    superseded: Sequence[Supersession] = ()
    # pairs of documents whose titles are alike but whose order nothing tells, each by id
    unordered: Sequence[tuple[int, int]] = ()

    def as_data(self) -> dict[str, Any]:
        return {
            "superseded": [{"current": s.current, "older": s.older, "by": s.by} for s in self.superseded],
            "unordered": [list(pair) for pair in self.unordered],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> "DocumentVersions":
        data = data or {}
        return cls(
            superseded=[
                Supersession(int(s["current"]), int(s["older"]), str(s["by"]))
                for s in data.get("superseded") or ()
            ],
            # a pair, or (in the writer's prompt data) {documents: pair, titles}
            unordered=[
                (int(a), int(b))
                for pair in data.get("unordered") or ()
                for a, b in [pair["documents"] if isinstance(pair, Mapping) else pair]
            ],
        )

    def among(self, documents: Iterable[int]) -> "DocumentVersions":
        """Only the relations between `documents` (those a question cites)."""
        ids = set(documents)
        return DocumentVersions(
            [s for s in self.superseded if s.current in ids and s.older in ids],
            [p for p in self.unordered if set(p) <= ids],
        )

    def current_of(self, older: int) -> int | None:
        """The version that supersedes `older` and is superseded by none here (by way of those
        between where the text says so: A supersedes B, B supersedes C); None for a document
        superseded by none, or where two lines of versions part."""
        seen = {older}
        document = older
        while True:
            above = {s.current for s in self.superseded if s.older == document}
            tops = {d for d in above if not any(s.older == d for s in self.superseded)}
            if len(tops) > 1 or (not tops and len(above) != 1):
                return None
            document = next(iter(tops or above))
            if tops:
                return document
            if document in seen:
                return None
            seen.add(document)

    def how(self, current: int, older: int) -> str | None:
        """How `current` is told to supersede `older` (BY_*), None where only by way of others."""
        return next((s.by for s in self.superseded if s.current == current and s.older == older), None)


def title_version(title: str) -> TitleVersion:
    text = " ".join(str(title).split())
    words = tuple(_TOKEN.findall(text.lower()))
    version = None
    if match := _VERSION.search(text):
        version = tuple(int(n) for n in match.group(1).split("."))
    date = None
    if match := _DATE_ISO.search(text):
        date = (int(match.group(1)), int(match.group(2)))
    elif match := _DATE_MONTH.search(text):
        date = (int(match.group(2)), _MONTHS[match.group(1).lower()])
    elif match := _DATE_NUMERIC.search(text):
        date = (int(match.group(1)), 0)
    elif match := _YEAR_ALONE.search(text):
        date = (int(match.group()), 0)
    draft = bool(_DRAFT.search(text))
    for pattern in (_VERSION, _DATE_ISO, _DATE_MONTH, _DATE_NUMERIC, _YEAR_ALONE, _MARKER_WORDS):
        text = pattern.sub(" ", text)
    return TitleVersion(tuple(_TOKEN.findall(text.lower())), words, version, date, draft)


def _real_words(core: Sequence[str]) -> int:
    return sum(1 for w in core if w.isalpha() and len(w) > 1 and w not in STOPWORDS)


def _one_document(a: TitleVersion, b: TitleVersion) -> bool:
    """Whether two titles name versions of one document: the same words once their markers are
    set aside, two real words at least, and not a document of a period apart from its date
    ("Annual Report 2023" and "Annual Report 2024", "Board Minutes" of two meetings). Two
    documents of one title ("Services Agreement", with two suppliers) say nothing of versions."""
    if a.core != b.core or a.words == b.words or _real_words(a.core) < CORE_WORDS_MIN:
        return False
    return a.date == b.date or not PERIODIC_WORDS & set(a.core)


def _title_order(a: TitleVersion, b: TitleVersion) -> tuple[int, str] | None:
    """(1 where `a` is the current one, -1 where `b` is, how) for two titles of one document;
    None where their markers tell no order or disagree."""
    said: list[tuple[int, str]] = []
    if a.version and b.version and a.version != b.version:
        said.append((1 if a.version > b.version else -1, BY_VERSION))
    if a.date and b.date and a.date != b.date:
        (ya, ma), (yb, mb) = a.date, b.date
        if ya != yb:
            said.append((1 if ya > yb else -1, BY_DATE))
        elif ma and mb:
            said.append((1 if ma > mb else -1, BY_DATE))
    if a.draft != b.draft and a.version == b.version and a.date == b.date:
        said.append((-1 if a.draft else 1, BY_DRAFT))
    if not said or len({way for way, _ in said}) > 1:
        return None
    return said[0]


def superseding_mentions(text: str, titles: Mapping[int, str], *, own: int) -> list[tuple[int, bool]]:
    """(document, whether `own` supersedes it) for each other document of `titles` a sentence
    of `text` (document `own`'s) names after "supersedes"/"replaces" (`own` supersedes it) or
    "superseded by"/"replaced by" (it supersedes `own`); a negated sentence names none. A title
    is named by all its words in order (case and punctuation aside), with two real words at least,
    where it is `own`'s but for its version markers or names an edition (a version number or a
    date: "the Travel Policy 2023"), not a kind of document many share ("This Agreement
    supersedes the Mutual Confidentiality Agreement" may mean another party's); or, for a title
    equal to `own`'s but for its version markers, by its version number alone ("This policy
    replaces version 1." in "Data Retention Policy v2" names "... v1")."""
    found: list[tuple[int, bool]] = []
    parsed = {d: title_version(t) for d, t in titles.items()}
    mine = parsed.get(own)
    siblings = {
        d: p.version
        for d, p in parsed.items()
        if d != own and mine and p.version and p.core == mine.core and _real_words(p.core) >= CORE_WORDS_MIN
    }
    wanted = {
        d: parsed[d].words
        for d in titles
        if d != own
        and _real_words(parsed[d].words) >= CORE_WORDS_MIN
        and ((mine and parsed[d].core == mine.core) or parsed[d].version or parsed[d].date)
    }
    for sentence in _SENTENCE_END.split(text):
        for pattern, supersedes in ((_SUPERSEDED_BY, False), (_SUPERSEDES, True)):
            match = pattern.search(sentence)
            if match is None or _NEGATION.search(sentence[: match.start()]):
                continue
            after = tuple(_TOKEN.findall(sentence[match.end() :].lower()))
            named = [d for d, words in wanted.items() if _holds(after, words)]
            if number := _VERSION.search(sentence[match.end() :][:VERSION_NEAR_CHARS]):
                version = tuple(int(n) for n in number.group(1).split("."))
                named += [d for d, v in siblings.items() if v == version]
            for document in named:
                if (document, supersedes) not in found:
                    found.append((document, supersedes))
            break
    return found


def _holds(words: tuple[str, ...], part: tuple[str, ...]) -> bool:
    """Whether `words` name the title `part`, and not a longer one it begins."""
    return any(
        words[i : i + len(part)] == part
        and not (i + len(part) < len(words) and _TITLE_GOES_ON.match(words[i + len(part)]))
        for i in range(len(words) - len(part) + 1)
    )


def document_versions(
    titles: Mapping[int, str], texts: Mapping[int, Sequence[str]] | None = None
) -> DocumentVersions:
    """The version relations among the documents of `titles` (id -> title): from `texts` (id ->
    passages of that document saying it supersedes or replaces something, superseding_mentions)
    first, then from their titles (title_version). A pair the text and titles order both ways,
    or the text orders both ways, is left unordered."""
    said: dict[tuple[int, int], set[int]] = {}
    for own, passages in (texts or {}).items():
        for passage in passages:
            for other, supersedes in superseding_mentions(passage, titles, own=own):
                current = own if supersedes else other
                said.setdefault(tuple(sorted((own, other))), set()).add(current)  # type: ignore[arg-type]
    parsed = {d: title_version(t) for d, t in titles.items()}
    ids = sorted(parsed)
    superseded: list[Supersession] = []
    unordered: list[tuple[int, int]] = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            alike = _one_document(parsed[a], parsed[b])
            by_text = said.get((a, b), set())
            if len(by_text) == 1:
                current = next(iter(by_text))
                superseded.append(Supersession(current, b if current == a else a, BY_TEXT))
                continue
            order = _title_order(parsed[a], parsed[b]) if alike and not by_text else None
            if order is not None:
                way, how = order
                superseded.append(Supersession(a if way > 0 else b, b if way > 0 else a, how))
            elif alike or by_text:
                unordered.append((a, b))
    return DocumentVersions(superseded, unordered)
