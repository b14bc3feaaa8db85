"""Named limits, depth presets and warning codes for research reports."""

from dataclasses import dataclass

PROMPT_MAX_CHARS = 10_000
RUBRIC_MAX_CHARS = 8_192
TITLE_MAX_CHARS = 200
MAX_STEPS_CEILING = 500
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
    max_steps: int
    max_tool_calls: int
    rubric_iterations: int
    # How many sub-questions the planner may pursue and how many passages each search returns.
    breadth: int
    search_top_k: int


DEPTH_SHALLOW = "shallow"
DEPTH_STANDARD = "standard"
DEPTH_DEEP = "deep"
DEPTH_PRESETS: dict[str, DepthPreset] = {
    DEPTH_SHALLOW: DepthPreset(
        max_steps=25, max_tool_calls=25, rubric_iterations=1, breadth=3, search_top_k=6
    ),
    DEPTH_STANDARD: DepthPreset(
        max_steps=50, max_tool_calls=60, rubric_iterations=2, breadth=5, search_top_k=8
    ),
    DEPTH_DEEP: DepthPreset(
        max_steps=100, max_tool_calls=120, rubric_iterations=3, breadth=8, search_top_k=10
    ),
}
DEFAULT_DEPTH = DEPTH_STANDARD

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
