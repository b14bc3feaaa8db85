"""Extractive report drafts composed from recorded findings: what the offline writer submits,
and what a run cut short (budget, time, cancel, failure) renders instead of losing its work.
Every statement is a recorded finding's claim or a count of findings, cited to the findings as
`<cite findings="...">`; the citations renderer turns them into footnotes. One kind is not cited,
as it quotes nothing: which of two versions of a document a question cites applies, said only
where their titles or text show it (research.engine.versions)."""

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from research.engine.grouping import group_texts
from research.engine.intent import document_words
from research.engine.text import content_words, denies, names_held_by_none
from research.engine.versions import (
    BY_DATE,
    BY_DRAFT,
    BY_TEXT,
    BY_VERSION,
    DocumentVersions,
    document_versions,
)

OTHER_FINDINGS = "Other findings"
GROUP_EXAMPLES = 3
# Documents named on a Key findings line whose words several documents share.
SAME_TITLES = 3
SUMMARY_POSITIONS = 4
# A question whose every quote holds less than this share of its words (of at least this many)
# gets a caution in the Summary (_weak_evidence).
WEAK_EVIDENCE_SHARE = 0.25
WEAK_EVIDENCE_MIN_WORDS = 4
SUMMARY_CITES = 3
GAP_TITLES = 25
# A per-document table's evidence cell: the claim's first words, so a row reads at a glance.
CELL_WORDS = 30
CELL_LEAD_WORDS = 5
# What a word giving the value a question asks for (an amount, a duration, a law's place) weighs
# in choosing a cell's words, against a word of the question.
VALUE_WEIGHT = 2.0
ORIGIN_SWEEP = "sweep"


@dataclass(frozen=True)
class QuestionSummary:
    """A sub-question of the plan and, for a swept one, how many documents were judged."""

    index: int
    question: str
    swept: bool = False
    documents_examined: int = 0
    # Titles of documents judged not to address it, and ids of those judged to address it.
    not_addressing: Sequence[str] = ()
    addressing: Sequence[int] = ()
    # The ids of the documents judged not to address it, in the order of `not_addressing`.
    not_addressing_ids: Sequence[int] = ()
    # Titles of documents judged not to address it whose researchers' findings for it quote a
    # passage the judge read: those findings are set aside (findings_set_aside), not cited.
    set_aside: Sequence[str] = ()
    # The question as asked where it asks which documents do not say something: `question` is
    # then the affirmative one researched and judged, and the answer the documents that do not
    # address it (absent_titles).
    asked: str = ""
    # Documents the run could search (its scope, or the corpus): more than were examined when
    # the sweep's cap stopped it.
    documents_in_scope: int = 0
    # {document: finding id} of the documents judged to address it by a quote already recorded
    # for another question (one quote answering two): that finding is its evidence here too.
    shared: Mapping[int, int] = field(default_factory=dict)
    # The names it names that no document in scope holds ("Japan"): no document answers it.
    absent_names: Sequence[str] = ()


@dataclass(frozen=True)
class Position:
    label: str
    finding_ids: Sequence[int]  # most central first


@dataclass
class _Question:
    summary: QuestionSummary
    findings: list[Mapping[str, Any]] = field(default_factory=list)
    # another question's findings that are this one's evidence too (QuestionSummary.shared)
    shared: list[Mapping[str, Any]] = field(default_factory=list)


def compose_report(
    *,
    title: str,
    questions: Sequence[QuestionSummary],
    findings: Sequence[Mapping[str, Any]],
    document_titles: Mapping[int, str],
    positions: Mapping[int, Sequence[Position]] | None = None,
    note: str | None = None,
    brief: bool = False,
    both: Sequence[Mapping[str, Any]] = (),
    not_planned: Sequence[str] = (),
    named: Sequence[str] = (),
    corrections: Sequence[Sequence[str]] = (),
    not_judged: Sequence[str] = (),
    unfinished: bool = False,
    versions: DocumentVersions | None = None,
) -> str:
    """The report: Summary with counts, Key findings by position, a per-document table for
    swept questions, Detailed analysis, Gaps. `positions` groups each question's findings
    (question index -> positions); a question without groups lists its findings by document.
    `both`: questions of the request ({question, of: [two question indices]}) answered by the
    documents that answer both of theirs. `brief` (the fast path): the answer's findings and
    the gaps only. `not_planned`: parts of the request beyond the run's breadth, named in Gaps.
    `named`: the titles of the documents the request names, which alone the run searched.
    `corrections`: the request's misspelt words, [typed, read as]. `unfinished`: the run failed
    or was cut short (cancelled, out of budget) before it finished, so a question without
    findings was not researched to its end (Gaps says so, not that nothing supports an answer).
    `versions`: which documents are versions of one document (research.engine.versions); where
    a question cites two, the older is marked where it is named and the Summary says which
    applies."""
    by_index = _assign(questions, findings)
    titles = {int(k): v for k, v in document_titles.items()}
    versions = versions or DocumentVersions()
    lines = [f"# {_one_line(title)}", ""]
    if note:
        lines += [f"*{_one_line(note)}*", ""]
    if corrections:
        read = ", ".join(f"{_one_line(typed)} → {_one_line(as_)}" for typed, as_ in corrections)
        lines += [
            f"Read as the collection spells it: {read}. Words it does not use were taken for the "
            "nearest it does; ask again in other words if that is not what you meant.",
            "",
        ]
    if named:
        which = "; ".join(f"*{_one_line(t)}*" for t in named)
        lines += [
            f"Asked of the document{_s(named)} the request names, alone: {which}. The rest of the "
            "collection was not searched; choose documents, or ask about the collection, to widen it.",
            "",
        ]
    if brief:
        lines += _brief(by_index, titles, versions)
    else:
        conjunctions = _conjunctions(by_index, both, titles)
        lines += _summary(by_index, positions or {}, titles, conjunctions, versions)
        lines += _both(conjunctions)
        lines += _key_findings(by_index, positions or {}, titles, versions)
        lines += _absent(by_index, titles)
        lines += _tables(by_index, positions or {}, titles, versions)
        lines += _analysis(by_index, positions or {}, titles, versions)
    lines += _gaps(by_index, titles, not_planned, not_judged, unfinished=unfinished)
    return "\n".join(lines).strip() + "\n"


