"""The researcher: pursues one direction (a sub-question, a follow-up or a critic's gap) with
read-only retrieval tools over the corpus, records findings tied to the passages it retrieved,
and proposes follow-up directions from what it read; and its offline mind, a deterministic
FunctionModel that searches, picks verbatim sentences as quotes, and finds follow-ups in the
passages (exceptions they make, terms they use that the question did not). The agent reaches
its run only through the run store in its deps: report, corpus and user are never the model's
to choose, and neither is the sub-question a finding belongs to."""

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from config.exceptions import ApplicationError
from llms.prompts import untrusted_json
from research.engine.budget import BudgetExhausted
from research.engine.intent import document_words
from research.engine.planner import QUESTION_MAX_CHARS, candidate_terms, feedback_terms
from research.engine.prompts import RESEARCHER_INSTRUCTIONS, read_data, tool_returns
from research.engine.store import RunStore
from research.engine.text import CARVE_OUT, best_sentences, claim_of, keywords, sentences
from research.services import FindingInput

OFFLINE_RESEARCHER = "deepcite-offline-researcher"
FOLLOW_UPS_MAX = 3
# A sentence quoted by the offline mind shares at least this share of the direction's words
# (weighted by how rare they are among the passages read).
MIN_COVERAGE = 0.34
ORIGIN_RESEARCHER = "researcher"


@dataclass(frozen=True)
class Direction:
    """What one researcher pursues: a question, its queries, and the sub-question of the plan
    its findings answer (the index into the plan; None for the critic's general gaps)."""

    question: str
    queries: tuple[str, ...]
    plan_index: int | None
    level: int = 1
    origin: str = ORIGIN_RESEARCHER

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "queries": list(self.queries),
            "plan_index": self.plan_index,
            "level": self.level,
            "origin": self.origin,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Direction":
        return cls(
            question=str(data["question"]),
            queries=tuple(data.get("queries") or [data["question"]]),
            plan_index=data.get("plan_index"),
            level=int(data.get("level", 1)),
            origin=str(data.get("origin") or ORIGIN_RESEARCHER),
        )


@dataclass
class ResearcherDeps:
    store: RunStore
    direction: Direction
    findings_limit: int
    context_reads: int
    search_top_k: int
    recorded: list[dict[str, Any]] = field(default_factory=list)


class DirectionNotes(BaseModel):
    """What the researcher hands back (its findings are already recorded)."""

    follow_ups: list[str] = Field(
        default_factory=list, description="Up to three directions to research next."
    )
    summary: str = Field(default="", description="One or two sentences on what the passages showed.")


researcher_agent = Agent(
    deps_type=ResearcherDeps,
    output_type=ToolOutput(DirectionNotes, name="finish_direction", description="Finish this direction."),
    name="deepcite-researcher",
    retries=2,
)


@researcher_agent.output_validator
def _validate(ctx: RunContext[ResearcherDeps], notes: DirectionNotes) -> DirectionNotes:
    """Follow-ups become the next level's directions and their search queries: capped like the
    planner's questions, at most FOLLOW_UPS_MAX of them."""
    kept = [" ".join(f.split())[:QUESTION_MAX_CHARS] for f in notes.follow_ups]
    kept = list(dict.fromkeys(f for f in kept if f))[:FOLLOW_UPS_MAX]
    return notes.model_copy(update={"follow_ups": kept})


@researcher_agent.instructions
def _instructions(ctx: RunContext[ResearcherDeps]) -> str:
    return RESEARCHER_INSTRUCTIONS.format(findings=ctx.deps.findings_limit)


# --- Read-only retrieval tools --------------------------------------------------------------
@researcher_agent.tool
async def search_passages(
    ctx: RunContext[ResearcherDeps],
    query: str,
    mode: Literal["hybrid", "lexical", "dense"] = "hybrid",
    top_k: int | None = None,
) -> str:
    """Search the corpus. Returns passages (id, document, page, heading, text), best first."""
    try:
        return untrusted_json({"results": await ctx.deps.store.search(query=query, mode=mode, top_k=top_k)})
    except (ApplicationError, BudgetExhausted) as exc:
        return tool_error(exc)


@researcher_agent.tool
async def exact_search(ctx: RunContext[ResearcherDeps], phrase: str) -> str:
    """Passages that contain this exact phrase (case, spacing and quote style ignored)."""
    try:
        return untrusted_json({"results": await ctx.deps.store.exact_search(phrase=phrase)})
    except (ApplicationError, BudgetExhausted) as exc:
        return tool_error(exc)


@researcher_agent.tool
async def read_context(
    ctx: RunContext[ResearcherDeps], passage_id: int, before: int = 1, after: int = 1
) -> str:
    """The passage and its neighbours in document order (up to 10 each side)."""
    try:
        context = await ctx.deps.store.read_context(passage_id=passage_id, before=before, after=after)
        return untrusted_json({"results": context})
    except (ApplicationError, BudgetExhausted) as exc:
        return tool_error(exc)


@researcher_agent.tool
async def list_documents(ctx: RunContext[ResearcherDeps]) -> str:
    """The documents this run may search: id, title, source file, pages."""
    try:
        return untrusted_json({"documents": await ctx.deps.store.list_documents()})
    except BudgetExhausted as exc:
        return tool_error(exc)


@researcher_agent.tool
async def term_frequencies(ctx: RunContext[ResearcherDeps], words: list[str]) -> dict[str, Any] | str:
    """How many of the corpus's passages use each word (rare words name a subject)."""
    try:
        return await ctx.deps.store.term_frequencies(words=words)
    except (ApplicationError, BudgetExhausted) as exc:
        return tool_error(exc)


