"""Text extraction per file format. Produces the document text every passage offset refers to."""

import codecs
import io
import logging
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePath

from django.conf import settings

from corpora.exceptions import CorruptFile, EmptyDocument, FileTooLarge, UnsupportedFileType
from corpora.models import FileType
from corpora.pdf_tables import tables_as_rows

logger = logging.getLogger(__name__)

_SUFFIXES = {
    ".txt": FileType.TXT,
    ".text": FileType.TXT,
    ".md": FileType.MD,
    ".markdown": FileType.MD,
    ".html": FileType.HTML,
    ".htm": FileType.HTML,
    ".pdf": FileType.PDF,
    ".docx": FileType.DOCX,
}
SUPPORTED_SUFFIXES = tuple(sorted(_SUFFIXES))

_NEWLINES = re.compile(r"\r\n?|\u2028|\u2029|\x85")
# Control characters other than tab, newline and form feed carry no text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# Symbol's bullet, Wingdings' small square, arrowhead and check mark, by their private-use code points.
_FONT_BULLETS = str.maketrans(
    {"\uf0b7": "\u2022", "\uf0a7": "\u25aa", "\uf0d8": "\u27a2", "\uf0fc": "\u2713"}
)
_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_MD_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_WS = re.compile(r"\s+")

# Share of control characters above which a "text" file is treated as binary.
_BINARY_CONTROL_RATIO = 0.02
_BINARY_CONTROL_MIN = 8


@dataclass(frozen=True)
class HeadingSpan:
    start: int
    end: int
    level: int


@dataclass(frozen=True)
class PageSpan:
    start: int
    end: int
    number: int


@dataclass
class Extracted:
    text: str
    pages: list[PageSpan] | None = None
    headings: list[HeadingSpan] = field(default_factory=list)


def file_type_for(filename: str) -> FileType:
    suffix = PurePath(filename).suffix.lower()
    try:
        return _SUFFIXES[suffix]
    except KeyError:
        raise UnsupportedFileType(
            f"{filename!r}: unsupported file type {suffix or '(none)'!r}; "
            f"supported: {', '.join(SUPPORTED_SUFFIXES)}"
        ) from None


def normalize_text(text: str) -> str:
    """One newline convention, no control characters, form feeds as paragraph breaks, and the
    Symbol and Wingdings fonts' bullets (private-use characters a PDF or Word list leaves
    behind, shown as boxes) as the bullets they draw: one character for one, offsets unmoved."""
    text = _NEWLINES.sub("\n", text)
    text = text.replace("\f", "\n\n").translate(_FONT_BULLETS)
    return _CONTROL.sub("", text)


def extract(content: bytes, file_type: FileType, *, filename: str) -> Extracted:
    extractor = {
        FileType.TXT: _extract_txt,
        FileType.MD: _extract_md,
        FileType.HTML: _extract_html,
        FileType.PDF: _extract_pdf,
        FileType.DOCX: _extract_docx,
    }[FileType(file_type)]
    extracted = extractor(content, filename)
    if not extracted.text.strip():
        raise EmptyDocument(f"{filename!r}: no text could be extracted")
    return extracted


def _decode_text(content: bytes, filename: str) -> str:
    # UTF-16 with its byte-order mark (Windows Notepad's "Unicode"): NUL bytes that are text.
    if content[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        try:
            content = content.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptFile(f"{filename!r}: not valid UTF-16 after its byte-order mark") from exc
    if b"\x00" in content[:65536]:
        raise CorruptFile(f"{filename!r}: binary content (NUL bytes) in a text file")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = content.decode("cp1252", errors="replace")
    sample = text[:65536]
    controls = len(_CONTROL.findall(sample))
    if controls > max(_BINARY_CONTROL_MIN, _BINARY_CONTROL_RATIO * len(sample)):
        raise CorruptFile(f"{filename!r}: binary content in a text file")
    if sample.count("\ufffd") > max(_BINARY_CONTROL_MIN, _BINARY_CONTROL_RATIO * len(sample)):
        raise CorruptFile(f"{filename!r}: not a text file in any known encoding")
    return normalize_text(text)


def _extract_txt(content: bytes, filename: str) -> Extracted:
    return Extracted(text=_decode_text(content, filename))


def _extract_md(content: bytes, filename: str) -> Extracted:
    text = _decode_text(content, filename)
    fenced = _fenced_ranges(text)
    headings = [
        HeadingSpan(start=m.start(), end=m.end(), level=len(m.group(1)))
        for m in _MD_HEADING.finditer(text)
        if not any(a <= m.start() < b for a, b in fenced)
    ]
    return Extracted(text=text, headings=headings)


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    marks = [m.start() for m in _MD_FENCE.finditer(text)]
    ranges = []
    for i in range(0, len(marks) - 1, 2):
        ranges.append((marks[i], marks[i + 1]))
    if len(marks) % 2:
        ranges.append((marks[-1], len(text)))
    return ranges


# --- HTML -----------------------------------------------------------------------------------
_HTML_SKIP = {
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "svg",
    "iframe",
    "object",
    "embed",
    "canvas",
    "button",
    "select",
    "option",
    "input",
    "textarea",
    "math",
}
_HTML_BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "ul",
    "caption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "td",
    "th",
}
_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