def _assign(
    questions: Sequence[QuestionSummary], findings: Sequence[Mapping[str, Any]]
) -> dict[int, _Question]:
    """Each finding under its sub-question: by the index it was recorded with, else by its
    section's text; the rest under 'Other findings'."""
    by_index = {q.index: _Question(q) for q in questions}
    by_text = {" ".join(q.question.split()).lower(): q.index for q in questions}
    other = max(by_index, default=-1) + 1
    for finding in findings:
        index = finding.get("question")
        if index not in by_index:
            index = by_text.get(" ".join(str(finding.get("section") or "").split()).lower(), other)
        if index == other and other not in by_index:
            by_index[other] = _Question(QuestionSummary(other, OTHER_FINDINGS))
        by_index[index].findings.append(finding)
    by_id = {f["id"]: f for f in findings}
    for item in by_index.values():
        own = {f["document_id"] for f in item.findings}
        item.shared.extend(by_id[i] for d, i in item.summary.shared.items() if i in by_id and d not in own)
    return by_index


def _summary(
    by_index: dict[int, _Question],
    positions: Mapping[int, Sequence[Position]],
    titles: Mapping[int, str],
    conjunctions: Sequence["_Conjunction"] = (),
    versions: DocumentVersions | None = None,
) -> list[str]:
    lines = ["## Summary", ""]
    for both in conjunctions:
        count = len(both.documents)
        lines.append(
            f"- **{_one_line(both.question)}** {count} document{_s(range(count))} of those examined "
            f"answer{'s' if count == 1 else ''} both *{_one_line(both.first)}* and "
            f"*{_one_line(both.second)}* (listed under Documents answering both)."
        )
    answered = [
        q for q in by_index.values() if _evidence(q) or _answers_by_absence(q) or q.summary.absent_names
    ]
    if not answered:
        return [
            *lines,
            "No finding was recorded: the corpus gave no verbatim support for the questions asked.",
            "",
        ]
    for item in by_index.values():
        if _answers_by_absence(item):
            lines.append(_absence_line(item, positions, titles))
            continue
        if item.summary.absent_names:
            lines.append(_held_by_none_line(item))
            continue
        evidence = _evidence(item)
        if not evidence:
            continue
        q, documents = item.summary, {f["document_id"] for f in evidence}
        notes: list[str] = []
        count = 0
        if q.swept and q.documents_examined:
            count = len(set(q.addressing) or {f["document_id"] for f in _table_rows(item)})
            head = f"{count} of {q.documents_examined} documents examined address it"
            unexamined = q.documents_in_scope - q.documents_examined
            if unexamined > 0:
                notes.append(
                    f"{unexamined} more of the {q.documents_in_scope} in scope "
                    f"{'was' if unexamined == 1 else 'were'} not examined: the sweep judges the documents "
                    "its searches reach, up to the depth's cap"
                )
        else:
            head = f"{len(evidence)} finding{_s(evidence)} from {len(documents)} document{_s(documents)}"
        notes += _weak_evidence(q.question, evidence)
        if notes:
            head += f" ({'; '.join(notes)})"
        # A lone finding's answer is its quote itself, not a position among others.
        shown = _among_others(item, positions) and _positions_text(
            item, positions, count if q.swept and q.documents_examined else None
        )
        if shown:
            lines.append(f"- **{_one_line(q.question)}** {head}. Positions: {shown}.")
        else:
            lines.append(f"- **{_one_line(q.question)}** {head}: {_cite(evidence[0])}")
        lines += [f"    - {line}" for line in _versions_lines(documents, versions, titles)]
    lines.append("")
    return lines


@dataclass(frozen=True)
class _Conjunction:
    question: str
    first: str
    second: str
    # (title, the findings of the two questions quoting it) of each document answering both, by title
    documents: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]


def _answer(item: _Question, titles: Mapping[int, str]) -> dict[int, str]:
    """The documents answering a question, id -> title: for one asked in the negative those
    examined without it, else those judged to address it or quoted for it."""
    q = item.summary
    if q.asked:
        return {d: _one_line(t) for d, t in _without(item, titles) if d is not None}
    quoted = {f["document_id"]: _title(titles, f) for f in item.findings}
    return {d: quoted.get(d) or _one_line(titles.get(d) or f"Document {d}") for d in {*q.addressing, *quoted}}


