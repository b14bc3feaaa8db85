"""Split a document's text into passages: paragraph-aware, sentence-respecting spans of
about 40-150 words. A passage is only ever (start, end) offsets, so its text is a slice."""

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from corpora.constants import (
    PASSAGE_MAX_CHARS,
    PASSAGE_MAX_WORDS,
    PASSAGE_MIN_WORDS,
    PASSAGE_TARGET_WORDS,
)
from corpora.extraction import HeadingSpan, PageSpan

_BLANK_LINE = re.compile(r"(?:\r\n|\r|\n)[^\S\r\n]*(?:\r\n|\r|\n)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A sentence ends at . ! ? (plus closing quotes/brackets) followed by space and a likely start.
_SENTENCE_END = re.compile(
    r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*"  # the stop and what closes with it
    r"(?=\s+[\"'\u201c\u2018(\[A-Z0-9])"  # then space and what can open a sentence
)
_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr st no nos co corp inc ltd llc jr sr vs etc e.g i.e u.s sec art para fig
    approx dept est govt jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)
_WORD = re.compile(r"\S+")
_NUMBERED = re.compile(
    r"^(?:(?:article|section|part|chapter|schedule|exhibit|annex)\s+)?"
    r"([0-9]+(?:\.[0-9]+)*|[ivxlc]+|[a-z])[.)]?\s+\S",
    re.IGNORECASE,
)
_HEADING_MAX_WORDS = 12
# How far a passage may exceed the limits when it starts with headings.
HEADING_SLACK_WORDS = 30
HEADING_SLACK_CHARS = 240
_HEADING_MAX_CHARS = 120
_HEADING_PATH_MAX_DEPTH = 6
_HEADING_TEXT_MAX_CHARS = 200
_MARKDOWN_HASHES = re.compile(r"^\s*#{1,6}\s*|\s*#+\s*$")


@dataclass(frozen=True)
class PassageSpan:
    start: int
    end: int
    page: int | None
    heading_path: tuple[str, ...]
    is_heading: bool
    word_count: int


@dataclass
class _Unit:
    start: int
    end: int
    words: int
    heading_level: int | None  # None for body text


def chunk_text(
    text: str,
    *,
    pages: Sequence[PageSpan] | None = None,
    headings: Sequence[HeadingSpan] | None = None,
    detect_headings: bool = True,
    min_words: int = PASSAGE_MIN_WORDS,
    target_words: int = PASSAGE_TARGET_WORDS,
    max_words: int = PASSAGE_MAX_WORDS,
    max_chars: int = PASSAGE_MAX_CHARS,
) -> list[PassageSpan]:
    segments = [(p.start, p.end, p.number) for p in pages] if pages else [(0, len(text), None)]
    explicit = sorted(headings or [], key=lambda h: h.start)
    builder = _PassageBuilder(text, min_words=min_words, max_words=max_words, max_chars=max_chars)
    for seg_start, seg_end, page in segments:
        builder.page = page
        for block_start, block_end in _blocks(text, seg_start, seg_end, explicit):
            level = _heading_level(text, block_start, block_end, explicit, detect_headings)
            if level is not None:
                words = _count_words(text, block_start, block_end)
                builder.add_heading(_Unit(block_start, block_end, words, level))
                continue
            for unit in _split_body(text, block_start, block_end, target_words, max_words, max_chars):
                builder.add_body(unit)
        builder.end_segment()
    return builder.passages


class _PassageBuilder:
    def __init__(self, text: str, *, min_words: int, max_words: int, max_chars: int):
        self.text = text
        self.min_words = min_words
        self.max_words = max_words
        self.max_chars = max_chars
        self.page: int | None = None
        self.passages: list[PassageSpan] = []
        self._units: list[_Unit] = []
        self._path_at_start: tuple[str, ...] = ()
        self._stack: list[tuple[int, str]] = []
        self._segment_first = 0  # index of the first passage of the current segment

    def _words(self) -> int:
        return sum(u.words for u in self._units)

    def _body_words(self) -> int:
        return sum(u.words for u in self._units if u.heading_level is None)

    def _fits(self, unit: _Unit) -> bool:
        if not self._units:
            return True
        words, chars = self.max_words, self.max_chars
        if all(u.heading_level is not None for u in self._units):
            # Headings travel with the body they introduce rather than stand alone.
            words, chars = words + HEADING_SLACK_WORDS, chars + HEADING_SLACK_CHARS
        return self._words() + unit.words <= words and unit.end - self._units[0].start <= chars

    def add_heading(self, unit: _Unit) -> None:
        if self._units and (self._body_words() >= self.min_words or not self._fits(unit)):
            self.flush()
        title = _heading_title(self.text[unit.start : unit.end])
        while self._stack and self._stack[-1][0] >= unit.heading_level:
            self._stack.pop()
        self._stack.append((unit.heading_level, title))
        del self._stack[:-_HEADING_PATH_MAX_DEPTH]
        if not self._body_words():
            # Until its body starts, a passage belongs to the latest heading.
            self._path_at_start = self.path()
        self._units.append(unit)

    def add_body(self, unit: _Unit) -> None:
        if not self._fits(unit):
            self.flush()
        if not self._units:
            self._path_at_start = self.path()
        self._units.append(unit)

    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._stack if title)

    def flush(self) -> None:
        if not self._units:
            return
        start, end = self._units[0].start, self._units[-1].end
        self.passages.append(
            PassageSpan(
                start=start,
                end=end,
                page=self.page,
                heading_path=self._path_at_start,
                is_heading=all(u.heading_level is not None for u in self._units),
                word_count=self._words(),
            )
        )
        self._units = []

    def end_segment(self) -> None:
        self.flush()
        self._merge_small_tail()
        self._segment_first = len(self.passages)

    def _merge_small_tail(self) -> None:
        """A short last passage joins its predecessor when both fit in one passage."""
        if len(self.passages) - self._segment_first < 2:
            return
        prev, last = self.passages[-2], self.passages[-1]
        if (
            last.word_count < self.min_words
            and not last.is_heading
            and prev.word_count + last.word_count <= self.max_words
            and last.end - prev.start <= self.max_chars
        ):
            self.passages[-2:] = [
                PassageSpan(
                    start=prev.start,
                    end=last.end,
                    page=prev.page,
                    heading_path=prev.heading_path,
                    is_heading=False,
                    word_count=prev.word_count + last.word_count,
                )
            ]


