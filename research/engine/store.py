"""The run store: a research run's one connection to its report and corpus. Every role reaches
the run through the store in its agent's deps (as pydantic-ai's examples pass a database
connection): retrieval that joins the run's accumulator, the scratchpad writes (plan, findings,
tool calls) and the cancel check. Its methods run their database work on the run's database
thread (research.runloop) and raise ApplicationError for what a model can correct; the agents'
tools turn those into error strings."""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from django.db import DatabaseError

from config.exceptions import ApplicationError
from corpora.constants import NEIGHBOURS_MAX_WINDOW
from corpora.exceptions import EmbeddingUnavailable
from corpora.models import Corpus, Passage
from corpora.passage_views import passage_view
from corpora.selectors import document_list, passage_exact_search, passage_neighbours, passage_search
from llms.breaker import breakers
from research.models import ReportStatus
from research.runloop import database
from research.selectors import report_cancel_pending
from research.services import (
    LeaseLost,
    ToolCall,
    finding_record,
    report_plan_record,
    report_tool_call_record,
)

logger = logging.getLogger(__name__)

SEARCH_TOP_K_MAX = 20
LIST_DOCUMENTS_MAX = 200


class ToolUnavailable(ApplicationError):
    """A retrieval dependency failed or its breaker is open: the model should try another way."""

    code = "tool_failed"