def _conjunctions(
    by_index: dict[int, _Question], both: Sequence[Mapping[str, Any]], titles: Mapping[int, str]
) -> list[_Conjunction]:
    found = []
    for entry in both:
        of = [by_index.get(i) for i in entry.get("of") or ()]
        if len(of) != 2 or None in of or not all(item.summary.swept for item in of):
            continue
        first, second = of
        # A document whose quotes deny what a question asks may be done ("neither party may
        # terminate this agreement for convenience") addresses it, and does not have it.
        denying = [_denying(first), _denying(second)]
        answers = [
            {d: t for d, t in _answer(item, titles).items() if d not in denied}
            for item, denied in zip((first, second), denying, strict=True)
        ]
        shared = set(answers[0]) & set(answers[1])
        cites = {d: [f for item in of for f in item.findings if f["document_id"] == d] for d in shared}
        documents = sorted(((answers[0][d], cites[d]) for d in shared), key=lambda t: t[0].lower())
        found.append(
            _Conjunction(
                str(entry.get("question") or ""),
                first.summary.asked or first.summary.question,
                second.summary.asked or second.summary.question,
                documents,
            )
        )
    return found


def _denying(item: _Question) -> set[int]:
    """The documents all of whose findings for a question asked in the affirmative deny it."""
    if item.summary.asked:
        return set()
    verdicts: dict[int, set[bool]] = {}
    for finding in item.findings:
        verdicts.setdefault(finding["document_id"], set()).add(
            denies(finding["quote"], item.summary.question)
        )
    return {d for d, said in verdicts.items() if said == {True}}


def _both(conjunctions: Sequence[_Conjunction]) -> list[str]:
    """Each conjunction's documents: those answering both of its questions, each with the
    findings of the questions it is cited for (an absence has none)."""
    lines: list[str] = []
    for both in conjunctions:
        pair = f"both *{_one_line(both.first)}* and *{_one_line(both.second)}*"
        lines += [f"## Documents answering both: {_one_line(both.question)}", ""]
        if not both.documents:
            lines += [f"No document examined answers {pair}.", ""]
            continue
        count = len(both.documents)
        lines += [
            f"This document answers {pair} (with its first quote that says so; an absence has none):"
            if count == 1
            else f"These {count} documents answer {pair} (each with its first quote that says so; an "
            "absence has none):",
            "",
        ]
        for title, cited in both.documents:
            lines.append(f"- *{title}*" + "".join(f": {_cite(f, cell=True)}" for f in cited[:1]))
        lines.append("")
    return lines


def _positions_text(
    item: _Question, positions: Mapping[int, Sequence[Position]], documents: int | None = None
) -> str:
    """The question's main positions, each with its count of documents, cited: "" with none.
    Past SUMMARY_POSITIONS, the positions left and their documents are counted; of `documents`
    addressing it, those in no position (a finding shared with another question) too."""
    every = list(positions.get(item.summary.index, ()))
    shown = "; ".join(
        _cite_ids(
            g.finding_ids[:SUMMARY_CITES],
            f"{_documents(item, g)} document{_s(range(_documents(item, g)))}: {g.label}",
        )
        for g in every[:SUMMARY_POSITIONS]
    )
    if not shown:
        return shown
    rest = every[SUMMARY_POSITIONS:]
    if rest:
        count = sum(_documents(item, g) for g in rest)
        more = f"{len(rest)} more position{_s(rest)} ({count} document{_s(range(count))})"
        shown += f"; and {more} under Key findings"
    placed = sum(_documents(item, g) for g in every)
    if documents is not None and documents > placed:
        unplaced = documents - placed
        shown += f"; {unplaced} more document{_s(range(unplaced))} listed under Documents"
    return shown


def _answers_by_absence(item: _Question) -> bool:
    """A negated question (`asked`) swept over documents: answered by those without it."""
    return bool(item.summary.asked and item.summary.swept and item.summary.documents_examined)


def absent_titles(item: _Question, titles: Mapping[int, str]) -> list[str]:
    """The titles of the documents without it (_without), by title."""
    return sorted((t for _, t in _without(item, titles)), key=str.lower)


def _without(item: _Question, titles: Mapping[int, str]) -> list[tuple[int | None, str]]:
    """(id, title) of each document examined for a swept question that no passage was judged to
    address and no researcher quoted for it: by id where the summary has them (two documents
    may share a title), else by title (id None)."""
    q = item.summary
    if len(q.not_addressing_ids) == len(q.not_addressing):
        quoted_ids = {f["document_id"] for f in item.findings}
        return [
            (d, t) for d, t in zip(q.not_addressing_ids, q.not_addressing, strict=True) if d not in quoted_ids
        ]
    quoted = {_title(titles, f) for f in item.findings}
    return [(None, t) for t in dict.fromkeys(q.not_addressing) if t not in quoted]


def _absence_line(
    item: _Question, positions: Mapping[int, Sequence[Position]], titles: Mapping[int, str]
) -> str:
    q = item.summary
    absent = absent_titles(item, titles)
    having = len(set(q.addressing) | {f["document_id"] for f in item.findings})
    line = (
        f"- **{_one_line(q.asked)}** In {len(absent)} of the {q.documents_examined} documents examined, "
        f"no passage was judged to address *{_one_line(q.question)}* (they are listed under "
        f"Documents without it). {having} document{_s(range(having))} "
        f"{'does' if having == 1 else 'do'}"
    )
    shown = _positions_text(item, positions)
    if shown:
        return f"{line}. Positions: {shown}."
    if item.findings:
        return f"{line}: {_cite(item.findings[0])}"
    return f"{line}."


