"""The critic: grades a draft against the rubric (the user's, or the default: every part of the
request answered, the documents the sweep found covered, facts separated from inference) and
sends gaps back to the researchers, up to the preset's rubric iterations; and its offline mind,
which checks sub-question coverage, that the draft cites every finding of the sweep, and that
the words of each rubric line appear in the report."""

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from research.engine.planner import QUESTION_MAX_CHARS
from research.engine.prompts import CRITIC_INSTRUCTIONS, read_data
from research.engine.text import content_words, keywords

OFFLINE_CRITIC = "deepcite-offline-critic"
GAPS_MAX = 5
# A rubric line is met when the report holds at least this share of its words.
RUBRIC_WORDS_MIN = 0.5


@dataclass
class CriticDeps:
    finding_ids: set[int]
    questions: int


class Gap(BaseModel):
    direction: str = Field(description="What to research next, as a short question.")
    question: int | None = Field(default=None, description="The sub-question it belongs to, if any.")
    reason: str = Field(default="", description="Why the draft falls short here.")


class Critique(BaseModel):
    satisfied: bool
    gaps: list[Gap] = Field(default_factory=list)
    unsupported_findings: list[int] = Field(
        default_factory=list, description="Findings whose quote does not support their claim."
    )
    uncited_findings: list[int] = Field(
        default_factory=list, description="Findings the draft should cite and does not."
    )


critic_agent = Agent(
    deps_type=CriticDeps,
    output_type=ToolOutput(Critique, name="submit_critique", description="Submit the critique."),
    instructions=CRITIC_INSTRUCTIONS,
    name="deepcite-critic",
    retries=2,
)


@critic_agent.output_validator
def _validate(ctx: RunContext[CriticDeps], critique: Critique) -> Critique:
    """Ids the model names that are not this run's findings, or sub-questions that do not
    exist, are dropped rather than acted on; a gap's direction is cut as a planned question is."""
    known = ctx.deps.finding_ids
    gaps = [
        g.model_copy(
            update={
                # researched as a question, like the planner's: one line of bounded length
                "direction": " ".join(g.direction.split())[:QUESTION_MAX_CHARS],
                "question": g.question if g.question in range(ctx.deps.questions) else None,
            }
        )
        for g in critique.gaps
        if g.direction.strip()
    ][:GAPS_MAX]
    return Critique(
        satisfied=critique.satisfied and not gaps,
        gaps=gaps,
        unsupported_findings=[i for i in critique.unsupported_findings if i in known],
        uncited_findings=[i for i in critique.uncited_findings if i in known],
    )


def critic_prompt_data(
    *,
    draft: str,
    rubric: str,
    questions: list[dict[str, Any]],
    findings: list[dict[str, Any]],
    cited: set[int],
) -> dict[str, Any]:
    return {
        "draft": draft,
        "rubric": rubric,
        "questions": questions,
        "findings": [
            {
                "id": f["id"],
                "question": f.get("question"),
                "origin": f.get("origin"),
                "claim": f["claim"],
                "quote": f["quote"],
                "cited": f["id"] in cited,
            }
            for f in findings
        ],
    }


# --- The offline mind ----------------------------------------------------------------------------
def offline_critic() -> FunctionModel:
    def critique(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        data = read_data(messages) or {}
        call = ToolCallPart("submit_critique", review(data), tool_call_id="critique")
        return ModelResponse(parts=[call], model_name=OFFLINE_CRITIC)

    return FunctionModel(critique, model_name=OFFLINE_CRITIC)


def review(data: dict[str, Any]) -> dict[str, Any]:
    """Gaps: sub-questions with no finding (researched again with their keywords alone; not one
    asked in the negative and swept, which no finding may rightly answer) and
    rubric lines whose words the report does not hold; findings of the sweep the draft leaves
    uncited. The offline writer states only what its quotes say, so no finding is disputed."""
    findings = data.get("findings", [])
    answered = {f.get("question") for f in findings}
    gaps = []
    for question in data.get("questions", []):
        # a question asked in the negative that no document addresses is answered by all of them
        if question["index"] not in answered and not (question.get("asked") and question.get("swept")):
            gaps.append(
                {
                    "direction": keywords(question["question"]) or question["question"],
                    "question": question["index"],
                    "reason": "no finding answers this sub-question",
                }
            )
    report_words = set(content_words(data.get("draft", "")))
    for line in re.split(r"[\n;]+", data.get("rubric") or ""):
        wanted = set(content_words(line))
        if wanted and len(wanted & report_words) / len(wanted) < RUBRIC_WORDS_MIN:
            gaps.append(
                {"direction": " ".join(line.split()), "question": None, "reason": "rubric line not met"}
            )
    uncited = [f["id"] for f in findings if f.get("origin") == "sweep" and not f.get("cited")]
    return {
        "satisfied": not gaps and not uncited,
        "gaps": gaps[:GAPS_MAX],
        "unsupported_findings": [],
        "uncited_findings": uncited,
    }
