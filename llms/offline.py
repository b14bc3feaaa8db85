"""The offline engine: a deterministic PydanticAI FunctionModel that drives the research agent
with no LLM. It reads the request from the prompt, plans sub-questions, searches with the same
tools, picks the sentences of the retrieved passages that best match each sub-question as
verbatim quotes, records them as findings, and finalizes an extractive report.

Every step is decided from the message history alone (like a model), so a run can be replayed
and resumed; nothing in the report is written by the engine except headings and counts."""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from corpora.retrieval.query import STOPWORDS, words
from llms.prompts import RESEARCH_PROMPT_TAG, unwrap
from research.drafts import compose_report

OFFLINE_MODEL_NAME = "deepcite-offline-extractive"


@dataclass(frozen=True)
class EngineProfile:
    """How hard the engine works at a depth: whether every sub-question gets a second, keyword
    search (or only those whose first search found nothing quotable), how many top passages it
    reads around, and how many findings it records per sub-question."""

    keyword_search_always: bool
    context_reads: int
    findings_per_question: int


PROFILES = {
    "shallow": EngineProfile(keyword_search_always=False, context_reads=0, findings_per_question=2),
    "standard": EngineProfile(keyword_search_always=True, context_reads=0, findings_per_question=3),
    "deep": EngineProfile(keyword_search_always=True, context_reads=2, findings_per_question=5),
}
SENTENCE_MAX_CHARS = 600
SENTENCE_MIN_CHARS = 25
# Fewer words than this is a title or a label, not a statement worth quoting.
SENTENCE_MIN_WORDS = 6
EXTRACTIVE_NOTE = "Extractive report by the Deepcite offline engine: each finding quotes the corpus verbatim."
# Lead-ins that ask for research rather than name its subject.
_LEAD_IN = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+|i want you to\s+|i'd like you to\s+)*"
    r"(?:do\s+(?:a\s+)?(?:deep\s+dive|deep\s+research|research|investigation)\s+(?:on|into|about|of)\s+|"
    r"(?:deep\s+)?research(?:\s+on|\s+into|\s+about)?(?:\s*:\s*|\s+)|investigate(?:\s*:\s*|\s+)|look\s+into\s+|"
    r"find\s+out\s+(?:everything\s+)?(?:about\s+)?|tell\s+me\s+(?:everything\s+)?about\s+|"
    r"(?:write\s+)?(?:a\s+)?report\s+on\s+)",
    re.IGNORECASE,
)
_SEGMENT_SPLIT = re.compile(r"(?<=\?)\s+|\n+|;\s+|\s*(?:^|\n)\s*(?:[-*\u2022]|\d+[.)])\s+")
# "... cap liability, and what happens on termination?" asks two things.
_SECOND_QUESTION = re.compile(
    r",?\s+(?:and|or)\s+(?=(?:what|which|who|whom|whose|when|where|how|why|whether|are|is|do|does|can|"
    r"could|should|will|would)\b)",
    re.IGNORECASE,
)
_ENUMERATION = re.compile(r",\s*(?:and\s+|or\s+)?|\s+and\s+(?=[^,]*$)", re.IGNORECASE)
_SENTENCE_END = re.compile(
    r"(?<=[.!?;:])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n|\n(?=\s*(?:[-*\u2022]|\(?[a-z0-9]{1,3}[.)])\s)"
)


# --- Planning -------------------------------------------------------------------------------
def plan_questions(prompt: str, breadth: int) -> list[str]:
    """Sub-questions from a request: its questions, lines and bullets, and the items of an
    enumeration ("research X, Y and Z")."""
    text = _LEAD_IN.sub("", prompt.strip(), count=1)
    segments = [
        part.strip(" .,:;-\t")
        for s in _SEGMENT_SPLIT.split(text)
        if s
        for part in _SECOND_QUESTION.split(s)
        if part.strip(" .,:;-\t")
    ]
    questions: list[str] = []
    for segment in segments:
        segment = _LEAD_IN.sub("", segment, count=1).strip(" .,:;")
        items = [i.strip(" .,:;") for i in _ENUMERATION.split(segment)]
        is_enumeration = "?" not in segment and len(items) >= 3 and all(0 < len(words(i)) <= 6 for i in items)
        for item in items if is_enumeration else [segment]:
            if item and _content_words(item) and item.lower() not in {q.lower() for q in questions}:
                questions.append(item)
    if not questions and prompt.strip():
        questions = [" ".join(prompt.split())[:300]]
    return questions[: max(1, breadth)]


# Words that frame a question rather than name its subject ("what happens on termination?").
QUESTION_FRAMING = frozenset(
    "happen happens happened mean means say says said mention mentions mentioned describe describes "
    "explain explains tell exist exists regarding concerning any there contain contains include "
    "includes".split()
)


def _content_words(text: str) -> list[str]:
    return [_stem(w) for w in words(text) if w not in STOPWORDS and w not in QUESTION_FRAMING and len(w) > 1]