def _absent(by_index: dict[int, _Question], titles: Mapping[int, str]) -> list[str]:
    """For each negated question, the documents examined that do not address its affirmative:
    its answer. No passage says a thing is absent, so the list is the sweep's account, uncited."""
    lines: list[str] = []
    for item in by_index.values():
        if not _answers_by_absence(item):
            continue
        q, absent = item.summary, absent_titles(item, titles)
        unexamined = q.documents_in_scope - q.documents_examined
        lines += [
            f"## Documents without it: {_one_line(q.asked)}",
            "",
            f"In these {len(absent)} of the {q.documents_examined} documents examined, no passage was "
            f"judged to address *{_one_line(q.question)}* (the judge read each document's best "
            "passages for it; a document not examined is not listed):",
            "",
            *[f"- *{_one_line(t)}*" for t in absent],
            "",
        ]
        if unexamined > 0:
            were, they = ("was", "it") if unexamined == 1 else ("were", "they")
            lines += [
                f"{unexamined} more document{_s(range(unexamined))} of the {q.documents_in_scope} the run "
                f"could search {were} not examined (the depth's cap on documents swept): {they} may "
                "lack it too.",
                "",
            ]
    return lines


def _key_findings(
    by_index: dict[int, _Question],
    positions: Mapping[int, Sequence[Position]],
    titles: Mapping[int, str],
    versions: DocumentVersions | None = None,
) -> list[str]:
    grouped = [
        (item, positions[item.summary.index]) for item in by_index.values() if _among_others(item, positions)
    ]
    if not grouped:
        return []
    lines = ["## Key findings", ""]
    for item, groups in grouped:
        findings = {f["id"]: f for f in item.findings}
        older = _superseded(item, versions, titles)
        lines += [f"### {_one_line(item.summary.question)}", ""]
        for group in groups:
            members = [findings[i] for i in group.finding_ids if i in findings]
            if not members:
                continue
            count = _documents(item, group)
            lines += [f"**{_one_line(group.label)}** ({count} document{_s(range(count))})", ""]
            shown = _examples(members)
            for alike in shown:
                names = [_named(titles, f, older) for f in alike[:SAME_TITLES]]
                if len(alike) > SAME_TITLES:
                    names.append(f"{len(alike) - SAME_TITLES} more")
                claim = _one_line(alike[0]["claim"])
                lines.append(f"- {_cite_ids([f['id'] for f in alike], claim)} ({'; '.join(names)})")
            rest = len(members) - sum(len(alike) for alike in shown)
            if rest:
                lines.append(f"- and {rest} more in the table below.")
            lines.append("")
    return lines


def _examples(members: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The findings of a position Key findings shows: its first GROUP_EXAMPLES claims, the same
    words in several documents (a template clause) one line citing each."""
    same: dict[str, list[Mapping[str, Any]]] = {}
    for finding in members:
        same.setdefault(_one_line(finding["claim"]).lower(), []).append(finding)
    return list(same.values())[:GROUP_EXAMPLES]


def _among_others(item: _Question, positions: Mapping[int, Sequence[Position]]) -> bool:
    """Whether the question's positions group more than one finding: a lone finding (one
    document answers a swept question) has its position in its table row and its quote in the
    Summary, not a Key findings group of one."""
    return sum(len(group.finding_ids) for group in positions.get(item.summary.index, ())) > 1


def _shown_in_key_findings(item: _Question, positions: Mapping[int, Sequence[Position]]) -> set[int]:
    findings = {f["id"]: f for f in item.findings}
    return {
        f["id"]
        for group in positions.get(item.summary.index, ())
        for alike in _examples([findings[i] for i in group.finding_ids if i in findings])
        for f in alike
    }


def _tables(
    by_index: dict[int, _Question],
    positions: Mapping[int, Sequence[Position]],
    titles: Mapping[int, str],
    versions: DocumentVersions | None = None,
) -> list[str]:
    lines: list[str] = []
    for item in by_index.values():
        swept = _table_rows(item)
        if not item.summary.swept or not swept:
            continue
        # A row's finding recorded for another question (one quote answering both) keeps the
        # position it has there, as the exports give it.
        label_of = {i: g.label for groups in positions.values() for g in groups for i in g.finding_ids}
        label_of |= {i: g.label for g in positions.get(item.summary.index, ()) for i in g.finding_ids}
        older = _superseded(item, versions, titles)
        lines += [
            f"## Documents: {_one_line(item.summary.question)}",
            "",
            "| Document | Position | Evidence |",
            "|---|---|---|",
        ]
        for finding in sorted(swept, key=lambda f: (_title(titles, f).lower(), f["id"])):
            label = label_of.get(finding["id"]) or finding.get("position") or ""
            lines.append(
                f"| {_cell(_named(titles, finding, older, cell=True))} | {_cell(_one_line(label))} | "
                f"{_cite(finding, cell=True, about=item.summary.question)} |"
            )
        lines.append("")
    return lines


def _held_by_none_line(item: _Question) -> str:
    """A question naming what no document holds: none answers it; what its researchers found
    is the nearest the collection comes."""
    q, evidence = item.summary, _evidence(item)
    names = _names(q.absent_names)
    scope = f"the {q.documents_in_scope} documents" if q.documents_in_scope > 1 else "the documents"
    line = f"- **{_one_line(q.question)}** None: no passage of {scope} in scope mentions {names}."
    if evidence:
        line += f" The nearest passages found, which do not answer it: {_cite(evidence[0])}"
        if len(evidence) > 1:
            line += f" (and {len(evidence) - 1} more below)"
    return line


def _names(names: Sequence[str]) -> str:
    shown = [f"*{_one_line(n)}*" for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"


def _question_terms(question: str) -> set[str]:
    """What a question asks a document to say: its content words, not those naming the documents."""
    return set(content_words(question)) - set(content_words(" ".join(document_words(question))))


def _weak_evidence(question: str, evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """A caution where no quote says a quarter of what the question asks (of four words or
    more): "What royalty rate do the licensees pay on net sales of mining hardware?" asked of
    NDAs finds "the annual rate of six per cent", and the collection may not answer it at all.
    The bench's questions' best quotes hold a third of their words or more."""
    terms = _question_terms(question)
    if len(terms) < WEAK_EVIDENCE_MIN_WORDS or not evidence:
        return []
    said = max(len(terms & set(content_words(f["quote"]))) for f in evidence)
    if said >= WEAK_EVIDENCE_SHARE * len(terms):
        return []
    return [
        f"no quote says more than {said} of the question's {len(terms)} words: the collection may not "
        "answer it, so read the quotes before relying on them"
    ]


# Why a document supersedes another, after the older one's title in the Summary's line.
_SUPERSEDES_HOW = {
    BY_TEXT: "the text says so",
    BY_VERSION: "a higher version number in its title",
    BY_DATE: "a later date in its title",
    BY_DRAFT: "marked draft",
    None: "by way of a version between them",
}


@dataclass(frozen=True)
class _Later:
    """The version that applies in place of an older one: its title, and whether a document's
    own text says so (else only the titles tell: a later date, a higher number)."""

    title: str
    said: bool


def _older_versions(
    documents: Iterable[int], versions: DocumentVersions | None, titles: Mapping[int, str]
) -> dict[int, _Later]:
    """{older version: the version that applies} among `documents`."""
    if versions is None:
        return {}
    among = versions.among(documents)
    current = {s.older: among.current_of(s.older) for s in among.superseded}
    return {
        o: _Later(_one_line(titles.get(c) or f"Document {c}"), among.how(c, o) == BY_TEXT)
        for o, c in current.items()
        if c is not None
    }


def _superseded(
    item: _Question, versions: DocumentVersions | None, titles: Mapping[int, str]
) -> dict[int, _Later]:
    """_older_versions among the documents a question's evidence cites."""
    return _older_versions({f["document_id"] for f in _evidence(item)}, versions, titles)


