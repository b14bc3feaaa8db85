"""What the CLI prints: results on stdout (JSON, tables, markdown), everything else on stderr.

One-line messages (errors, hints) are written plainly, never through rich, so that a narrow or
non-terminal stream cannot wrap them across lines."""

import json
import re
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import Any

from rich import box
from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.table import Table
from rich.text import Text

# Control characters (C0 but tab and newline, DEL, C1) a terminal would act on (ESC starts a
# sequence, CR rewrites the line) and bidi controls that reorder what is shown. Names and text
# come from the server, where other users wrote them and older rows may hold any of these.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with each character a terminal would act on replaced by U+FFFD."""
    return _UNSAFE.sub("\ufffd", text)


def _json_safe(dumped: str) -> str:
    # json.dumps escapes C0 but writes DEL, C1 and bidi controls as they are: escape them too
    # (the same JSON value; outside strings JSON has none of these characters).
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


class Output:
    def __init__(self) -> None:
        self.console = Console(highlight=False)
        self.err_console = Console(stderr=True, highlight=False)

    def json(self, value: Any) -> None:
        sys.stdout.write(_json_safe(json.dumps(value, ensure_ascii=False, indent=2)) + "\n")
        sys.stdout.flush()

    def line(self, text: str) -> None:
        sys.stdout.write(terminal_safe(text) + "\n")
        sys.stdout.flush()

    def note(self, text: str) -> None:
        sys.stderr.write(terminal_safe(text) + "\n")
        sys.stderr.flush()

    def error(self, code: str, message: str) -> None:
        self.note(f"deepcite: [{code}] {' '.join(message.split())}")

    def markdown(self, content: str) -> None:
        content = terminal_safe(content)
        # Rendered on a terminal; piped or redirected output stays markdown.
        if self.console.is_terminal:
            # Rich's markdown has no footnotes: give each definition its own paragraph.
            self.console.print(Markdown(FOOTNOTE_DEFINITION.sub("\n\n", content)))
        else:
            self.line(content.rstrip("\n"))

    def table(self, table: Table) -> None:
        self.console.print(table)


FOOTNOTE_DEFINITION = re.compile(r"\n(?=\[\^\d+\]:)")


def report_json(report: dict[str, Any]) -> dict[str, Any]:
    """The report as scripts get it; from a progress-only fetch (a timed-out wait), `result` is
    empty and `citations`, `answers` and `conjunctions` too, as they are on the server until
    the run ends."""
    return {
        "task_id": report["id"],
        "status": report["status"],
        "depth": report["depth"].lower(),
        "strategy": (report.get("strategy") or "").lower() or None,
        "result": report.get("content", ""),
        "duration_seconds": report["durationSeconds"],
        "retry_count": report["retryCount"],
        "citations": [
            {
                "footnote": c["footnote"],
                "passage_id": c["passageId"],
                "document_id": c["documentId"],
                "document_title": c["documentTitle"],
                "source_name": c["sourceName"],
                "page": c["page"],
                "quote": c["quote"],
                "start": c["start"],
                "end": c["end"],
            }
            for c in report.get("citations", [])
        ],
        # Per sub-question, the documents that answer it (the report's per-document table), and
        # the documents answering both questions of one about two clauses.
        "answers": [
            {
                "index": a["index"],
                "question": a["question"],
                "asked": a["asked"],
                "swept": a["swept"],
                "documents_examined": a["documentsExamined"],
                "documents": _answer_documents(a),
            }
            for a in report.get("answers", [])
        ],
        "conjunctions": [
            {"question": c["question"], "of": c["of"], "documents": _answer_documents(c)}
            for c in report.get("conjunctions", [])
        ],
    }


def _answer_documents(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "document_id": d["documentId"],
            "title": d["title"],
            "addresses": d["addresses"],
            "position": d["position"],
            "quote": d["quote"],
            "footnotes": d["footnotes"],
        }
        for d in answer["documents"]
    ]


def report_list_json(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_id": report["id"],
        "status": report["status"],
        "depth": report["depth"].lower(),
        "title": report["title"],
        "created": report["created"],
        "duration_seconds": report["durationSeconds"],
        "corpus_id": report["corpus"]["id"],
    }