class _HtmlText:
    """Visible text in reading order, one paragraph per block element, headings recorded."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, int | None]] = []
        self._parts: list[str] = []

    def flush(self, level: int | None = None) -> None:
        text = _WS.sub(" ", "".join(self._parts)).strip()
        self._parts = []
        if text:
            self.blocks.append((text, level))

    def walk(self, root) -> None:
        """Depth first with a stack of its own: a page of 100,000 nested tags is as deep as
        the parser makes it, far past Python's recursion limit."""
        from bs4 import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

        # Entries are a node to visit or, after a block's children, the heading level to flush.
        stack: list = [("children", root)]
        while stack:
            kind, value = stack.pop()
            if kind == "flush":
                self.flush(value)
                continue
            if kind == "children":
                stack.extend(("node", child) for child in reversed(list(value.children)))
                continue
            child = value
            if isinstance(child, Comment | Declaration | Doctype | ProcessingInstruction):
                continue
            if isinstance(child, NavigableString):
                self._parts.append(str(child))
                continue
            name = (child.name or "").lower()
            if name in _HTML_SKIP or _is_hidden(child):
                continue
            if name == "br":
                self._parts.append(" ")
            elif name in _HTML_BLOCK:
                self.flush()
                stack.append(("flush", _HTML_HEADINGS.get(name)))
                stack.append(("children", child))
            else:
                stack.append(("children", child))


def _is_hidden(tag) -> bool:
    attrs = getattr(tag, "attrs", None) or {}
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = str(attrs.get("style", "")).replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _extract_html(content: bytes, filename: str) -> Extracted:
    from bs4 import BeautifulSoup

    if b"\x00" in content[:65536]:
        raise CorruptFile(f"{filename!r}: binary content (NUL bytes) in an HTML file")
    try:
        soup = BeautifulSoup(content, "lxml")
    except Exception as exc:  # lxml raises a zoo of parser errors on garbage
        raise CorruptFile(f"{filename!r}: unreadable HTML ({exc.__class__.__name__})") from exc
    walker = _HtmlText()
    walker.walk(soup)
    walker.flush()
    parts: list[str] = []
    headings: list[HeadingSpan] = []
    offset = 0
    for text, level in walker.blocks:
        text = normalize_text(text)
        if parts:
            offset += 2
        if level is not None:
            headings.append(HeadingSpan(start=offset, end=offset + len(text), level=level))
        parts.append(text)
        offset += len(text)
    return Extracted(text="\n\n".join(parts), headings=headings)


# --- PDF ------------------------------------------------------------------------------------
def _extract_pdf(content: bytes, filename: str) -> Extracted:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(content), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise CorruptFile(f"{filename!r}: the PDF is encrypted")
        # Each page costs its parse however few bytes it takes: count them before reading one.
        if len(reader.pages) > settings.INGEST_MAX_PDF_PAGES:
            raise FileTooLarge(
                f"{filename!r} has {len(reader.pages)} pages; the limit is {settings.INGEST_MAX_PDF_PAGES}"
            )
        page_texts = [normalize_text(_pdf_page_text(page)).strip() for page in reader.pages]
    except (CorruptFile, FileTooLarge):
        raise
    except Exception as exc:  # pypdf raises many error types on damaged files
        raise CorruptFile(f"{filename!r}: unreadable PDF ({exc.__class__.__name__}: {exc})") from exc
    parts: list[str] = []
    pages: list[PageSpan] = []
    offset = 0
    for number, page_text in enumerate(page_texts, start=1):
        if not page_text:
            continue
        if parts:
            offset += 2
        pages.append(PageSpan(start=offset, end=offset + len(page_text), number=number))
        parts.append(page_text)
        offset += len(page_text)
    return Extracted(text="\n\n".join(parts), pages=pages)