def _named(
    titles: Mapping[int, str], finding: Mapping[str, Any], older: Mapping[int, _Later], *, cell: bool = False
) -> str:
    """A finding's document as a line names it in parentheses ("*Travel Policy 2023*,
    superseded by *Travel Policy 2025*" where a version the question also cites says it
    supersedes it; "an earlier version of" where only their titles tell) or a table's cell
    does ("Travel Policy 2023 (superseded by Travel Policy 2025)")."""
    title = _title(titles, finding)
    later = older.get(finding["document_id"])
    if later is None:
        return title if cell else f"*{title}*"
    how = "superseded by" if later.said else "an earlier version of"
    return f"{title} ({how} {later.title})" if cell else f"*{title}*, {how} *{later.title}*"


def _versions_lines(
    documents: Iterable[int], versions: DocumentVersions | None, titles: Mapping[int, str]
) -> list[str]:
    """What the titles or the text tell of the versions among `documents`: which applies, or
    that it could not be told. Only what research.engine.versions found; nothing is cited, as
    nothing is quoted."""
    if versions is None:
        return []
    documents = set(documents)
    among = versions.among(documents)

    def title(document: int) -> str:
        return _one_line(titles.get(document) or f"Document {document}")

    def name(document: int) -> str:
        return f"*{title(document)}*"

    def by_title(document: int) -> tuple[str, int]:
        return title(document).lower(), document

    olders: dict[int, list[int]] = {}
    for older in sorted({s.older for s in among.superseded}):
        current = among.current_of(older)
        if current is not None:
            olders.setdefault(current, []).append(older)
    lines = []
    for current, older in sorted(olders.items(), key=lambda kv: by_title(kv[0])):
        # What a document's text says is stated; what only titles suggest is said as that.
        said_in_text = [o for o in sorted(older, key=by_title) if among.how(current, o) == BY_TEXT]
        by_titles = [o for o in sorted(older, key=by_title) if o not in said_in_text]
        if said_in_text:
            lines.append(
                f"Versions: {name(current)} supersedes {_listed(said_in_text, name, among, current)}; "
                f"where they differ, {name(current)} applies."
            )
        if by_titles:
            listed = _listed(by_titles, name, among, current)
            lines.append(
                f"Versions: {name(current)} looks like a later version of {listed}; "
                f"if so, where they differ, {name(current)} applies."
            )
    placed = {d for current, older in olders.items() for d in (current, *older)}
    for a, b in among.unordered:
        if a in placed and b in placed:
            continue
        first, second = sorted((a, b), key=by_title)
        lines.append(
            f"Versions: {name(first)} and {name(second)} may be versions of one document; which of them "
            "applies where they differ could not be told from their titles or text."
        )
    return lines


def _listed(older: Sequence[int], name: Callable[[int], str], among: DocumentVersions, current: int) -> str:
    said = [f"{name(o)} ({_SUPERSEDES_HOW[among.how(current, o)]})" for o in older]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + f" and {said[-1]}"


def _evidence(item: _Question) -> list[Mapping[str, Any]]:
    """A question's findings, and those of another question that are its evidence too."""
    return [*item.findings, *item.shared]


def _table_rows(item: _Question) -> list[Mapping[str, Any]]:
    """A swept question's row per addressing document: its sweep finding, or (where the sweep
    found a quote a researcher had already recorded) the document's first finding."""
    rows = {f["document_id"]: f for f in item.findings if f.get("origin") == ORIGIN_SWEEP}
    for finding in [*item.findings, *item.shared]:
        if finding["document_id"] in item.summary.addressing:
            rows.setdefault(finding["document_id"], finding)
    return list(rows.values())


