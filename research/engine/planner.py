"""The planner: turns the request into up to `breadth` sub-questions, each with its search
queries; and its offline mind, which splits the request's own structure (lists, "and",
"versus", question marks) and expands each sub-question with terms the corpus itself uses near
it (pseudo-relevance feedback from a first search), not with a hand-made synonym list."""

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, RunContext, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from config.exceptions import ApplicationError
from llms.prompts import untrusted_json
from research.engine.budget import BudgetExhausted
from research.engine.intent import document_words
from research.engine.prompts import PLANNER_INSTRUCTIONS, read_request, tool_returns
from research.engine.store import RunStore
from research.engine.text import content_words, core_question, keywords, plan_questions

QUESTION_MAX_CHARS = 500
QUERIES_MAX = 4
FEEDBACK_PASSAGES = 8
FEEDBACK_TERMS = 4
# A feedback term occurs in this many of the first passages, in at most this share of the
# corpus's passages, and has at least this many letters.
FEEDBACK_MIN_PASSAGES = 2
FEEDBACK_MAX_SHARE = 0.2
FEEDBACK_MIN_WORD = 4
OFFLINE_PLANNER = "deepcite-offline-planner"


@dataclass
class PlannerDeps:
    store: RunStore
    breadth: int


class SubQuestion(BaseModel):
    question: str = Field(description="A sub-question of the request, in plain words.")
    queries: list[str] = Field(default_factory=list, description="Two to four search queries for it.")


class Plan(BaseModel):
    sub_questions: list[SubQuestion] = Field(description="The sub-questions, most important first.")


planner_agent = Agent(
    deps_type=PlannerDeps,
    output_type=ToolOutput(Plan, name="submit_plan", description="Submit the research plan."),
    name="deepcite-planner",
    retries=2,
)


@planner_agent.instructions
def _instructions(ctx: RunContext[PlannerDeps]) -> str:
    return PLANNER_INSTRUCTIONS.format(breadth=ctx.deps.breadth)


@planner_agent.tool
async def search_passages(ctx: RunContext[PlannerDeps], query: str, top_k: int = 8) -> str:
    """Search the corpus (hybrid) to see how it words the subject; passages best first."""
    try:
        return untrusted_json({"results": await ctx.deps.store.search(query=query, top_k=top_k)})
    except (ApplicationError, BudgetExhausted) as exc:
        return _error(exc)


@planner_agent.tool
async def term_frequencies(ctx: RunContext[PlannerDeps], words: list[str]) -> dict[str, Any] | str:
    """How many of the corpus's passages use each word (rare words name a subject)."""
    try:
        return await ctx.deps.store.term_frequencies(words=words)
    except (ApplicationError, BudgetExhausted) as exc:
        return _error(exc)


@planner_agent.output_validator
def _validate(ctx: RunContext[PlannerDeps], plan: Plan) -> Plan:
    cleaned: list[SubQuestion] = []
    seen: set[str] = set()
    for sub in plan.sub_questions:
        question = " ".join(sub.question.split())[:QUESTION_MAX_CHARS]
        if not question or question.lower() in seen:
            continue
        seen.add(question.lower())
        queries = [" ".join(q.split())[:QUESTION_MAX_CHARS] for q in sub.queries if q and q.strip()]
        cleaned.append(
            SubQuestion(question=question, queries=list(dict.fromkeys([question, *queries]))[:QUERIES_MAX])
        )
    if not cleaned:
        raise ModelRetry("the plan needs at least one sub-question with non-empty text")
    return Plan(sub_questions=cleaned[: max(1, ctx.deps.breadth)])


def _error(exc: Exception) -> str:
    code = getattr(exc, "code", None) or f"budget_exhausted:{getattr(exc, 'budget', '')}"
    return f"error[{code}]: {getattr(exc, 'message', None) or exc}"


