"""The citations renderer: turns a draft with `<cite findings="...">claim</cite>` placeholders
(the run's findings) or `<cite ids="...">claim</cite>` (passages) into markdown with `[^n]`
footnotes and a `## Sources` block, keeping the citation graph closed.

Pure functions over plain data, so the guards can be property-tested without a database:
only passages this run retrieved can be cited, every quote is a literal span of its passage,
a footnote shows the quote of the finding that backs its claim, a quotation in the prose must be
verbatim in a passage its paragraph cites, and everything the renderer removes leaves a warning."""

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from research.constants import (
    WARNING_CITE_MALFORMED,
    WARNING_FOOTNOTE_REMOVED,
    WARNING_HEADING_FLAGGED,
    WARNING_HEADING_REPLACED,
    WARNING_LINK_REMOVED,
    WARNING_QUOTE_NOT_VERBATIM,
    WARNING_QUOTE_REMOVED,
    WARNING_SOURCES_REMOVED,
    WARNING_UNCITED_CLAIM,
    WARNING_UNKNOWN_FINDING,
    WARNING_UNKNOWN_ID,
    WARNING_UNRETRIEVED_ID,
    WARNING_WITHOUT_FINDING,
)
from research.quotes import quote_locate

SOURCES_HEADING = "## Sources"
# Ids a draft may name that are looked up at all; more are treated as unknown.
DRAFT_IDS_MAX = 2_000


@dataclass(frozen=True)
class CitablePassage:
    passage_id: int
    document_id: int
    document_title: str
    source_name: str
    ordinal: int
    page: int | None
    start: int
    text: str
    is_heading: bool


@dataclass
class RenderedReport:
    content: str
    citations: list[dict[str, Any]]
    warnings: list[str]
    passage_ids: list[int] = field(default_factory=list)
    document_ids: list[int] = field(default_factory=list)