def _analysis(
    by_index: dict[int, _Question],
    positions: Mapping[int, Sequence[Position]],
    titles: Mapping[int, str],
    versions: DocumentVersions | None = None,
) -> list[str]:
    """Each question's findings neither its table nor Key findings shows, by document."""
    lines: list[str] = []
    for item in by_index.values():
        shown = {f["id"] for f in _table_rows(item)} if item.summary.swept else set()
        shown |= _shown_in_key_findings(item, positions)
        rest = [f for f in item.findings if f["id"] not in shown]
        if not rest:
            continue
        lines += [f"### {_one_line(item.summary.question)}", ""]
        by_document: dict[int, list[Mapping[str, Any]]] = {}
        for finding in rest:
            by_document.setdefault(finding["document_id"], []).append(finding)
        older = _superseded(item, versions, titles)
        for group in by_document.values():
            later = older.get(group[0]["document_id"])
            how = "superseded by" if later and later.said else "an earlier version of"
            by = f" ({how} *{later.title}*)" if later else ""
            lines += [f"**{_title(titles, group[0])}**{by}", ""]
            lines += [f"- {_cite(f)}" for f in group]
            lines.append("")
    return ["## Detailed analysis", "", *lines] if lines else []


def _brief(
    by_index: dict[int, _Question], titles: Mapping[int, str], versions: DocumentVersions | None = None
) -> list[str]:
    findings = [f for item in by_index.values() for f in item.findings]
    if not findings:
        return ["## Answer", "", "No passage retrieved in this run answers the question.", ""]
    documents = {f["document_id"] for f in findings}
    older = _older_versions(documents, versions, titles)
    lines = ["## Answer", "", *[f"- {_cite(f)} ({_named(titles, f, older)})" for f in findings], ""]
    said = _versions_lines(documents, versions, titles)
    if said:
        lines += [*said, ""]
    in_scope = max((item.summary.documents_in_scope for item in by_index.values()), default=0)
    quoted = len({f["document_id"] for f in findings})
    if in_scope > quoted:
        # The fast path reads one search's best passages: the other documents were not examined.
        lines += [
            f"*From the best passages of one search, in {quoted} of the {in_scope} documents in scope; the "
            "others were not examined. Ask which of the documents say it to have each one examined.*",
            "",
        ]
    return lines


def _gaps(
    by_index: dict[int, _Question],
    titles: Mapping[int, str],
    not_planned: Sequence[str] = (),
    not_judged: Sequence[str] = (),
    *,
    unfinished: bool = False,
) -> list[str]:
    lines = []
    if not_judged:
        named = ", ".join(f"*{_one_line(t)}*" for t in not_judged)
        lines.append(
            f"- Not judged (the judge failed on {'it' if len(not_judged) == 1 else 'them'}; "
            f"not counted among the documents examined): {named}."
        )
    if not_planned:
        named = "; ".join(f"*{_one_line(part)}*" for part in not_planned)
        lines.append(
            f"- Not researched, being more than the sub-questions this run plans (its breadth): {named}. "
            f"A larger breadth or a deeper depth researches {'it' if len(not_planned) == 1 else 'them'}."
        )
    for item in by_index.values():
        q = item.summary
        # A negated question's documents without it are its answer, listed above; a document the
        # judge turned down but a researcher quoted for this question is no gap.
        absence = _answers_by_absence(item)
        unanswered = [] if absence else absent_titles(item, titles)
        if q.absent_names:
            lines.append(
                f"- {_one_line(q.question)}: no document in scope mentions {_names(q.absent_names)}."
            )
        elif not _evidence(item) and not absence and q.question != OTHER_FINDINGS:
            lines.append(
                f"- {_one_line(q.question)}: not researched to its end before the run stopped; "
                "no finding yet."
                if unfinished
                else f"- {_one_line(q.question)}: no passage retrieved in this run supports an answer."
            )
        elif q.swept and unanswered:
            names = [_one_line(t) for t in unanswered[:GAP_TITLES]]
            more = len(unanswered) - len(names)
            listed = ", ".join(f"*{n}*" for n in names) + (f" and {more} more" if more > 0 else "")
            lines.append(
                f"- {_one_line(q.question)}: in {len(unanswered)} of the {q.documents_examined} documents "
                f"examined, no passage was judged to address it: {listed}."
            )
        if q.swept and q.set_aside:
            names = sorted({_one_line(t) for t in q.set_aside}, key=str.lower)
            shown = ", ".join(f"*{n}*" for n in names[:GAP_TITLES])
            more = len(names) - GAP_TITLES
            lines.append(
                f"- {_one_line(q.question)}: what the researchers quoted from {len(names)} "
                f"document{_s(names)} judged not to address it is set aside, not cited: "
                f"{shown}{f' and {more} more' if more > 0 else ''}."
            )
    return ["## Gaps", "", *lines, ""] if lines else []


def _documents(item: _Question, group: Position) -> int:
    findings = {f["id"]: f for f in item.findings}
    return len({findings[i]["document_id"] for i in group.finding_ids if i in findings})


def _cite(finding: Mapping[str, Any], *, cell: bool = False, about: str = "") -> str:
    claim = _one_line(finding["claim"])
    return _cite_ids([finding["id"]], _cell(_shortened(claim, about)) if cell else claim)


