"""The researcher: an agent with read-only retrieval tools over one corpus, scratchpad tools
that record the plan and findings, and `finalize_report` as its output; and its offline mind,
a deterministic FunctionModel that plays it with no LLM. The agent reaches its run only through
the run store in its deps: report, corpus and user are never the model's to choose."""

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from config.exceptions import ApplicationError
from llms.prompts import unwrap
from research.drafts import compose_report
from research.engine.prompts import RESEARCH_INSTRUCTIONS, RESEARCH_PROMPT_TAG
from research.engine.store import RunStore
from research.engine.text import best_sentences, keywords, plan_questions

OFFLINE_MODEL_NAME = "deepcite-offline-extractive"
EXTRACTIVE_NOTE = "Extractive report by the Deepcite offline engine: each finding quotes the corpus verbatim."


@dataclass
class ResearchDeps:
    store: RunStore
    breadth: int


class FinalReport(BaseModel):
    """The finished report in markdown, claims wrapped as <cite ids="...">claim</cite>."""

    markdown: str = Field(description="The report in markdown with <cite ids=...> placeholders.")


research_agent = Agent(
    deps_type=ResearchDeps,
    output_type=ToolOutput(FinalReport, name="finalize_report", description="Submit the finished report."),
    name="deepcite-researcher",
    retries=2,
)


@research_agent.instructions
async def _instructions(ctx: RunContext[ResearchDeps]) -> str:
    return RESEARCH_INSTRUCTIONS.format(breadth=ctx.deps.breadth)


# --- Read-only retrieval tools --------------------------------------------------------------
@research_agent.tool
async def search_passages(
    ctx: RunContext[ResearchDeps],
    query: str,
    mode: Literal["hybrid", "lexical", "dense"] = "hybrid",
    top_k: int | None = None,
) -> dict[str, Any] | str:
    """Search the corpus. Returns passages (id, document, page, heading, text), best first."""
    try:
        return {"results": await ctx.deps.store.search(query=query, mode=mode, top_k=top_k)}
    except ApplicationError as exc:
        return _error(exc)


@research_agent.tool
async def exact_search(ctx: RunContext[ResearchDeps], phrase: str) -> dict[str, Any] | str:
    """Passages that contain this exact phrase (case, spacing and quote style ignored)."""
    try:
        return {"results": await ctx.deps.store.exact_search(phrase=phrase)}
    except ApplicationError as exc:
        return _error(exc)


@research_agent.tool
async def read_context(
    ctx: RunContext[ResearchDeps], passage_id: int, before: int = 1, after: int = 1
) -> dict[str, Any] | str:
    """The passage and its neighbours in document order (up to 10 each side)."""
    try:
        return {
            "results": await ctx.deps.store.read_context(passage_id=passage_id, before=before, after=after)
        }
    except ApplicationError as exc:
        return _error(exc)


@research_agent.tool
async def list_documents(ctx: RunContext[ResearchDeps]) -> dict[str, Any] | str:
    """The documents this run may search: id, title, source file, pages."""
    return {"documents": await ctx.deps.store.list_documents()}


# --- Scratchpad tools -----------------------------------------------------------------------
@research_agent.tool
async def record_plan(ctx: RunContext[ResearchDeps], questions: list[str]) -> str:
    """Record the sub-questions this run will pursue."""
    recorded = await ctx.deps.store.record_plan(questions=questions, breadth=ctx.deps.breadth)
    return f"plan recorded: {len(recorded)} questions"


@research_agent.tool
async def record_finding(
    ctx: RunContext[ResearchDeps], claim: str, quote: str, passage_ids: list[int], section: str | None = None
) -> str:
    """Record a finding: a claim, a quote copied exactly from one passage, and the ids of
    passages returned by this run's searches. Errors say how to correct the finding."""
    try:
        finding = await ctx.deps.store.record_finding(
            claim=claim, quote=quote, passage_ids=passage_ids, section=section
        )
    except ApplicationError as exc:
        return _error(exc)
    return f"recorded finding {finding['id']} (passage {finding['passage_id']})"


def _error(exc: ApplicationError) -> str:
    return f"error[{exc.code}]: {exc.message}"


@dataclass(frozen=True)
class EngineProfile:
    """How hard the offline mind works at a depth: whether every sub-question gets a second,
    keyword search (or only those whose first search found nothing quotable), how many top
    passages it reads around, and how many findings it records per sub-question."""

    keyword_search_always: bool
    context_reads: int
    findings_per_question: int


PROFILES = {
    "shallow": EngineProfile(keyword_search_always=False, context_reads=0, findings_per_question=2),
    "standard": EngineProfile(keyword_search_always=True, context_reads=0, findings_per_question=3),
    "deep": EngineProfile(keyword_search_always=True, context_reads=2, findings_per_question=5),
}


# --- The offline mind -----------------------------------------------------------------------------
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
            terms = keywords(question)
            wanted = self.profile.keyword_search_always or not best_sentences(question, first, 1)
            if wanted and terms and terms != question:
                parts.append(
                    ToolCallPart(
                        "search_passages",
                        {"query": terms, "mode": "lexical", "top_k": self.search_top_k},
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
