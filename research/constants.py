"""Named limits, depth presets and warning codes for research reports."""

from dataclasses import dataclass

PROMPT_MAX_CHARS = 10_000
RUBRIC_MAX_CHARS = 8_192
TITLE_MAX_CHARS = 200
MAX_STEPS_CEILING = 5_000
TIME_LIMIT_MIN_SECONDS = 30
ERROR_MAX_CHARS = 4_000
DOCUMENT_SCOPE_MAX = 1_000
# A quotation shorter than this proves nothing about where a claim came from.
QUOTE_MIN_CHARS = 8
QUOTE_MAX_CHARS = 1_500
CLAIM_MAX_CHARS = 2_000
SECTION_MAX_CHARS = 300
# The tool-call log keeps a short preview of each call's arguments, never whole payloads.
TOOL_ARGS_PREVIEW_CHARS = 300
TOOL_OUTCOME_PREVIEW_CHARS = 200


@dataclass(frozen=True)
class DepthPreset:
    """How much a run does at a depth; every role and the budgets read it from here."""

    # Budgets of the whole run, shared by every role: model requests, tool calls, tokens, time.
    max_steps: int
    max_tool_calls: int
    token_limit: int
    time_limit_seconds: int
    # Critic rounds: how often the draft may go back to the researchers with its gaps.
    rubric_iterations: int
    # Sub-questions researched at the first level (halving at each level after it) ...
    breadth: int
    # ... and the levels: the first researches the plan, each next one the best follow-ups.
    depth: int
    # Passages each search returns, and findings a researcher records per direction.
    search_top_k: int
    findings_per_direction: int
    # Reads around the best passages a researcher makes per direction.
    context_reads: int
    # At most this many candidate documents are judged one by one per sweep question ...
    sweep_documents: int
    # ... and every sub-question is swept (deep), not only questions about the collection.
    sweep_always: bool


DEPTH_SHALLOW = "shallow"
DEPTH_STANDARD = "standard"
DEPTH_DEEP = "deep"
DEPTH_PRESETS: dict[str, DepthPreset] = {
    DEPTH_SHALLOW: DepthPreset(
        max_steps=80,
        max_tool_calls=120,
        token_limit=200_000,
        time_limit_seconds=5 * 60,
        rubric_iterations=1,
        breadth=3,
        depth=1,
        search_top_k=6,
        findings_per_direction=2,
        context_reads=0,
        sweep_documents=20,
        sweep_always=False,
    ),
    DEPTH_STANDARD: DepthPreset(
        max_steps=400,
        max_tool_calls=600,
        token_limit=1_500_000,
        time_limit_seconds=20 * 60,
        rubric_iterations=2,
        breadth=5,
        depth=2,
        search_top_k=8,
        findings_per_direction=3,
        context_reads=1,
        sweep_documents=150,
        sweep_always=False,
    ),
    DEPTH_DEEP: DepthPreset(
        max_steps=1_500,
        max_tool_calls=2_000,
        token_limit=5_000_000,
        time_limit_seconds=30 * 60,
        rubric_iterations=3,
        breadth=8,
        depth=3,
        search_top_k=10,
        findings_per_direction=5,
        context_reads=2,
        sweep_documents=500,
        sweep_always=True,
    ),
}
BREADTH_MAX = 12
DEFAULT_DEPTH = DEPTH_STANDARD

# The budgets a run can exhaust (the detail of its budget_exhausted warning).
BUDGET_STEPS = "steps"
BUDGET_TOOL_CALLS = "tool_calls"
BUDGET_TOKENS = "tokens"
BUDGET_TIME = "time"

# Warnings are "code:detail" strings, stable for API clients.
WARNING_BUDGET_EXHAUSTED = "budget_exhausted"
WARNING_UNRETRIEVED_ID = "citation_unretrieved"
WARNING_UNKNOWN_ID = "citation_unknown_passage"
WARNING_QUOTE_NOT_VERBATIM = "quote_not_verbatim"
WARNING_HEADING_REPLACED = "heading_anchor_replaced"
WARNING_HEADING_FLAGGED = "heading_anchor_only"
WARNING_SOURCES_REMOVED = "agent_sources_removed"
WARNING_LINK_REMOVED = "link_removed"
WARNING_FOOTNOTE_REMOVED = "agent_footnote_removed"
WARNING_CITE_MALFORMED = "cite_malformed"
WARNING_UNCITED_CLAIM = "claim_without_source"
WARNING_DRAFT_MISSING = "draft_missing"
WARNING_UNKNOWN_FINDING = "citation_unknown_finding"
WARNING_WITHOUT_FINDING = "citation_without_finding"
WARNING_QUOTE_REMOVED = "quote_removed"