# --- The offline mind ----------------------------------------------------------------------------
def offline_planner(breadth: int) -> FunctionModel:
    """Splits the request, searches each part, asks the corpus how common the words of the first
    passages are, and plans each part with its keywords and the rare words those passages share."""

    def plan(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        questions = plan_questions(read_request(messages), breadth)
        # Searched by what a document must say, not by a follow-up's words ("how long does each
        # restriction last?"): those find any restriction, any "last".
        cores = [core_question(q) for q in questions]
        returns = tool_returns(messages)
        if not returns:
            calls = [
                ToolCallPart(
                    "search_passages", {"query": q, "top_k": FEEDBACK_PASSAGES}, tool_call_id=f"plan-{i}"
                )
                for i, q in enumerate(cores)
            ]
            return _respond(calls)
        results = {i: _results(returns.get(f"plan-{i}")) for i in range(len(questions))}
        if "plan-words" not in returns:
            words = sorted({w for i, q in enumerate(cores) for w in candidate_terms(q, results[i])})
            if words:
                return _respond(
                    [ToolCallPart("term_frequencies", {"words": words}, tool_call_id="plan-words")]
                )
        rarity = returns.get("plan-words") if isinstance(returns.get("plan-words"), dict) else {}
        sub_questions = []
        for i, (question, core) in enumerate(zip(questions, cores, strict=True)):
            expansion = feedback_terms(core, results[i], rarity)
            # The words naming the documents ("which contracts") find every document alike.
            naming = set(document_words(core))
            base = " ".join(w for w in keywords(core).split() if w not in naming)
            queries = [core]
            if base and base != core:
                queries.append(base)
            if expansion:
                queries.append(" ".join([base, *expansion]).strip())
            sub_questions.append({"question": question, "queries": queries})
        return _respond(
            [ToolCallPart("submit_plan", {"sub_questions": sub_questions}, tool_call_id="plan-submit")]
        )

    return FunctionModel(plan, model_name=OFFLINE_PLANNER)


def _respond(parts: list[ToolCallPart]) -> ModelResponse:
    return ModelResponse(parts=parts, model_name=OFFLINE_PLANNER)


def _results(content: Any) -> list[dict[str, Any]]:
    return content.get("results", []) if isinstance(content, dict) else []


def _surface_words(text: str) -> list[tuple[str, str]]:
    """(stem, word) for each content word of `text`, in order."""
    found = []
    for word in text.split():
        cleaned = word.strip(".,;:()[]\"'\u201c\u201d\u2018\u2019").lower()
        stems = content_words(cleaned)
        if stems and cleaned.isalpha() and len(cleaned) >= FEEDBACK_MIN_WORD:
            found.append((stems[0], cleaned))
    return found


def candidate_terms(question: str, results: list[dict[str, Any]]) -> list[str]:
    """Words of the first passages that the question does not say and that recur among them."""
    asked = set(content_words(question))
    body = [r for r in results if not r.get("is_heading")][:FEEDBACK_PASSAGES]
    holders: dict[str, set[int]] = {}
    surface: dict[str, str] = {}
    for rank, result in enumerate(body):
        for stem, word in _surface_words(result.get("text", "")):
            if stem not in asked:
                surface.setdefault(stem, word)
                holders.setdefault(stem, set()).add(rank)
    return [surface[s] for s, ranks in holders.items() if len(ranks) >= FEEDBACK_MIN_PASSAGES]


def feedback_terms(
    question: str, results: list[dict[str, Any]], rarity: dict[str, Any] | None, limit: int = FEEDBACK_TERMS
) -> list[str]:
    """The recurring words of the first passages (candidate_terms) that are rare in the corpus,
    weighted as RM3 weighs them: by how high the passages that use them rank, times the word's
    inverse document frequency in the corpus (`rarity`: the term_frequencies tool's answer). A
    word a fifth or more of the corpus uses names no subject."""
    if not rarity or not rarity.get("passages"):
        return []
    total = int(rarity["passages"])
    counts = rarity.get("frequencies", {})
    asked = set(content_words(question))
    body = [r for r in results if not r.get("is_heading")][:FEEDBACK_PASSAGES]
    weight: Counter[str] = Counter()
    for rank, result in enumerate(body):
        for _stem, word in dict(_surface_words(result.get("text", ""))).items():
            weight[word] += 1.0 / (1 + rank)
    scored = {}
    for word in candidate_terms(question, results):
        used = int(counts.get(word, 0))
        if not 0 < used < total * FEEDBACK_MAX_SHARE or set(content_words(word)) & asked:
            continue
        scored[word] = weight[word] * math.log(total / used)
    return sorted(scored, key=lambda w: (-scored[w], w))[:limit]