# --- Patterns -------------------------------------------------------------------------------
_CITE = re.compile(r"<cite\b([^>]*)>(.*?)</cite\s*>", re.IGNORECASE | re.DOTALL)
# A leftover tag ends at its ">", a line's end or one of our footnote markers, never past them.
_CITE_LEFTOVER = re.compile("<\\s*/?\\s*cite\\b[^>\n\ue000\ue001]*>?", re.IGNORECASE)
_ATTR = re.compile(r"""([a-zA-Z_]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_SOURCES_HEADING = re.compile(
    r"^\s{0,3}(#{1,6})\s*(?:\d+[.)]\s*)?"
    r"(sources|references|bibliography|citations|works cited|footnotes|notes)\b[^\n]*$",
    re.IGNORECASE,
)
_SOURCES_PSEUDO_HEADING = re.compile(
    r"^\s{0,3}(?:\*\*|__)?(sources|references|bibliography|citations|works cited)(?:\*\*|__)?\s*:?"
    r"\s*(?:\*\*|__)?\s*$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s")
_FOOTNOTE_DEFINITION = re.compile(r"^\s{0,3}\[\^[^\]\n]*\]:.*$", re.MULTILINE)
_FOOTNOTE_MARKER = re.compile(r"\[\^[^\]\n]*\]")
# A link's address may hold balanced parentheses ("https://en.wikipedia.org/wiki/Portal_(web)",
# "javascript:alert(1)"): a link ends at the parenthesis that closes it, not the first one.
_URL = r"(?:[^()\s<>]|\([^()\s<>]*\))*"
_IMAGE = re.compile(rf"!\[([^\]\n]*)\]\(\s*<?({_URL})>?(?:\s+[\"'][^\n]*?[\"'])?\s*\)")
_LINK = re.compile(rf"\[([^\]\n]*)\]\(\s*<?({_URL})>?(?:\s+[\"'][^\n]*?[\"'])?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto|javascript|data|file):[^>\s]*)>", re.IGNORECASE)
_BARE_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>()\[\]]+", re.IGNORECASE)
_HTML_ANCHOR = re.compile(r"</?a\b[^>]*>", re.IGNORECASE)
_CITE_OPEN = re.compile(r"<cite", re.IGNORECASE)
# The renderer's own footnote markers travel through the final scrub as private-use sentinels,
# so removing agent markup can never forge a "[^n]" (e.g. "[<cite>^9]" or "[[^1]^2]").
_MARKER_CHARS = re.compile("[\ue000\ue001]")
_MARKER = re.compile("\ue000(\\d+)\ue001")
# A quotation in the prose: straight or typographic double quotes around at least three words.
# A quotation in the prose: in curly double or single marks, or in straight double marks that
# open before a word and close after one, so that an inch mark ('the 12" tapes') opens none
# (paired with the next mark it had hidden the quotation after it). A right single mark inside
# a word is an apostrophe ("party's" typeset), not the closing mark.
_PROSE_QUOTE = re.compile(
    r"\u201c([^\u201d\n]{3,2000}?)\u201d|(?<!\w)\"(?=\S)([^\"\n]{3,2000}?)(?<=\S)\"(?!\w)|"
    r"(?<!\w)\u2018([^\n]{3,2000}?)\u2019(?!\w)"
)
# A Markdown blockquote line ("> backups are kept forever"): a quotation too.
_BLOCKQUOTE = re.compile(r"^(\s*>\s?)(.*)$")
PROSE_QUOTE_MIN_WORDS = 3
QUOTE_REMOVED = "[\u2026]"


# --- Entry point ----------------------------------------------------------------------------
def citations_render(
    *,
    draft: str,
    passages: Mapping[int, CitablePassage],
    retrieved_ids: Iterable[int],
    findings: Iterable[Mapping[str, Any]] = (),
    require_findings: bool = False,
) -> RenderedReport:
    """Render `draft`. `passages` maps ids to what is known of them (ids absent from it are
    deleted or belong to another corpus); `retrieved_ids` are the passages this run's retrieval
    tools returned; `findings` are the run's findings, which `<cite findings>` names and whose
    verified quotes `<cite ids>` footnotes show. With `require_findings`, a `<cite ids>` of a
    passage no finding quotes gets no footnote."""
    retrieved = {int(i) for i in retrieved_ids}
    allowed_urls = _source_urls(passages, retrieved)
    warnings: list[str] = []
    text = _strip_agent_sources(_MARKER_CHARS.sub("", draft or ""), warnings)
    text = _strip_links(text, allowed_urls=allowed_urls, warnings=warnings)
    renderer = _FootnoteRenderer(
        passages=passages,
        retrieved=retrieved,
        findings=findings,
        warnings=warnings,
        require_findings=require_findings,
    )
    text = _CITE.sub(renderer.replace, text)
    text = renderer.check_prose_quotes(text)
    # Removing one piece of markup can join the halves of another, so scrub until nothing changes.
    while True:
        scrubbed = _scrub_cite_tags(text, warnings)
        scrubbed = _strip_links(
            _strip_agent_footnotes(scrubbed, warnings), allowed_urls=allowed_urls, warnings=warnings
        )
        if scrubbed == text:
            break
        text = scrubbed
    body = renderer.number(_break_link_openings(_escape_raw_html(text))).strip()
    content = f"{body}\n\n{renderer.sources_block()}\n" if body else f"{renderer.sources_block()}\n"
    return RenderedReport(
        content=content,
        citations=renderer.citations,
        warnings=_dedupe(warnings),
        passage_ids=list(dict.fromkeys(c["passage_id"] for c in renderer.citations)),
        document_ids=list(dict.fromkeys(c["document_id"] for c in renderer.citations)),
    )


# Code a draft may hold, where a "<" is shown as typed: fenced blocks and inline spans.
_CODE = re.compile(r"(```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]*`)")
# A "<" opening a tag, a comment or a declaration; not an autolink ("<https://...>"), which
# _strip_links has kept only for this run's sources.
_RAW_TAG = re.compile(r"<(?=[A-Za-z/!?])(?![A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*>)")


def _escape_raw_html(text: str) -> str:
    """The draft's raw HTML ("<img onerror=...>", "<details>", "<!-- -->") as text: the report
    is Markdown that every reader renders (the page sanitizes it; an export opened in a
    Markdown viewer, or a client of the API's `markdown`, might not), so no tag of the model's
    reaches it as markup. Code is left as typed."""
    parts = _CODE.split(text)
    return "".join(part if i % 2 else _RAW_TAG.sub("&lt;", part) for i, part in enumerate(parts))


def draft_passage_ids(draft: str) -> set[int]:
    """Every numeric passage id the draft's <cite ids> tags name, so the caller can tell a
    passage that exists but was never retrieved from one that does not exist."""
    ids: set[int] = set()
    for match in _CITE.finditer(draft or ""):
        raw = _attributes(match.group(1)).get("ids", "")
        ids.update(int(token) for token in re.split(r"[\s,;]+", raw) if _is_passage_id(token))
        if len(ids) >= DRAFT_IDS_MAX:
            break
    return set(sorted(ids)[:DRAFT_IDS_MAX])


# --- Guards over the agent's markdown -------------------------------------------------------
def _strip_agent_sources(text: str, warnings: list[str]) -> str:
    """Remove sections the agent titled Sources/References (we write our own), agent footnote
    definitions and markers (ours are the only footnotes)."""
    kept: list[str] = []
    skipping_level: int | None = None
    removed_sections = 0
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if skipping_level is not None:
            if heading and len(heading.group(1)) <= skipping_level:
                skipping_level = None
            else:
                continue
        sources = _SOURCES_HEADING.match(line)
        if sources:
            skipping_level = len(sources.group(1))
            removed_sections += 1
            continue
        if _SOURCES_PSEUDO_HEADING.match(line):
            # A bold "Sources:" line runs to the next heading of any level.
            skipping_level = 6
            removed_sections += 1
            continue
        kept.append(line)
    if removed_sections:
        warnings.append(f"{WARNING_SOURCES_REMOVED}:{removed_sections}")
    return _strip_agent_footnotes("\n".join(kept), warnings)


def _strip_agent_footnotes(text: str, warnings: list[str]) -> str:
    definitions = len(_FOOTNOTE_DEFINITION.findall(text))
    text = _FOOTNOTE_DEFINITION.sub("", text)
    markers = len(_FOOTNOTE_MARKER.findall(text))
    text = _FOOTNOTE_MARKER.sub("", text)
    if definitions or markers:
        warnings.append(f"{WARNING_FOOTNOTE_REMOVED}:{definitions + markers}")
    return text


def _source_urls(passages: Mapping[int, CitablePassage], retrieved: set[int]) -> set[str]:
    """Links a report may keep: the addresses of sources this run retrieved (web pages)."""
    return {
        p.source_name
        for pid, p in passages.items()
        if pid in retrieved and p.source_name.lower().startswith(("http://", "https://"))
    }


def _strip_links(text: str, *, allowed_urls: set[str], warnings: list[str]) -> str:
    def removed(url: str) -> None:
        url = _MARKER_CHARS.sub("", _MARKER.sub("", url))  # a footnote marker inside a URL goes too
        warnings.append(f"{WARNING_LINK_REMOVED}:{url[:200]}")

    def image(match: re.Match[str]) -> str:
        # Never kept: an image URL is fetched by every reader's browser (a tracking beacon).
        removed(match.group(2))
        return match.group(1)

    def link(match: re.Match[str]) -> str:
        if match.group(2) in allowed_urls:
            return match.group(0)
        removed(match.group(2))
        return match.group(1)

    def autolink(match: re.Match[str]) -> str:
        if match.group(1) in allowed_urls:
            return match.group(0)
        removed(match.group(1))
        return ""

    def bare(match: re.Match[str]) -> str:
        if match.group(0) in allowed_urls:
            return match.group(0)
        removed(match.group(0))
        return ""

    def reference(match: re.Match[str]) -> str:
        removed(match.group(0).strip())
        return ""

    text = _IMAGE.sub(image, text)
    text = _LINK.sub(link, text)
    text = _REFERENCE_DEFINITION.sub(reference, text)
    text = _AUTOLINK.sub(autolink, text)
    if _HTML_ANCHOR.search(text):
        warnings.append(f"{WARNING_LINK_REMOVED}:html_anchor")
        text = _HTML_ANCHOR.sub("", text)
    # Bare URLs last, outside the links kept above.
    kept_spans = [m.span() for m in _LINK.finditer(text)] + [m.span() for m in _AUTOLINK.finditer(text)]

    def bare_outside_kept(match: re.Match[str]) -> str:
        if any(start <= match.start() < end for start, end in kept_spans):
            return match.group(0)
        return bare(match)

    return _BARE_URL.sub(bare_outside_kept, text)


def _break_link_openings(text: str) -> str:
    """Set apart by a space every "](" that does not open a link kept above: unwrapping a cite or
    scrubbing a stray tag can join a "]" to a "(" ("[<cite>]</cite><cite>(</cite>")."""
    kept = [m.span() for m in _LINK.finditer(text)]
    return re.sub(
        r"\]\(",
        lambda m: m[0] if any(start <= m.start() < end for start, end in kept) else "] (",
        text,
    )


def _scrub_cite_tags(text: str, warnings: list[str]) -> str:
    """No raw <cite ever reaches stored content: unclosed, nested or split tags go, repeatedly,
    since removing one can join the halves of another."""
    scrubbed = 0
    for pattern in (_CITE_LEFTOVER, _CITE_OPEN):  # _CITE_OPEN: e.g. "<citeX", which has no \b
        while True:
            text, count = pattern.subn("", text)
            if not count:
                break
            scrubbed += count
    if scrubbed:
        warnings.append(f"{WARNING_CITE_MALFORMED}:{scrubbed}")
    return text


# --- Footnotes ------------------------------------------------------------------------------
class _FootnoteRenderer:
    """Numbers cited passages by first appearance and builds the citations table."""

    def __init__(
        self,
        *,
        passages: Mapping[int, CitablePassage],
        retrieved: set[int],
        findings: Iterable[Mapping[str, Any]],
        warnings: list[str],
        require_findings: bool = False,
    ) -> None:
        self.passages = passages
        self.retrieved = retrieved
        self.warnings = warnings
        self.require_findings = require_findings
        # One footnote per (passage, quoted span): two claims quoting different words of one
        # passage get two footnotes, each with its own quote.
        self.numbers: dict[tuple[int, tuple[int, int] | None], int] = {}
        # Drafted on each cite; a footnote is numbered only if its marker survives the scrub.
        self.drafted: list[dict[str, Any]] = []
        self.citations: list[dict[str, Any]] = []
        self.finding_quotes: dict[int, list[str]] = {}
        self.findings: dict[int, tuple[int, str]] = {}
        for finding in findings:
            pid = finding.get("passage_id")
            quote = finding.get("quote")
            if isinstance(pid, int) and isinstance(quote, str):
                self.finding_quotes.setdefault(pid, []).append(quote)
                if isinstance(finding.get("id"), int):
                    self.findings[finding["id"]] = (pid, quote)

    def replace(self, match: re.Match[str]) -> str:
        attributes = _attributes(match.group(1))
        claim = match.group(2).strip()
        if claim.startswith("(") and match.string[: match.start()].endswith("]"):
            claim = " " + claim  # unwrapped, "[x]" and "(" would join into a link's opening
        anchors: list[tuple[int, str | None]] = []
        for pid, quote in self._finding_anchors(attributes.get("findings", "")):
            if (pid, quote) not in anchors:
                anchors.append((pid, quote))
        for pid in self._anchors(attributes.get("ids", "")):
            if self.require_findings and pid not in self.finding_quotes:
                self.warnings.append(f"{WARNING_WITHOUT_FINDING}:{pid}")
                continue
            anchors.append((pid, attributes.get("quote")))
        if not anchors:
            self.warnings.append(f"{WARNING_UNCITED_CLAIM}:{_preview(claim)}")
            return claim
        claim = self._checked_quotes(claim, [self.passages[pid].text for pid, _ in anchors])
        numbers = list(dict.fromkeys(self._footnote(pid, quote) for pid, quote in anchors))
        return claim + "".join(f"\ue000{n}\ue001" for n in numbers)

    def _finding_anchors(self, raw_ids: str) -> list[tuple[int, str]]:
        """(passage id, quote) of each finding named, where its passage may be cited."""
        anchors = []
        for finding_id in self._ids(raw_ids):
            found = self.findings.get(finding_id)
            if found is None:
                self.warnings.append(f"{WARNING_UNKNOWN_FINDING}:{finding_id}")
            elif self._citable(found[0]):
                anchors.append(found)
        return anchors

    def _ids(self, raw_ids: str) -> list[int]:
        """The numeric ids of a cite attribute; anything else is warned about and dropped."""
        ids = []
        for token in re.split(r"[\s,;]+", raw_ids.strip()):
            if not token:
                continue
            if _is_passage_id(token):
                ids.append(int(token))
            else:
                self.warnings.append(f"{WARNING_CITE_MALFORMED}:{_preview(token)}")
        return ids

    def _citable(self, pid: int) -> bool:
        """Whether a passage exists in this corpus and this run retrieved it (else a warning)."""
        if pid not in self.passages:
            self.warnings.append(f"{WARNING_UNKNOWN_ID}:{pid}")
            return False
        if pid not in self.retrieved:
            self.warnings.append(f"{WARNING_UNRETRIEVED_ID}:{pid}")
            return False
        return True

    def _checked_quotes(self, text: str, sources: list[str]) -> str:
        """`text` with every quotation of PROSE_QUOTE_MIN_WORDS or more words that is not
        verbatim in one of `sources` replaced by an ellipsis (and a warning)."""

        def check(match: re.Match[str]) -> str:
            quoted = next(group for group in match.groups() if group is not None)
            # Markdown's escapes (a table cell's "\|", a "\*" written as itself): the words
            # quoted are the same.
            quoted = markdown_unescaped(quoted)
            if (
                len(quoted.split()) < PROSE_QUOTE_MIN_WORDS
                # A citation inside the quotation marks: a cited claim, checked as such.
                or _MARKER_CHARS.search(quoted)
                or any(quote_locate(s, quoted) for s in sources)
            ):
                return match.group(0)
            self.warnings.append(f"{WARNING_QUOTE_REMOVED}:{_preview(quoted)}")
            return QUOTE_REMOVED

        return _PROSE_QUOTE.sub(check, text)

    def _checked_blockquote(self, text: str, sources: list[str]) -> str:
        """A blockquote line's words (its footnote markers aside) must be verbatim in one of
        `sources`, as a quotation's; else they are replaced by an ellipsis (and a warning)."""
        quoted = markdown_unescaped(_MARKER.sub("", text)).strip().strip('"\u201c\u201d')
        if len(quoted.split()) < PROSE_QUOTE_MIN_WORDS or any(quote_locate(s, quoted) for s in sources):
            return self._checked_quotes(text, sources)
        self.warnings.append(f"{WARNING_QUOTE_REMOVED}:{_preview(quoted)}")
        return QUOTE_REMOVED + "".join(marker.group() for marker in _MARKER.finditer(text))

    def check_prose_quotes(self, text: str) -> str:
        """Quotations outside the citations: each paragraph's must be verbatim in a passage that
        paragraph cites (with no citation, none can be)."""
        paragraphs = re.split(r"(\n\s*\n)", text)
        checked = []
        for paragraph in paragraphs:
            cited = [self.drafted[int(n) - 1]["passage_id"] for n in _MARKER.findall(paragraph)]
            sources = [self.passages[pid].text for pid in dict.fromkeys(cited)]
            # A quotation never spans a line, nor a table's cells: a quotation mark one cell
            # leaves open (a label cut inside a defined term) does not pair with the next cell's.
            for line in re.split(r"(\n)", paragraph):
                if blockquote := _BLOCKQUOTE.match(line):
                    checked.append(
                        blockquote.group(1) + self._checked_blockquote(blockquote.group(2), sources)
                    )
                    continue
                cells = re.split(r"((?<!\\)\|)", line) if line.lstrip().startswith("|") else [line]
                checked += [c if c == "|" else self._checked_quotes(c, sources) for c in cells]
        return "".join(checked)

    def _anchors(self, raw_ids: str) -> list[int]:
        anchors: list[int] = []
        for pid in self._ids(raw_ids):
            if not self._citable(pid):
                continue
            if self.passages[pid].is_heading:
                pid = self._body_for_heading(pid)
            if pid not in anchors:
                anchors.append(pid)
        return anchors

    def _body_for_heading(self, heading_id: int) -> int:
        """A heading proves nothing: cite the first retrieved body passage under it instead."""
        heading = self.passages[heading_id]
        following = [
            p
            for pid, p in self.passages.items()
            if pid in self.retrieved
            and p.document_id == heading.document_id
            and not p.is_heading
            and p.ordinal > heading.ordinal
        ]
        if following:
            body = min(following, key=lambda p: p.ordinal)
            self.warnings.append(f"{WARNING_HEADING_REPLACED}:{heading_id}->{body.passage_id}")
            return body.passage_id
        self.warnings.append(f"{WARNING_HEADING_FLAGGED}:{heading_id}")
        return heading_id

    def _footnote(self, pid: int, cite_quote: str | None) -> int:
        passage = self.passages[pid]
        span = self._quote_span(passage, cite_quote)
        if (pid, span) in self.numbers:
            return self.numbers[(pid, span)]
        number = len(self.numbers) + 1
        self.numbers[(pid, span)] = number
        quote = passage.text[span[0] : span[1]] if span else ""
        self.drafted.append(
            {
                "footnote": number,
                "passage_id": pid,
                "document_id": passage.document_id,
                "document_title": passage.document_title,
                "source_name": passage.source_name,
                "page": passage.page,
                # its place in the document, from 1 ("passage 3"); passage_id is its handle
                "passage_number": passage.ordinal + 1,
                "quote": quote,
                "start": passage.start + span[0] if span else passage.start,
                "end": passage.start + span[1] if span else passage.start + len(passage.text),
            }
        )
        return number

    def _quote_span(self, passage: CitablePassage, cite_quote: str | None) -> tuple[int, int] | None:
        if cite_quote:
            span = quote_locate(passage.text, cite_quote)
            if span:
                return span
            self.warnings.append(f"{WARNING_QUOTE_NOT_VERBATIM}:{passage.passage_id}")
        for quote in self.finding_quotes.get(passage.passage_id, []):
            span = quote_locate(passage.text, quote)
            if span:
                return span
        return None

    def number(self, text: str) -> str:
        """Replace the surviving marker sentinels with `[^n]`, numbered by first appearance."""
        final: dict[int, int] = {}

        def marker(match: re.Match[str]) -> str:
            drafted = int(match.group(1))
            if drafted not in final:
                final[drafted] = len(final) + 1
                self.citations.append({**self.drafted[drafted - 1], "footnote": final[drafted]})
            # "[^n](" would make the marker a link's text, "[^n]:" at a line start a definition.
            following = text[match.end() : match.end() + 1]
            line_start = not text[text.rfind("\n", 0, match.start()) + 1 : match.start()].strip()
            gap = " " if following == "(" or (following == ":" and line_start) else ""
            return f"[^{final[drafted]}]{gap}"

        return _MARKER_CHARS.sub("", _MARKER.sub(marker, text))

    def sources_block(self) -> str:
        if not self.citations:
            return f"{SOURCES_HEADING}\n\nNo passages were cited."
        lines = [SOURCES_HEADING, ""]
        for citation in self.citations:
            where = f", p. {citation['page']}" if citation["page"] else ""
            quote = f': "{markdown_inline(citation["quote"])}"' if citation["quote"] else ""
            lines.append(
                f"[^{citation['footnote']}]: *{markdown_inline(citation['document_title'])}* "
                f"({markdown_inline(citation['source_name'])}){where}, "
                f"{passage_label(citation)}{quote}"
            )
        return "\n".join(lines)


def passage_label(citation: dict[str, Any]) -> str:
    """ "passage 3 (id 617)": its place in its document, which a reader can count to, and the id
    the API and the document view know it by ("passage 617" alone read as the 617th of a
    document of twenty). A citation from before positions were kept shows its id alone."""
    number = citation.get("passage_number")
    if not number:
        return f"passage {citation['passage_id']}"
    return f"passage {number} (id {citation['passage_id']})"


def _is_passage_id(token: str) -> bool:
    # ASCII only: "²".isdigit() is true but int("²") raises; over 18 digits is no bigint id
    # (and over 4,300 int() raises).
    return token.isascii() and token.isdigit() and len(token) < 19


def _attributes(raw: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for match in _ATTR.finditer(raw):
        name = match.group(1).lower()
        value = next((g for g in match.groups()[1:] if g is not None), "")
        found.setdefault(name, html.unescape(value))
    return found


# What would make one line of corpus text markup: a tag's or comment's "<", an entity's "&",
# a link's, footnote's or reference's bracket, and the backslash that could undo an escape.
_INLINE_MARKUP = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?\w+;)|[\[\]\\`*]|(?<!\w)_|_(?!\w)")
_INLINE_ESCAPES = {"<": "&lt;", "&": "&amp;"}


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])|&(lt|amp);")


def markdown_unescaped(text: str) -> str:
    """Markdown text as it reads: a backslash escape is the character ("\\*" is "*"), "&lt;"
    and "&amp;" are "<" and "&"."""
    return _ESCAPED.sub(lambda m: m.group(1) or {"lt": "<", "amp": "&"}[m.group(2)], text)


def markdown_inline(text: str) -> str:
    """Corpus or model text shown on one line of Markdown (the Sources block, an export's
    findings): it must not open markup, footnotes or tags of its own. Brackets, backslashes,
    backticks, asterisks and underscores that could open emphasis ("$[***]") get Markdown's
    backslash escape and only a "<" or "&" that would open a tag or an entity becomes one, so
    a contract's "$[***]" or "A & B" renders as written (on the page, in the CLI). A backtick
    opens no code span: inside one the other escapes would show as typed ("`POST /corpora/&lt;id>`")."""
    text = " ".join(text.split())
    return _INLINE_MARKUP.sub(lambda m: _INLINE_ESCAPES.get(m.group(), "\\" + m.group()), text)


def _preview(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# What Python-Markdown reads a backslash before ("<" is escaped as HTML where it is shown).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!])")


def markdown_literal(text: str) -> str:
    """`text` as markdown that reads as itself: a title or a prompt quoted in a chat message
    ("please research [free money](http://...)") shows its brackets, never a link or markup."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(text.split()))