def _shortened(claim: str, about: str = "") -> str:
    """A table cell's claim: where it is longer than CELL_WORDS words, the CELL_WORDS that say
    the most of the question `about` (its first ones when nothing does; the Key findings and the
    Sources block hold it whole), unless cutting would split a quotation. "... the laws of the
    State of Florida" keeps "Florida" where a governing-law clause opens with its entire-agreement
    sentence."""
    words = claim.split()
    if len(words) <= CELL_WORDS or any(mark in claim for mark in '"\u201c\u201d'):
        return claim
    terms = _question_terms(about)
    said = [bool(terms & set(content_words(word))) for word in words]
    # A question asking for a value ("how long ...", "what amount ...", "which state's law ...")
    # is answered by the numbers, durations and (for a law or a place) names: they count too,
    # so that "... shall survive for a period of 3 (three) years" keeps its "3 (three) years".
    # They weigh VALUE_WEIGHT question words each: the value is the answer.
    asks = _asked_value(about)
    weight = [
        float(s) + (VALUE_WEIGHT if asks is not None and asks(word) else 0.0)
        for s, word in zip(said, words, strict=True)
    ]
    windows = range(len(words) - CELL_WORDS + 1)
    best = max(windows, key=lambda i: (sum(weight[i : i + CELL_WORDS]), -i))
    # Opened a few words before the first word of the question it holds, so that what follows
    # that word ("governed by the laws of ... Florida") stays in.
    first = next((i for i in range(best, best + CELL_WORDS) if weight[i]), best)
    start = max(0, min(len(words) - CELL_WORDS, first - CELL_LEAD_WORDS))
    shown = " ".join(words[start : start + CELL_WORDS]).rstrip(",;:")
    return ("\u2026 " if start else "") + shown + (" \u2026" if start + CELL_WORDS < len(words) else "")


_ASKS_AMOUNT = re.compile(
    r"\b(?:how\s+(?:long|much|many|soon|often)|when|amounts?|durations?|periods?|terms?\s+of|"
    r"what\s+(?:is\s+the\s+|are\s+the\s+)?(?:amount|cap|limit|fee|price|rate|percentage|notice|period|"
    r"duration|term|deadline|minimum|maximum))\b",
    re.IGNORECASE,
)
_ASKS_PLACE = re.compile(
    r"\b(?:which|what)\s+(?:state|country|jurisdiction|law|laws|court|courts|venue|province)\b|"
    r"\bgoverning\s+law\b|\bgoverns?\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty "
    "fifty sixty ninety hundred thousand million billion half days day months month years year "
    "weeks week business calendar percent"
)
_AMOUNT = rf"[(\[]?[$€£]?\d[\d,.%)]*|\(?(?:{'|'.join(_NUMBER_WORDS.split())})\b"


_AMOUNT_WORD = re.compile(_AMOUNT, re.IGNORECASE)
_NAME_WORD = re.compile(r"[A-Z][a-z]+")
# Capitalised words every contract uses, which name no law or place.
_DEFINED_TERMS = frozenset(
    "this the that these such each any all agreement agreements party parties company section "
    "confidential information receiving disclosing recipient discloser effective date term "
    "state laws law courts court".split()
)


def _asked_value(question: str) -> Callable[[str], bool] | None:
    """Whether a word of a quote says the value `question` asks for: an amount or a duration,
    or also a capitalised name where it asks for a law, place or court; None where it asks for
    no value."""
    if _ASKS_PLACE.search(question):
        return lambda word: bool(
            _AMOUNT_WORD.match(word)
            or (_NAME_WORD.match(word) and word.strip(".,;:()").lower() not in _DEFINED_TERMS)
        )
    if _ASKS_AMOUNT.search(question):
        return lambda word: bool(_AMOUNT_WORD.match(word))
    return None


def _cite_ids(ids: Sequence[int], text: str) -> str:
    return f'<cite findings="{",".join(str(i) for i in ids)}">{text}</cite>'


def _title(titles: Mapping[int, str], finding: Mapping[str, Any]) -> str:
    return _one_line(titles.get(finding["document_id"]) or f"Document {finding['document_id']}")


def _cell(text: str) -> str:
    """Text already on one line (_one_line) in a table cell."""
    return text.replace("|", "\\|")


# Corpus and user text in the report's Markdown reads as written: a contract's "$[***]", a
# Markdown source's "**Vendor:**" or "## § 2", a "<cite ...>" typed into a document open no
# emphasis, footnote, heading, list or tag of their own (the citations renderer reads a
# quotation back unescaped: research.citations.markdown_unescaped). "snake_case" needs no
# escape; a link "[words](url)" stays one, for the renderer to keep its words.
_MARKDOWN_ACTIVE = re.compile(r"[\\`*]|\[(?![^\[\]]*\]\()|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?])|&(?=#?\w+;)")
_MARKDOWN_ENTITIES = {"<": "&lt;", "&": "&amp;"}
_BLOCK_START = re.compile(r"^(?:#|[-+>](?=\s)|\d{1,9}(?=[.)]\s))")


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    line = _MARKDOWN_ACTIVE.sub(lambda m: _MARKDOWN_ENTITIES.get(m.group(), "\\" + m.group()), line)
    # "## § 2 ...", "- Reminder", "12. Term" at the start of a list item are no heading or list.
    match = _BLOCK_START.match(line)
    if match is None:
        return line
    if match.group()[0].isdigit():
        return line[: match.end()] + "\\" + line[match.end() :]
    return "\\" + line


def _s(items: Any) -> str:
    return "" if len(items) == 1 else "s"