def _pdf_page_text(page) -> str:
    """The page's text in the file's order, its tables as rows of cells (corpora.pdf_tables)."""
    plain = page.extract_text() or ""
    try:
        layout = page.extract_text(extraction_mode="layout") or ""
    except Exception:  # layout extraction fails on some fonts plain extraction reads
        logger.info("PDF page %s: no layout extraction; its tables stay as extracted", page.page_number)
        return plain
    return tables_as_rows(plain, layout)


# --- DOCX -----------------------------------------------------------------------------------
_DOCX_HEADING_STYLE = re.compile(r"^(?:heading\s*(\d)|title)$", re.IGNORECASE)


def _extract_docx(content: bytes, filename: str) -> Extracted:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    _docx_refuse_zip_bomb(content, filename)
    limit = settings.INGEST_MAX_TEXT_CHARS
    try:
        document = docx.Document(io.BytesIO(content))
        # python-docx's Paragraph.style looks the style up anew for every paragraph (seconds
        # for a few thousand); the style id on the paragraph and one table of names are enough.
        style_names = _docx_style_names(document)
        blocks: list[tuple[str, int | None]] = []
        size = 0
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                style = style_names.get(item._p.style or "", "")
                match = _DOCX_HEADING_STYLE.match(style.strip())
                level = (int(match.group(1)) if match.group(1) else 1) if match else None
                blocks.append((item.text, level))
                size += len(blocks[-1][0]) + 2
            elif isinstance(item, Table):
                for row in item.rows:
                    cells = [cell.text.strip() for cell in row.cells]
                    blocks.append((" | ".join(c for c in cells if c), None))
                    size += len(blocks[-1][0]) + 2
            if size > limit or len(blocks) > settings.INGEST_MAX_PARAGRAPHS:
                raise FileTooLarge(
                    f"{filename!r}: over {limit} characters or "
                    f"{settings.INGEST_MAX_PARAGRAPHS} paragraphs of text; refused"
                )
    except FileTooLarge:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise CorruptFile(f"{filename!r}: unreadable DOCX ({exc.__class__.__name__})") from exc
    except Exception as exc:  # python-docx surfaces lxml and package errors
        raise CorruptFile(f"{filename!r}: unreadable DOCX ({exc.__class__.__name__})") from exc
    parts: list[str] = []
    headings: list[HeadingSpan] = []
    offset = 0
    for raw, level in blocks:
        text = normalize_text(raw).strip()
        if not text:
            continue
        if parts:
            offset += 2
        if level is not None:
            headings.append(HeadingSpan(start=offset, end=offset + len(text), level=level))
        parts.append(text)
        offset += len(text)
    return Extracted(text="\n\n".join(parts), headings=headings)


def _docx_refuse_zip_bomb(content: bytes, filename: str) -> None:
    """Refuse a .docx whose parts unzip to more than INGEST_MAX_UNZIPPED_BYTES, from the sizes
    the zip declares, before a byte is inflated (zipfile stops reading a member at its declared
    size, so a member cannot lie its way past this)."""
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            unzipped = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError) as exc:
        raise CorruptFile(f"{filename!r}: unreadable DOCX ({exc.__class__.__name__})") from exc
    if unzipped > settings.INGEST_MAX_UNZIPPED_BYTES:
        raise FileTooLarge(
            f"{filename!r} unzips to {unzipped} bytes; the limit is {settings.INGEST_MAX_UNZIPPED_BYTES}"
        )


def _docx_style_names(document) -> dict[str, str]:
    names: dict[str, str] = {}
    for style in document.styles.element.style_lst:
        if style.styleId:
            names[style.styleId] = style.name_val or ""
    return names