@dataclass
class RunStore:
    report_id: int
    corpus: Corpus
    search_top_k: int
    document_ids: list[int] | None = None
    lease_token: str | None = None
    # The run's accumulator: the only passage ids a finding may cite.
    retrieved: set[int] = field(default_factory=set)
    # The model usage so far, written with each step as part of the run's checkpoint.
    usage: dict[str, Any] | None = None
    # The report's status as the last step's write saw it (None: no write since the last check),
    # so the run need not query for a pending cancel after a step that already read the row.
    seen_status: str | None = None

    # --- Retrieval ---------------------------------------------------------------------------
    async def search(self, *, query: str, mode: str = "hybrid", top_k: int | None = None) -> list[dict]:
        k = max(1, min(top_k or self.search_top_k, SEARCH_TOP_K_MAX))

        def run() -> list[Passage]:
            hits = passage_search(
                corpus=self.corpus, query=query, top_k=k, document_ids=self.document_ids, mode=mode
            )
            return [h.passage for h in hits]

        return await self._retrieval("search_passages", {"query": query, "mode": mode, "top_k": k}, run)

    async def exact_search(self, *, phrase: str) -> list[dict]:
        def run() -> list[Passage]:
            hits = passage_exact_search(
                corpus=self.corpus, phrase=phrase, top_k=self.search_top_k, document_ids=self.document_ids
            )
            return [h.passage for h in hits]

        return await self._retrieval("exact_search", {"phrase": phrase}, run)

    async def read_context(self, *, passage_id: int, before: int = 1, after: int = 1) -> list[dict]:
        before = max(0, min(before, NEIGHBOURS_MAX_WINDOW))
        after = max(0, min(after, NEIGHBOURS_MAX_WINDOW))

        def run() -> list[Passage]:
            passages = passage_neighbours(
                corpus=self.corpus, passage_id=passage_id, before=before, after=after
            )
            if (
                self.document_ids is not None
                and passages
                and passages[0].document_id not in self.document_ids
            ):
                return []
            return passages

        arguments = {"passage_id": passage_id, "before": before, "after": after}
        return await self._retrieval("read_context", arguments, run)

    async def list_documents(self) -> list[dict[str, Any]]:
        def work() -> list[dict[str, Any]]:
            started = perf_counter()
            queryset = document_list(corpus=self.corpus, document_ids=self.document_ids)
            documents = [
                {"document_id": pk, "title": title, "source_name": source, "pages": pages}
                for pk, title, source, pages in queryset.values_list(
                    "pk", "title", "source_name", "page_count"
                )[:LIST_DOCUMENTS_MAX]
            ]
            self._log(ToolCall("list_documents", {}, _ms(started), f"{len(documents)} documents"))
            return documents

        return await database(work)

    # --- Scratchpad ----------------------------------------------------------------------------
    async def record_plan(self, *, questions: Sequence[str], breadth: int) -> list[str]:
        cleaned = [" ".join(q.split()) for q in questions if q and q.strip()][: max(breadth, 1)]

        def work() -> list[str]:
            started = perf_counter()
            report_plan_record(report_id=self.report_id, plan=[{"question": q} for q in cleaned])
            self._log(
                ToolCall("record_plan", {"questions": cleaned}, _ms(started), f"{len(cleaned)} questions")
            )
            return cleaned

        return await database(work)

    async def record_finding(
        self, *, claim: str, quote: str, passage_ids: Sequence[int], section: str | None = None
    ) -> dict[str, Any]:
        """The recorded finding; FindingRejected (an ApplicationError) says how to correct it."""

        def work() -> dict[str, Any]:
            recorded = finding_record(
                report_id=self.report_id,
                claim=claim,
                quote=quote,
                passage_ids=passage_ids,
                section=section,
                lease_token=self.lease_token,
            )
            self.seen_status = recorded.report_status
            return recorded.finding

        return await database(work)

    async def cancel_pending(self) -> bool:
        """Whether a cancel was requested: read by the last step's write if there was one."""
        seen, self.seen_status = self.seen_status, None
        if seen is not None:  # the step's own write read the status under its row lock
            return seen in (ReportStatus.CANCELLING, ReportStatus.CANCELLED)
        return await database(report_cancel_pending, report_id=self.report_id)

    # --- Helpers ---------------------------------------------------------------------------------
    async def _retrieval(
        self, tool: str, arguments: dict[str, Any], run: Callable[[], list[Passage]]
    ) -> list[dict]:
        """Run a retrieval on the run's database thread, add what it returned to the run's
        accumulator and log the call, in one write."""
        breaker = breakers.for_endpoint(f"{tool}:{arguments.get('mode', '')}")

        def work() -> list[dict]:
            started = perf_counter()
            if not breaker.allow():
                self._log(ToolCall(tool, arguments, 0.0, "error: circuit_open"))
                raise ToolUnavailable(
                    f"{tool} is failing repeatedly and is paused for a minute; use another tool or "
                    "mode, or finish with the findings you have",
                    code="circuit_open",
                )
            try:
                passages = run()
            except ApplicationError as exc:
                if isinstance(exc, EmbeddingUnavailable):  # a dependency down, not a bad request
                    breaker.record_failure()
                self._log(ToolCall(tool, arguments, _ms(started), f"error: {exc.code}"))
                raise
            except (DatabaseError, LeaseLost):
                raise  # the run's own storage: retried from the checkpoint, not by the model
            except Exception as exc:  # a failing dependency (an embedding endpoint, say)
                breaker.record_failure()
                logger.warning("%s failed: %s", tool, exc)
                self._log(
                    ToolCall(tool, arguments, _ms(started), f"error: tool_failed: {type(exc).__name__}")
                )
                raise ToolUnavailable(
                    f"{tool} failed ({type(exc).__name__}); try again, another tool or mode"
                ) from exc
            breaker.record_success()
            ids = [p.pk for p in passages]
            report = report_tool_call_record(
                report_id=self.report_id,
                call=ToolCall(tool, arguments, _ms(started), f"{len(ids)} passages"),
                passage_ids=ids,
                lease_token=self.lease_token,
                usage=self.usage,
            )
            self.seen_status = report.status
            self.retrieved.update(ids)
            return [passage_view(p) for p in passages]

        return await database(work)

    def _log(self, call: ToolCall) -> None:
        report = report_tool_call_record(
            report_id=self.report_id, call=call, lease_token=self.lease_token, usage=self.usage
        )
        self.seen_status = report.status


def _ms(started: float) -> float:
    return (perf_counter() - started) * 1000
