"""The offline chat model: a deterministic FunctionModel for the chat agent. Research requests
("research …", "deep research …", "do a deep dive on …", "investigate …", "find out everything
about …") start a research run; anything else gets the best matching sentences of the top
passages as a short answer with numbered citations. A short follow-up ("And for Globex?",
"What about confidentiality?") is searched as the question before it asked of its subject or
aspect (follow_up_read), and the answer says what it searched for."""

import re

from django.urls import reverse
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from rapidfuzz.distance import DamerauLevenshtein

from corpora.retrieval.spelling import MIN_LENGTH, is_english
from llms.prompts import CHAT_MESSAGE_TAG, tool_content, unwrap
from research.citations import markdown_literal
from research.engine.text import best_sentences, follow_up_read

OFFLINE_CHAT_MODEL_NAME = "deepcite-offline-chat"
# How a SYSTEM message of the conversation reaches the chat model (chat._history).
NOTICE_OPENING = "[Deepcite notice] "
ANSWER_SENTENCES = 3

RESEARCH_REQUEST = re.compile(
    r"^\W*(?:(?:please|kindly|hey|hi|ok|okay|now|so)[\s,]+)*"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need|would\s+like)\s+(?:you\s+)?(?:to\s+)?)?"
    r"(?:do\s+(?:a\s+|some\s+)?(?:deep[\s-]*dive|deep[\s-]*research|research|investigation)|deep[\s-]*dive|"
    r"deep[\s-]*research|research|investigate|find\s+out\s+everything)\b",
    re.IGNORECASE,
)


# The words of a research request a hurried hand misspells ("pls reserch ..."): a word that is
# no English word, one edit away (two for the longer ones), is taken for the word.
_REQUEST_WORDS = ("please", "research", "investigate", "deep", "dive")
_WORD = re.compile(r"[^\W_]+")


def is_research_request(text: str) -> bool:
    text = text.strip()
    return bool(RESEARCH_REQUEST.match(text) or RESEARCH_REQUEST.match(_opening_spelt(text)))


def _opening_spelt(text: str, words: int = 4) -> str:
    """`text` with its first few words spelt as the request words they are near ("pls reserch
    X" -> "please research X"); the rest as typed."""

    def spelt(match: re.Match) -> str:
        word = match.group().lower()
        if word in ("pls", "plz"):
            return "please"
        if len(word) < MIN_LENGTH or is_english(word):  # "researcher" is no misspelling
            return match.group()
        limit = 1 if len(word) <= 6 else 2
        near = [
            w for w in _REQUEST_WORDS if DamerauLevenshtein.distance(word, w, score_cutoff=limit) <= limit
        ]
        return near[0] if near else match.group()

    return _WORD.sub(spelt, text, count=words)


def _last_user_text(messages: list[ModelMessage]) -> str:
    """The user's latest message. A Deepcite notice just before it ("Deep research is ready")
    is merged into the same request by pydantic-ai: the message is its last part, not its first."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return unwrap(part.content, CHAT_MESSAGE_TAG) or part.content
    return ""


def _human_texts(messages: list[ModelMessage]) -> list[str]:
    """The user's messages, oldest first: Deepcite notices ("[Deepcite notice] ...") are not theirs."""
    texts = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    said = unwrap(part.content, CHAT_MESSAGE_TAG)
                    if said is not None and not part.content.startswith(NOTICE_OPENING):
                        texts.append(said)
    return texts


def _question(messages: list[ModelMessage], text: str) -> str:
    """What the latest message `text` asks, read with the questions before it: each follow-up as
    what it asks of the one before (as that one was read); a research request asks no question
    to follow up."""
    asked = ""
    for said in _human_texts(messages)[:-1]:
        asked = "" if is_research_request(said) else (asked and follow_up_read(asked, said)) or said
    return (asked and follow_up_read(asked, text)) or text


def _tool_returns(messages: list[ModelMessage]) -> dict[str, object]:
    returns: dict[str, object] = {}
    last = messages[-1]
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                returns[part.tool_name] = tool_content(part.content)
    return returns


def offline_chat(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    text = _last_user_text(messages)
    returns = _tool_returns(messages)
    if "start_deep_research" in returns:
        return ModelResponse(
            parts=[TextPart(str(returns["start_deep_research"]))], model_name=OFFLINE_CHAT_MODEL_NAME
        )
    if "search_passages" in returns:
        question = _question(messages, text)
        answer = _answer(question, returns["search_passages"])
        if question != text:  # the user sees how their follow-up was read
            answer = f"Searching for: {markdown_literal(question)}\n\n{answer}"
        return ModelResponse(parts=[TextPart(answer)], model_name=OFFLINE_CHAT_MODEL_NAME)
    if is_research_request(text):
        call = ToolCallPart("start_deep_research", {"prompt": text})
    else:
        call = ToolCallPart("search_passages", {"query": _question(messages, text), "top_k": 5})
    return ModelResponse(parts=[call], model_name=OFFLINE_CHAT_MODEL_NAME)


def _answer(question: str, found: object) -> str:
    results = found.get("results", []) if isinstance(found, dict) else []
    chosen = best_sentences(question, results, ANSWER_SENTENCES)
    if not chosen:
        return (
            "I found no passage in this corpus that answers that. Try other words, or ask me to research it."
        )
    lines = ["From the corpus:", ""]
    lines += [f"- {' '.join(s.text.split())} [{i}]" for i, s in enumerate(chosen, start=1)]
    lines += ["", "Sources:"]
    # Each source opens its passage, highlighted in its document (corpora:passage).
    lines += [
        f"[{i}] [{markdown_literal(s.document_title)}]({reverse('corpora:passage', args=[s.passage_id])})"
        for i, s in enumerate(chosen, start=1)
    ]
    return "\n".join(lines)


def offline_chat_model() -> FunctionModel:
    return FunctionModel(offline_chat, model_name=OFFLINE_CHAT_MODEL_NAME)