@researcher_agent.tool
async def record_finding(
    ctx: RunContext[ResearcherDeps], claim: str, quote: str, passage_ids: list[int]
) -> str:
    """Record a finding: a claim stating only what the quote says, a quote copied exactly from
    one passage, and the ids of passages this run's searches returned. Errors say how to
    correct the finding."""
    deps = ctx.deps
    direction = deps.direction
    try:
        finding = await deps.store.record_finding(
            FindingInput(
                claim=claim,
                quote=quote,
                passage_ids=passage_ids,
                section=direction.question,
                question=direction.plan_index,
                origin=direction.origin,
            )
        )
    except (ApplicationError, BudgetExhausted) as exc:
        return tool_error(exc)
    deps.recorded.append(finding)
    return f"recorded finding {finding['id']} (passage {finding['passage_id']})"


def tool_error(exc: Exception) -> str:
    if isinstance(exc, BudgetExhausted):
        return f"error[budget_exhausted]: {exc}; finish with what you have"
    return f"error[{getattr(exc, 'code', 'error')}]: {getattr(exc, 'message', exc)}"


def direction_prompt_data(direction: Direction, *, swept: bool = False) -> dict[str, Any]:
    """The direction, its queries, and whether a sweep will read every document for it (then
    the strongest finding of each document is enough: the sweep covers the rest)."""
    return {"direction": direction.question, "queries": list(direction.queries), "one_per_document": swept}


# --- The offline mind ----------------------------------------------------------------------------
def offline_researcher(*, findings_limit: int, context_reads: int, search_top_k: int) -> FunctionModel:
    """Searches each query (the first hybrid, the rest lexical), reads around the best passages,
    records the sentences that best answer the direction (at most `findings_limit`, each sharing
    at least MIN_COVERAGE of its words), then names follow-ups from what it read."""

    def research(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        data = read_data(messages) or {}
        question = str(data.get("direction", ""))
        queries = [str(q) for q in data.get("queries") or [question]]
        returns = tool_returns(messages)
        results = _results(returns)
        if not returns:
            calls = [
                ToolCallPart(
                    "search_passages",
                    {"query": q, "mode": "hybrid" if i == 0 else "lexical", "top_k": search_top_k},
                    tool_call_id=f"search-{i}",
                )
                for i, q in enumerate(queries)
            ]
            return _respond(calls)
        reads = [r for r in results if not r.get("is_heading")][:context_reads]
        if reads and not any(k.startswith("context-") for k in returns):
            calls = [
                ToolCallPart("read_context", {"passage_id": r["passage_id"]}, tool_call_id=f"context-{i}")
                for i, r in enumerate(reads)
            ]
            return _respond(calls)
        if not any(k.startswith("finding-") for k in returns):
            chosen = best_sentences(
                question,
                results,
                findings_limit * 3,
                min_coverage=MIN_COVERAGE,
                ignore=document_words(question),
            )
            if data.get("one_per_document"):
                chosen = list({s.document_id: s for s in reversed(chosen)}.values())[::-1]
            chosen = chosen[:findings_limit]
            calls = [
                ToolCallPart(
                    "record_finding",
                    {"claim": claim_of(s.text), "quote": s.text, "passage_ids": [s.passage_id]},
                    tool_call_id=f"finding-{i}",
                )
                for i, s in enumerate(chosen)
            ]
            if calls:
                return _respond(calls)
        if "words" not in returns:
            words = candidate_terms(question, results)
            if words:
                return _respond([ToolCallPart("term_frequencies", {"words": words}, tool_call_id="words")])
        recorded = [
            text
            for call_id, outcome in returns.items()
            if call_id.startswith("finding-") and str(outcome).startswith("recorded finding")
            for text in [_quote_of(messages, call_id)]
            if text
        ]
        rarity = returns.get("words") if isinstance(returns.get("words"), dict) else None
        notes = {"follow_ups": follow_ups(question, results, recorded, rarity), "summary": ""}
        return _respond([ToolCallPart("finish_direction", notes, tool_call_id="finish")])

    return FunctionModel(research, model_name=OFFLINE_RESEARCHER)


def _respond(parts: list[ToolCallPart]) -> ModelResponse:
    return ModelResponse(parts=parts, model_name=OFFLINE_RESEARCHER)


def _results(returns: dict[str, Any]) -> list[dict[str, Any]]:
    """Every passage the searches and reads returned, in the order they came, no repeats."""
    seen: set[int] = set()
    merged = []
    for content in returns.values():
        if not isinstance(content, dict):
            continue
        for result in content.get("results", []):
            if result["passage_id"] not in seen:
                seen.add(result["passage_id"])
                merged.append(result)
    return merged


def _quote_of(messages: list[ModelMessage], call_id: str) -> str:
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == call_id:
                    return str(part.args_as_dict().get("quote", ""))
    return ""


def follow_ups(
    question: str, results: list[dict[str, Any]], quotes: list[str], rarity: dict[str, Any] | None
) -> list[str]:
    """Directions worth a level of their own: an exception the recorded quotes (or the best
    passages) make to the rule, and rare terms the passages use that the question did not."""
    subject = keywords(question)
    if not subject:
        return []
    directions: list[str] = []
    texts = quotes or [r.get("text", "") for r in results[:3]]
    for text in texts:
        for sentence in sentences(text):
            if CARVE_OUT.search(sentence):
                directions.append(f"exceptions to {subject}")
                break
        if directions:
            break
    for term in feedback_terms(question, results, rarity, limit=FOLLOW_UPS_MAX):
        directions.append(f"{subject}: {term}")
    return list(dict.fromkeys(directions))[:FOLLOW_UPS_MAX]
