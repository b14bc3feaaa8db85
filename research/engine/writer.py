"""The writer: composes the report from the run's findings only, citing findings (never bare
passages) as `<cite findings="...">`; and its offline mind, which groups each swept question's
findings by position (their quotes' embeddings, through the group_findings tool) and composes
the extractive report of research.drafts: every statement a finding's claim or a count."""

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, RunContext, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from research.drafts import ORIGIN_SWEEP, Position, QuestionSummary, compose_report
from research.engine.budget import BudgetExhausted
from research.engine.prompts import WRITER_INSTRUCTIONS, read_data, tool_returns
from research.engine.store import RunStore
from research.engine.versions import DocumentVersions

OFFLINE_WRITER = "deepcite-offline-writer"
EXTRACTIVE_NOTE = "Extractive report by the Deepcite offline engine: each finding quotes the corpus verbatim."
# A swept question's findings are grouped by position even when one document answers it: its
# table row and the exports then name the position its quote takes.
GROUP_MIN_FINDINGS = 1
_CITED_FINDINGS = re.compile(r"""<cite\b[^>]*\bfindings\s*=\s*["']([^"']*)["']""", re.IGNORECASE)


@dataclass
class WriterDeps:
    store: RunStore
    finding_ids: set[int]


class Draft(BaseModel):
    markdown: str = Field(description='The report in markdown with <cite findings="..."> placeholders.')


writer_agent = Agent(
    deps_type=WriterDeps,
    output_type=ToolOutput(Draft, name="submit_report", description="Submit the finished report."),
    instructions=WRITER_INSTRUCTIONS,
    name="deepcite-writer",
    retries=2,
)


@writer_agent.tool
async def group_findings(
    ctx: RunContext[WriterDeps], finding_ids: list[int], about: str = ""
) -> dict[str, Any] | str:
    """Group these findings by the position their quotes take (most central finding first);
    the words of `about` (the question they answer) never name a group."""
    wanted = [i for i in dict.fromkeys(finding_ids) if i in ctx.deps.finding_ids]
    if not wanted:
        return "error[no_findings]: name ids of this run's findings"
    try:
        groups = await ctx.deps.store.group_findings(finding_ids=wanted, question=about)
    except BudgetExhausted as exc:
        return f"error[budget_exhausted]: {exc}"
    return {"groups": groups}


@writer_agent.output_validator
def _validate(ctx: RunContext[WriterDeps], draft: Draft) -> Draft:
    cited = cited_finding_ids(draft.markdown)
    unknown = sorted(cited - ctx.deps.finding_ids)
    if unknown:
        raise ModelRetry(
            f"findings {unknown[:20]} do not exist; cite only ids of this run's findings "
            f"({min(ctx.deps.finding_ids, default=0)}..{max(ctx.deps.finding_ids, default=0)})"
        )
    if ctx.deps.finding_ids and not cited:
        raise ModelRetry('cite the findings behind each statement as <cite findings="ID">statement</cite>')
    return draft


def cited_finding_ids(markdown: str) -> set[int]:
    ids: set[int] = set()
    for match in _CITED_FINDINGS.finditer(markdown or ""):
        ids.update(
            int(t)
            for t in re.split(r"[\s,;]+", match.group(1))
            if t.isascii() and t.isdigit() and len(t) < 10
        )
    return ids


def writer_prompt_data(
    *,
    title: str,
    questions: list[QuestionSummary],
    findings: list[dict[str, Any]],
    titles: dict[int, str],
    brief: bool,
    both: list[dict[str, Any]] | None = None,
    not_planned: list[str] | None = None,
    named: list[str] | None = None,
    corrections: list[list[str]] | None = None,
    not_judged: list[str] | None = None,
    versions: DocumentVersions | None = None,
) -> dict[str, Any]:
    return {
        "title": title,
        "brief": brief,
        # the documents the request names, which alone the run searched (titles)
        "named_documents": named or [],
        # the request's misspelt words, [typed, read as]: the report says how it was read
        "corrections": corrections or [],
        # questions of the request answered by the documents that answer two of `questions`
        "both": both or [],
        # parts of the request beyond the run's breadth, not researched: the report names them
        "not_planned": not_planned or [],
        # documents the sweep's judge failed on (titles): not examined, not counted among those
        # that do not address a question; the report names them in Gaps as not judged
        "not_judged": not_judged or [],
        # versions of one document among those the findings quote (research.engine.versions):
        # where a question cites both, the report marks the older and says which applies, and
        # claims no order where `unordered` (the titles or text tell none); `by` says how it was
        # told: "text" (the current one's own text says it supersedes or replaces the older),
        # "version", "date" (in their titles) or "draft" (the older is marked draft)
        "versions": _versions_data(versions or DocumentVersions(), titles),
        "questions": [
            {
                "index": q.index,
                "question": q.question,
                "swept": q.swept,
                "documents_examined": q.documents_examined,
                "not_addressing": list(q.not_addressing),
                "not_addressing_ids": list(q.not_addressing_ids),
                "addressing": list(q.addressing),
                "set_aside": list(q.set_aside),
                # {document id: finding id}: addressing documents whose evidence is a finding
                # recorded for another question (the same quote answers both)
                "shared_findings": {str(d): i for d, i in q.shared.items()},
                # the documents the run could search: more than were examined when the sweep
                # judged only those its searches reached, up to the depth's cap
                "documents_in_scope": q.documents_in_scope,
                # names it names that no document in scope holds: no document answers it
                "absent_names": list(q.absent_names),
                **({"asked": q.asked} if q.asked else {}),
            }
            for q in questions
        ],
        "findings": [
            {
                "id": f["id"],
                "question": f.get("question"),
                "section": f.get("section"),
                "document_id": f["document_id"],
                "document_title": titles.get(f["document_id"], ""),
                "claim": f["claim"],
                "quote": f["quote"],
                "origin": f.get("origin"),
                "position": f.get("position"),
            }
            for f in findings
        ],
    }


