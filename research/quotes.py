"""Verbatim quotation matching. A quote matches when it occurs in the text after whitespace
runs and typographic quotes are normalised; the match is mapped back to the exact span of the
original text, so what is stored as a quote is always a literal substring of its passage."""

import re

_TYPOGRAPHIC = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u2033": '"',
    }
)
_QUOTE_MARKS = "\"'"


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index it came from."""
    chars: list[str] = []
    origin: list[int] = []
    in_space = False
    for index, char in enumerate(text.translate(_TYPOGRAPHIC)):
        if char.isspace():
            if not in_space and chars:
                chars.append(" ")
                origin.append(index)
            in_space = True
            continue
        in_space = False
        chars.append(char)
        origin.append(index)
    if chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


def normalise_quote(quote: str) -> str:
    return _normalise_with_map(quote)[0]


def quote_locate(text: str, quote: str) -> tuple[int, int] | None:
    """(start, end) of `quote` in `text` such that text[start:end] is the quoted span, or None.
    A quote wrapped in quotation marks or ending in an ellipsis is also tried without them."""
    haystack, origin = _normalise_with_map(text)
    for needle in _candidates(normalise_quote(quote)):
        position = haystack.find(needle)
        if position >= 0:
            return origin[position], origin[position + len(needle) - 1] + 1
    return None


def _candidates(needle: str) -> list[str]:
    found = [needle] if needle else []
    # Marks first, then the ellipsis, then marks again: "“The supplier shall…”" and
    # "“The supplier shall”…" both mean "The supplier shall".
    stripped = needle.strip(_QUOTE_MARKS + " ")
    stripped = re.sub(r"^(\.\.\.|\u2026)\s*|\s*(\.\.\.|\u2026)$", "", stripped).strip(_QUOTE_MARKS + " ")
    if stripped and stripped != needle:
        found.append(stripped)
    return found
