"""Extractive report drafts composed from recorded findings: what the offline engine writes,
and what a run that was cut short (budget, time, cancel, failure) renders instead of losing
its work. Claims carry `<cite>` placeholders; the citations renderer turns them into footnotes."""

import html
from collections.abc import Mapping, Sequence
from typing import Any

UNASSIGNED_QUESTION = "Other findings"


def compose_report(
    *,
    title: str,
    questions: Sequence[str],
    findings: Sequence[Mapping[str, Any]],
    document_titles: Mapping[int, str],
    note: str | None = None,
) -> str:
    """Summary, findings grouped by question and document, and gaps: every sentence of the
    findings sections is a recorded claim cited to its passage."""
    by_question: dict[str, list[Mapping[str, Any]]] = {q: [] for q in questions}
    for finding in findings:
        question = finding.get("section") or UNASSIGNED_QUESTION
        by_question.setdefault(question, []).append(finding)
    answered = [q for q, items in by_question.items() if items and q != UNASSIGNED_QUESTION]
    asked = list(questions)
    documents = {f["document_id"] for f in findings}

    lines = [f"# {_one_line(title)}", ""]
    if note:
        lines += [f"*{note}*", ""]
    lines += ["## Summary", ""]
    if findings:
        lines.append(
            f"The corpus supports {len(answered)} of {len(asked)} question{'s' if len(asked) != 1 else ''} "
            f"with {len(findings)} quoted finding{'s' if len(findings) != 1 else ''} from "
            f"{len(documents)} document{'s' if len(documents) != 1 else ''}."
        )
        lines.append("")
        for question, items in by_question.items():
            if items:
                lines.append(f"- **{_one_line(question)}** {_cite(items[0])}")
        lines.append("")
    else:
        lines += ["No finding was recorded: the corpus gave no verbatim support for the questions asked.", ""]

    if findings:
        lines += ["## Findings", ""]
        for question, items in by_question.items():
            if not items:
                continue
            lines += [f"### {_one_line(question)}", ""]
            for document_id, group in _group_by_document(items).items():
                lines.append(f"**{_one_line(document_titles.get(document_id, f'Document {document_id}'))}**")
                lines.append("")
                lines += [f"- {_cite(f)}" for f in group]
                lines.append("")

    gaps = [q for q in asked if not by_question.get(q)]
    if gaps:
        lines += ["## Gaps", ""]
        lines += [f"- {_one_line(q)}: no passage retrieved in this run supports an answer." for q in gaps]
        lines.append("")
    return "\n".join(lines).strip() + "\n"


def _group_by_document(findings: Sequence[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    groups: dict[int, list[Mapping[str, Any]]] = {}
    for finding in findings:
        groups.setdefault(finding["document_id"], []).append(finding)
    return groups


def _cite(finding: Mapping[str, Any]) -> str:
    quote = html.escape(finding.get("quote") or "", quote=True)
    return f'<cite ids="{finding["passage_id"]}" quote="{quote}">{_one_line(finding["claim"])}</cite>'


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