def plan_questions_summary(
    *,
    plan: Sequence[Mapping[str, Any]],
    engine_state: Mapping[str, Any],
    titles: Mapping[int, str],
    set_aside: Sequence[Mapping[str, Any]] = (),
) -> list[QuestionSummary]:
    """The plan's sub-questions with what the sweep (engine_state["sweep"]) judged of each, and
    the documents of the `set_aside` findings for it (split_set_aside)."""
    sweep = engine_state.get("sweep") or {}
    questions = []
    for index, step in enumerate(plan):
        if not isinstance(step, Mapping) or not step.get("question"):
            continue
        judged = sweep.get(str(index)) or {}
        examined = [int(d) for d in judged.get("judged", [])]
        addressing = {int(d) for d in judged.get("addressing", [])}
        overruled = {f["document_id"] for f in set_aside if f.get("question") == index}
        questions.append(
            QuestionSummary(
                index=index,
                question=str(step["question"]),
                swept=bool(step.get("sweep")),
                documents_examined=len(examined),
                not_addressing=[titles.get(d, f"Document {d}") for d in examined if d not in addressing],
                not_addressing_ids=[d for d in examined if d not in addressing],
                addressing=sorted(addressing),
                set_aside=[titles.get(d, f"Document {d}") for d in sorted(overruled)],
                asked=str(step.get("asked") or ""),
                documents_in_scope=int(engine_state.get("documents") or 0),
                shared={int(d): int(i) for d, i in (judged.get("shared") or {}).items()},
                absent_names=tuple(
                    names_held_by_none(str(step["question"]), engine_state.get("absent_names") or ())
                ),
            )
        )
    return questions


def findings_set_aside(findings: Sequence[Mapping[str, Any]], engine_state: Mapping[str, Any]) -> set[int]:
    """Ids of the findings a report does not cite: those a researcher recorded for a swept
    sub-question quoting a passage the sweep's judge read of that document (its best passages
    for the question and those the researchers had quoted from it by then, or, read again
    before a draft, since) before finding that the document does not address it. The judge is
    the authority on what it read; a quote it did not see stands. The findings stay recorded
    with the run. Measured (bench/quality.py, standard, offline, when the judge read only the
    best passages): findings the judge had read and turned down were right about their document
    3 times in 16 on CUAD rooms and 2 in 11 on its held-out categories; those it had not read, 6
    in 12 and 1 in 4. Showing it the researchers' passages too moved CUAD rooms 0.659 / 0.701 ->
    0.655 / 0.700 (document recall / precision) and the held-out categories 0.570 / 0.517 ->
    0.570 / 0.520: offline it is about even; an LLM judge weighs what it now reads. Reading
    the later quotes again before each draft then moved CUAD rooms to 0.648 / 0.705 and the
    held-out categories to 0.566 / 0.534 (at deep, 0.656 / 0.689 and 0.570 / 0.492 before)."""
    sweep = engine_state.get("sweep") or {}
    read: dict[str, Mapping[str, Any]] = {
        key: entry.get("turned_down") or {} for key, entry in sweep.items() if isinstance(entry, Mapping)
    }
    aside = set()
    for finding in findings:
        shown = read.get(str(finding.get("question")), {}).get(str(finding["document_id"])) or ()
        if finding["passage_id"] in shown:
            aside.add(finding["id"])
    return aside


def split_set_aside(
    findings: Sequence[Mapping[str, Any]], engine_state: Mapping[str, Any]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(the findings a draft may cite, those set aside: findings_set_aside), in their order."""
    aside = findings_set_aside(findings, engine_state)
    return [f for f in findings if f["id"] not in aside], [f for f in findings if f["id"] in aside]


def positions_by_words(
    questions: Sequence[QuestionSummary], findings: Sequence[Mapping[str, Any]]
) -> dict[int, list[Position]]:
    """Each swept question's findings grouped by the words of their quotes (no embedding model
    needed): what a run cut short renders."""
    by_index = _assign(questions, findings)
    positions: dict[int, list[Position]] = {}
    for index, item in by_index.items():
        if not item.summary.swept or len(item.findings) < 2:
            continue
        groups = group_texts([f["quote"] for f in item.findings], exclude=[item.summary.question])
        positions[index] = [Position(g.label, [item.findings[i]["id"] for i in g.members]) for g in groups]
    return positions


def compose_from_findings(
    *,
    title: str,
    plan: Sequence[Mapping[str, Any]],
    engine_state: Mapping[str, Any],
    findings: Sequence[Mapping[str, Any]],
    titles: Mapping[int, str],
    note: str,
    unfinished: bool = False,
) -> str:
    findings, set_aside = split_set_aside(findings, engine_state)
    # The versions the run found (with what their text says) where it wrote; else their titles'.
    cited = {f["document_id"] for f in findings}
    versions = (
        DocumentVersions.from_data(engine_state["versions"])
        if engine_state.get("versions")
        else document_versions({d: t for d, t in titles.items() if d in cited})
    )
    questions = plan_questions_summary(
        plan=plan, engine_state=engine_state, titles=titles, set_aside=set_aside
    )
    return compose_report(
        title=title,
        questions=questions,
        findings=findings,
        document_titles=titles,
        positions=positions_by_words(questions, findings),
        note=note,
        brief=engine_state.get("strategy") == "fast",
        both=engine_state.get("both") or [],
        not_planned=engine_state.get("not_planned") or [],
        not_judged=[titles.get(int(d), f"Document {d}") for d in engine_state.get("not_judged") or []],
        named=[titles.get(int(d), f"Document {d}") for d in engine_state.get("named_documents") or []],
        corrections=engine_state.get("corrections") or [],
        unfinished=unfinished,
        versions=versions,
    )