def _stem(word: str) -> str:
    """A light suffix stripper, so "incidents", "reported" and "reporting" meet "incident" and
    "report" (the lexical index stems with Porter; sentence choice needs only this much)."""
    for suffix, replacement in (
        ("ies", "y"),
        ("ions", ""),
        ("ion", ""),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    # "terminate" and "terminated" meet at "terminat".
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def _keywords(question: str) -> str:
    return " ".join(dict.fromkeys(w for w in words(question) if w not in STOPWORDS and len(w) > 1))


# --- Sentence selection ---------------------------------------------------------------------
@dataclass(frozen=True)
class Sentence:
    passage_id: int
    document_id: int
    document_title: str
    text: str
    score: float


def sentences(text: str) -> list[str]:
    """Verbatim sentences of a passage (each an exact substring), long ones cut at clause
    boundaries so a quote stays readable."""
    found: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        while len(piece) > SENTENCE_MAX_CHARS:
            cut = max(piece.rfind("; ", 0, SENTENCE_MAX_CHARS), piece.rfind(", ", 0, SENTENCE_MAX_CHARS))
            cut = cut + 1 if cut > SENTENCE_MIN_CHARS else SENTENCE_MAX_CHARS
            found.append(piece[:cut].strip())
            piece = piece[cut:].strip()
        if piece:
            found.append(piece)
    return [s for s in found if _is_statement(s)]


def _is_statement(sentence: str) -> bool:
    return (
        len(sentence) >= SENTENCE_MIN_CHARS
        and len(sentence.split()) >= SENTENCE_MIN_WORDS
        and any(c.islower() for c in sentence)
    )


def best_sentences(question: str, results: Sequence[dict[str, Any]], limit: int) -> list[Sentence]:
    """The sentences that share the most (and rarest) words with the question, at most one per
    passage, from body passages only; a sentence sharing no content word is never chosen."""
    terms = set(_content_words(question))
    if not terms:
        return []
    candidates: list[tuple[int, dict[str, Any], str, set[str]]] = []
    for rank, result in enumerate(results):
        if result.get("is_heading"):
            continue
        for sentence in sentences(result.get("text", "")):
            candidates.append((rank, result, sentence, set(_content_words(sentence))))
    if not candidates:
        return []
    # Rarer words among the candidates weigh more, as in BM25's IDF.
    document_frequency = {t: sum(1 for c in candidates if t in c[3]) for t in terms}
    total = len(candidates)
    chosen: dict[int, Sentence] = {}
    scored = []
    for rank, result, sentence, vocabulary in candidates:
        matched = terms & vocabulary
        if not matched:
            continue
        weight = sum(math.log(1 + total / document_frequency[t]) for t in matched)
        coverage = len(matched) / len(terms)
        score = weight * (0.5 + coverage) / (1 + 0.15 * rank)
        scored.append((score, rank, result, sentence))
    for score, _rank, result, sentence in sorted(scored, key=lambda s: (-s[0], s[1])):
        pid = result["passage_id"]
        if pid in chosen:
            continue
        chosen[pid] = Sentence(pid, result["document_id"], result.get("document_title", ""), sentence, score)
        if len(chosen) >= limit:
            break
    return list(chosen.values())


# --- The engine -----------------------------------------------------------------------------
@dataclass
class _History:
    """What the run has done so far, read back from the messages."""

    prompt: str = ""
    calls: dict[str, ToolCallPart] = field(default_factory=dict)
    returns: dict[str, Any] = field(default_factory=dict)
    responses: int = 0

    @classmethod
    def read(cls, messages: list[ModelMessage]) -> "_History":
        history = cls()
        for message in messages:
            if isinstance(message, ModelResponse):
                history.responses += 1
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        history.calls[part.tool_call_id] = part
            elif isinstance(message, ModelRequest):
                for part in message.parts:
                    if (
                        isinstance(part, UserPromptPart)
                        and not history.prompt
                        and isinstance(part.content, str)
                    ):
                        history.prompt = unwrap(part.content, RESEARCH_PROMPT_TAG) or part.content
                    elif isinstance(part, ToolReturnPart):
                        history.returns[part.tool_call_id] = part.content
        return history

    def results_for(self, question_index: int) -> list[dict[str, Any]]:
        """Search results of every search made for one sub-question, best first, no repeats."""
        seen: set[int] = set()
        merged: list[dict[str, Any]] = []
        prefix = f"q{question_index}-"
        for call_id, content in self.returns.items():
            if not call_id.startswith(prefix) or not isinstance(content, dict):
                continue
            for result in content.get("results", []):
                if result["passage_id"] not in seen:
                    seen.add(result["passage_id"])
                    merged.append(result)
        return merged

    def has_calls(self, prefix: str) -> bool:
        return any(call_id.startswith(prefix) for call_id in self.calls)


class OfflineResearcher:
    """The FunctionModel's function. `breadth` caps the sub-questions (the depth preset's)."""

    def __init__(self, *, breadth: int, search_top_k: int, profile: EngineProfile) -> None:
        self.breadth = breadth
        self.search_top_k = search_top_k
        self.profile = profile

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        history = _History.read(messages)
        questions = plan_questions(history.prompt, self.breadth)
        if not history.has_calls("plan"):
            return self._plan_and_search(questions)
        if not history.has_calls("round2") and not history.has_calls("finding"):
            follow_ups = self._follow_ups(questions, history)
            if follow_ups:
                return ModelResponse(parts=follow_ups, model_name=OFFLINE_MODEL_NAME)
        if not history.has_calls("finding"):
            findings = self._findings(questions, history)
            if findings:
                return ModelResponse(parts=findings, model_name=OFFLINE_MODEL_NAME)
        return self._finalize(questions, history)

    def _plan_and_search(self, questions: list[str]) -> ModelResponse:
        parts = [ToolCallPart("record_plan", {"questions": questions}, tool_call_id="plan")]
        parts += [
            ToolCallPart(
                "search_passages", {"query": q, "top_k": self.search_top_k}, tool_call_id=f"q{i}-search"
            )
            for i, q in enumerate(questions)
        ]
        return ModelResponse(parts=parts, model_name=OFFLINE_MODEL_NAME)

    def _follow_ups(self, questions: list[str], history: _History) -> list[ToolCallPart]:
        """Round two: a lexical search with the question's content words (always, or only where
        the first search found no sentence worth quoting), and reads around the top passages."""
        parts = []
        for i, question in enumerate(questions):
            first = history.results_for(i)
            keywords = _keywords(question)
            wanted = self.profile.keyword_search_always or not best_sentences(question, first, 1)
            if wanted and keywords and keywords != question:
                parts.append(
                    ToolCallPart(
                        "search_passages",
                        {"query": keywords, "mode": "lexical", "top_k": self.search_top_k},
                        tool_call_id=f"q{i}-keywords",
                    )
                )
            body = [r for r in first if not r.get("is_heading")][: self.profile.context_reads]
            parts += [
                ToolCallPart(
                    "read_context",
                    {"passage_id": r["passage_id"], "before": 1, "after": 1},
                    tool_call_id=f"q{i}-context-{r['passage_id']}",
                )
                for r in body
            ]
        if parts:
            parts.insert(0, ToolCallPart("list_documents", {}, tool_call_id="round2"))
        return parts

    def _findings(self, questions: list[str], history: _History) -> list[ToolCallPart]:
        parts = []
        recorded: set[tuple[int, str]] = set()
        for i, question in enumerate(questions):
            chosen = best_sentences(question, history.results_for(i), self.profile.findings_per_question)
            for sentence in chosen:
                key = (sentence.passage_id, sentence.text)
                if key in recorded:
                    continue
                recorded.add(key)
                parts.append(
                    ToolCallPart(
                        "record_finding",
                        {
                            "claim": " ".join(sentence.text.split()),
                            "quote": sentence.text,
                            "passage_ids": [sentence.passage_id],
                            "section": question,
                        },
                        tool_call_id=f"finding-{i}-{sentence.passage_id}",
                    )
                )
        return parts

    def _finalize(self, questions: list[str], history: _History) -> ModelResponse:
        titles: dict[int, str] = {}
        for content in history.returns.values():
            if isinstance(content, dict):
                for result in content.get("results", []):
                    titles[result["document_id"]] = result.get("document_title", "")
        findings = []
        for call_id, call in history.calls.items():
            outcome = history.returns.get(call_id)
            # A duplicate was recorded by an earlier attempt of this run (resumed): it still counts.
            recorded = str(outcome).startswith(("recorded finding", "error[finding_duplicate]"))
            if call.tool_name != "record_finding" or not recorded:
                continue
            args = call.args_as_dict()
            pid = args["passage_ids"][0]
            document_id = next(
                (
                    r["document_id"]
                    for i in range(len(questions))
                    for r in history.results_for(i)
                    if r["passage_id"] == pid
                ),
                0,
            )
            findings.append({**args, "passage_id": pid, "document_id": document_id})
        markdown = compose_report(
            title=_title(history.prompt),
            questions=questions,
            findings=findings,
            document_titles=titles,
            note=EXTRACTIVE_NOTE,
        )
        return ModelResponse(
            parts=[ToolCallPart("finalize_report", {"markdown": markdown}, tool_call_id="finalize")],
            model_name=OFFLINE_MODEL_NAME,
        )


def _title(prompt: str) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= 120 else line[:119] + "\u2026"


def offline_model(*, breadth: int, search_top_k: int, depth: str) -> FunctionModel:
    researcher = OfflineResearcher(breadth=breadth, search_top_k=search_top_k, profile=PROFILES[depth])
    return FunctionModel(researcher, model_name=OFFLINE_MODEL_NAME)
