"""Names users give things (corpora, reports, conversations, tokens) as one line of plain text:
they are shown to other users, in pages and in terminals through the CLI, so they keep no
control characters (C0, C1, DEL: a terminal runs ESC sequences) and no bidi overrides or other
invisible formatting characters (U+202E shows a name reversed)."""

# Joiners some scripts need (Persian's ZWNJ, emoji sequences); every other format character goes.
_KEPT_FORMAT = frozenset("\u200c\u200d")


def name_clean(text: str | None) -> str:
    """Whitespace runs (line breaks and tabs too) become one space; non-printable characters
    (str.isprintable: controls, format characters, unassigned code points) are dropped."""
    text = " ".join((text or "").split())
    return " ".join("".join(ch for ch in text if ch.isprintable() or ch in _KEPT_FORMAT).split())
