"""A passage's text as safe HTML with a span of it marked: the report page's cited passages
and the document view share it."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def passage_marked_html(text: str, passage_start: int, span: tuple[int, int] | None) -> SafeString:
    """The passage, escaped, with `span` (document offsets) wrapped in <mark>; escaped only when
    the span is missing or does not fall inside the passage."""
    if span is None:
        return escape(text)
    start, end = span[0] - passage_start, span[1] - passage_start
    if not (0 <= start < end <= len(text)):
        return escape(text)
    return mark_safe(f"{escape(text[:start])}<mark>{escape(text[start:end])}</mark>{escape(text[end:])}")  # noqa: S308 -- every piece escaped


def parse_mark(value: str) -> tuple[int, int] | None:
    """`START-END` document offsets from a URL, or None for anything else."""
    start, sep, end = value.partition("-")
    if not (sep and start.isascii() and start.isdigit() and end.isascii() and end.isdigit()):
        return None
    if len(start) > 12 or len(end) > 12 or int(start) >= int(end):
        return None
    return int(start), int(end)
