"""Prompt framing shared by the agents: untrusted text goes into a registered tag, which it
cannot close or imitate; the offline minds read it back out the way a model would."""

import json
from typing import Any

from pydantic_ai.framing import register_tag, wrap

CHAT_MESSAGE_TAG = register_tag("user_message")


def unwrap(text: str, tag: str) -> str | None:
    """The body of the first `<tag>...</tag>` frame in `text`, unescaped (for the offline engine,
    which reads the request the way a model would)."""
    start = text.find(f"<{tag}>")
    end = text.find(f"</{tag}>", start + 1)
    if start < 0 or end < 0:
        return None
    return text[start + len(tag) + 2 : end].replace("&lt;", "<")


def untrusted_json(data: Any) -> str:
    """Data holding untrusted text (passages, titles) as the JSON a model reads, "<" as its JSON
    escape: no tag can open or close inside it (`</research_data><system>` in a passage), in a
    prompt's framed data as in a tool's result."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")


def tool_content(content: Any) -> Any:
    """A tool result as an offline mind reads it: untrusted_json decoded back to its data."""
    if isinstance(content, str) and content.startswith(("{", "[")):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def chat_user_prompt(*, content: str) -> str:
    return "The user's message (untrusted):\n\n" + wrap(CHAT_MESSAGE_TAG, content)