def reports_table(reports: list[dict[str, Any]]) -> Table:
    table = Table(
        title="Research reports",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("id", no_wrap=True, min_width=_widest(r["id"] for r in reports), style="cyan")
    table.add_column("status", no_wrap=True)
    table.add_column("depth", no_wrap=True)
    table.add_column("title", overflow="fold")
    table.add_column("created", no_wrap=True)
    for report in reports:
        table.add_row(
            report["id"],
            Text(report["status"].lower(), style=STATUS_STYLES.get(report["status"], "")),
            report["depth"].lower(),
            Text(terminal_safe(report["title"])),  # as written: "[/]" in a title is no markup
            local_time(report["created"]),
        )
    return table


def corpus_json(corpus: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": corpus["id"],
        "name": corpus["name"],
        "documents": corpus["documentCount"],
        "passages": corpus["passageCount"],
    }


def corpora_table(corpora: list[dict[str, Any]]) -> Table:
    table = Table(
        title="Corpora", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("id", no_wrap=True, min_width=_widest(c["id"] for c in corpora), style="cyan")
    table.add_column("name", overflow="fold")
    table.add_column("documents", justify="right")
    table.add_column("passages", justify="right")
    for corpus in corpora:
        table.add_row(
            corpus["id"],
            Text(terminal_safe(corpus["name"])),
            str(corpus["documentCount"]),
            str(corpus["passageCount"]),
        )
    return table


def uploads_table(results: list[dict[str, Any]]) -> Table:
    table = Table(
        title="Uploaded", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("file", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("passages", justify="right")
    table.add_column("document / reason", overflow="fold")
    for result in results:
        failed = result.get("status") == "failed"
        reason = f"[{result.get('code')}] {result.get('message')}"
        detail = reason if failed else result.get("document_id") or ""
        table.add_row(
            Text(terminal_safe(str(result.get("filename")))),
            Text(str(result.get("status")), style="red" if failed else "green"),
            str(result.get("passages") or ""),
            Text(terminal_safe(str(detail))),
        )
    return table


def _widest(values: Iterable[str]) -> int:
    return max((len(v) for v in values), default=2)


STATUS_STYLES = {
    "QUEUED": "yellow",
    "RUNNING": "blue",
    "CANCELLING": "magenta",
    "COMPLETED": "green",
    "FAILED": "red",
    "CANCELLED": "dim",
}


def local_time(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def progress_text(report: dict[str, Any], elapsed: float) -> str:
    """ "running · sweeping · level 1/2 · 12/61 documents · 5 findings · 3 sources · 8s"."""
    progress = report["progress"]
    parts = [report["status"].lower()]
    phase = progress.get("phase")
    if phase and phase != report["status"].lower():
        parts.append(phase)
    if progress.get("level") and progress.get("levels"):
        parts.append(f"level {progress['level']}/{progress['levels']}")
    if progress.get("documentsTotal"):
        parts.append(f"{progress.get('documentsSwept') or 0}/{progress['documentsTotal']} documents")
    if progress.get("documentsReread"):
        parts.append(f"{progress['documentsReread']} read again")
    parts += [
        _count(progress["findingsCount"], "finding"),
        _count(progress["sourcesCount"], "source"),
        f"{elapsed:.0f}s",
    ]
    return " · ".join(parts)


def _stage(report: dict[str, Any]) -> tuple[Any, ...]:
    """What a line on a log is printed for: the status, the phase and the level changing."""
    progress = report["progress"]
    return report["status"], progress.get("phase"), progress.get("level")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class ProgressView:
    """A waiting run's progress on stderr: a live spinner on a terminal; elsewhere (logs, CI) one
    line whenever the status changes."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self.started = time.monotonic()
        self._status: Status | None = None
        self._last_stage: tuple[Any, ...] | None = None

    def __enter__(self) -> "ProgressView":
        if self.output.err_console.is_terminal:
            self._status = self.output.err_console.status("waiting…")
            self._status.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._status is not None:
            self._status.stop()

    def update(self, report: dict[str, Any]) -> None:
        text = progress_text(report, time.monotonic() - self.started)
        if self._status is not None:
            title = report["title"] if len(report["title"]) <= 40 else report["title"][:39] + "…"
            self._status.update(Text(terminal_safe(f"{title} — {text}")))
        elif _stage(report) != self._last_stage:
            self.output.note(f"{report['id']}: {text}")
        self._last_stage = _stage(report)

    def retrying(self, message: str) -> None:
        if self._status is not None:
            self._status.update(Text(terminal_safe(f"retrying: {message}")))
        else:
            self.output.note(f"retrying: {message}")