def _versions_data(versions: DocumentVersions, titles: dict[int, str]) -> dict[str, Any]:
    data = versions.as_data()
    for relation in data["superseded"]:
        relation["current_title"] = titles.get(relation["current"], "")
        relation["older_title"] = titles.get(relation["older"], "")
    data["unordered"] = [
        {"documents": pair, "titles": [titles.get(d, "") for d in pair]} for pair in data["unordered"]
    ]
    return data


def _one_per_document(findings: list[dict[str, Any]]) -> list[int]:
    """The ids of one finding per document, in the order the documents first appear: its sweep
    finding (the judge's quote, the table's row) where it has one, else its first."""
    chosen: dict[int, dict[str, Any]] = {}
    for finding in findings:
        current = chosen.get(finding["document_id"])
        swept = finding.get("origin") == ORIGIN_SWEEP
        if current is None or (swept and current.get("origin") != ORIGIN_SWEEP):
            chosen[finding["document_id"]] = finding
    return [f["id"] for f in chosen.values()]


# --- The offline mind ----------------------------------------------------------------------------
def offline_writer() -> FunctionModel:
    def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        data = read_data(messages) or {}
        questions = [
            QuestionSummary(
                index=q["index"],
                question=q["question"],
                swept=q["swept"],
                documents_examined=q["documents_examined"],
                not_addressing=q["not_addressing"],
                not_addressing_ids=q.get("not_addressing_ids", []),
                addressing=q.get("addressing", []),
                set_aside=q.get("set_aside", []),
                asked=q.get("asked", ""),
                documents_in_scope=q.get("documents_in_scope", 0),
                shared={int(d): int(i) for d, i in (q.get("shared_findings") or {}).items()},
                absent_names=q.get("absent_names") or [],
            )
            for q in data.get("questions", [])
        ]
        findings = data.get("findings", [])
        returns = tool_returns(messages)
        if not returns and not data.get("brief"):
            calls = []
            for q in questions:
                # One finding per document (its sweep finding, else its first): the positions
                # then count documents, each in one ("1 of 5 documents ... Positions: 1 document:
                # A; 1 document: B; 1 document: C" had named one document three times). The
                # others show under Detailed analysis.
                ids = _one_per_document([f for f in findings if f.get("question") == q.index])
                if q.swept and len(ids) >= GROUP_MIN_FINDINGS:
                    arguments = {"finding_ids": ids, "about": q.question}
                    calls.append(ToolCallPart("group_findings", arguments, tool_call_id=f"group-{q.index}"))
            if calls:
                return ModelResponse(parts=calls, model_name=OFFLINE_WRITER)
        positions = {}
        for call_id, content in returns.items():
            if call_id.startswith("group-") and isinstance(content, dict):
                positions[int(call_id.removeprefix("group-"))] = [
                    Position(g["label"], g["finding_ids"]) for g in content.get("groups", [])
                ]
        markdown = compose_report(
            title=data.get("title", ""),
            questions=questions,
            findings=findings,
            document_titles={f["document_id"]: f["document_title"] for f in findings},
            positions=positions,
            note=EXTRACTIVE_NOTE,
            brief=bool(data.get("brief")),
            both=data.get("both") or [],
            not_planned=data.get("not_planned") or [],
            not_judged=data.get("not_judged") or [],
            named=data.get("named_documents") or [],
            corrections=data.get("corrections") or [],
            versions=DocumentVersions.from_data(data.get("versions")),
        )
        call = ToolCallPart("submit_report", {"markdown": markdown}, tool_call_id="submit")
        return ModelResponse(parts=[call], model_name=OFFLINE_WRITER)

    return FunctionModel(write, model_name=OFFLINE_WRITER)