def _blocks(text: str, seg_start: int, seg_end: int, explicit: Sequence[HeadingSpan]):
    """Paragraphs (separated by blank lines) within a segment, trimmed; explicit headings
    inside a paragraph become blocks of their own."""
    cursor = seg_start
    for match in _BLANK_LINE.finditer(text, seg_start, seg_end):
        yield from _split_at_headings(text, cursor, match.start(), explicit)
        cursor = match.end()
    yield from _split_at_headings(text, cursor, seg_end, explicit)


def _split_at_headings(text: str, start: int, end: int, explicit: Sequence[HeadingSpan]):
    cuts = [start]
    for h in explicit:
        if h.start >= end:
            break
        if h.end <= start:
            continue
        cuts.extend((max(h.start, start), min(h.end, end)))
    cuts.append(end)
    for a, b in itertools.pairwise(cuts):
        trimmed = _trim(text, a, b)
        if trimmed:
            yield trimmed


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _count_words(text: str, start: int, end: int) -> int:
    return len(text[start:end].split())


def _heading_level(
    text: str, start: int, end: int, explicit: Sequence[HeadingSpan], detect: bool
) -> int | None:
    for h in explicit:
        if h.start <= start < h.end or start <= h.start < end:
            if h.start <= start and end <= h.end:
                return h.level
            return None
        if h.start >= end:
            break
    if not detect:
        return None
    return _guess_heading_level(text[start:end])


def _guess_heading_level(block: str) -> int | None:
    """Short single lines that look like titles: ALL CAPS, or numbered and not a sentence."""
    if _LINE_BREAK.search(block) or len(block) > _HEADING_MAX_CHARS:
        return None
    words = block.split()
    if not words or len(words) > _HEADING_MAX_WORDS or block[-1] in ".,;:":
        return None
    letters = [c for c in block if c.isalpha()]
    if len(letters) < 2:
        return None
    numbered = _NUMBERED.match(block)
    if numbered:
        label = numbered.group(1)
        depth = label.count(".") + 1 if label[0].isdigit() else 2
        return min(1 + depth, _HEADING_PATH_MAX_DEPTH)
    upper = sum(1 for c in letters if c.isupper())
    if upper / len(letters) >= 0.8:
        return 1
    return None


def _heading_title(raw: str) -> str:
    title = _MARKDOWN_HASHES.sub("", raw)
    title = " ".join(title.split())
    return title[:_HEADING_TEXT_MAX_CHARS]


def _split_body(
    text: str, start: int, end: int, target_words: int, max_words: int, max_chars: int
) -> list[_Unit]:
    words = _count_words(text, start, end)
    if words <= max_words and end - start <= max_chars:
        return [_Unit(start, end, words, None)]
    pieces = []
    for s_start, s_end in _sentences(text, start, end):
        pieces.extend(_bounded(text, s_start, s_end, max_words, max_chars))
    # Balanced packing: n passages of about words/n each instead of full ones and a stub.
    parts = max(1, -(-words // max_words))
    goal = max(min(target_words, max_words), -(-words // parts))
    units: list[_Unit] = []
    cur: list[tuple[int, int, int]] = []
    cur_words = 0
    for p_start, p_end, p_words in pieces:
        too_long = cur and (cur_words + p_words > max_words or p_end - cur[0][0] > max_chars)
        if cur and (too_long or cur_words >= goal):
            units.append(_Unit(cur[0][0], cur[-1][1], cur_words, None))
            cur, cur_words = [], 0
        cur.append((p_start, p_end, p_words))
        cur_words += p_words
    if cur:
        units.append(_Unit(cur[0][0], cur[-1][1], cur_words, None))
    return units


def _sentences(text: str, start: int, end: int):
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        before = text[cursor : match.start() + 1].split()
        last = before[-1].rstrip(".!?").lower() if before else ""
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue
        trimmed = _trim(text, cursor, match.end())
        if trimmed:
            yield trimmed
        cursor = match.end()
    trimmed = _trim(text, cursor, end)
    if trimmed:
        yield trimmed


def _bounded(text: str, start: int, end: int, max_words: int, max_chars: int):
    """A sentence as pieces of at most max_words words and max_chars characters, cut
    between words, and inside a word only when the word alone is too long."""
    words = _count_words(text, start, end)
    if words <= max_words and end - start <= max_chars:
        yield (start, end, words)
        return
    cur_start = cur_end = None
    count = 0
    for match in _WORD.finditer(text, start, end):
        w_start, w_end = match.span()
        if w_end - w_start > max_chars:
            if cur_start is not None:
                yield (cur_start, cur_end, count)
                cur_start, count = None, 0
            for c in range(w_start, w_end, max_chars):
                yield (c, min(c + max_chars, w_end), 1)
            continue
        if cur_start is not None and (count + 1 > max_words or w_end - cur_start > max_chars):
            yield (cur_start, cur_end, count)
            cur_start, count = None, 0
        if cur_start is None:
            cur_start = w_start
        cur_end = w_end
        count += 1
    if cur_start is not None:
        yield (cur_start, cur_end, count)
