"""A research run's orchestration: the pipeline of roles, one module each, driven from here.

    fast path (a short single question): one researcher, one retrieval round, a brief answer
    deep:  plan -> level 1 researchers (in parallel) -> document sweep of the questions about the
           collection -> follow-up levels (breadth halving) -> writer -> critic rounds (gaps go
           back to researchers, then the writer again)

Every role runs under the run's shared budget and reaches the run only through the store. The
orchestration's state (plan, levels done, next directions, documents judged, critic rounds) is
checkpointed with every merge, so a resumed run continues where its last attempt stopped; its
findings are recorded as they are made and are never lost."""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model

from corpora.retrieval.spelling import corrected_text
from research.constants import BREADTH_MAX, DepthPreset
from research.drafts import compose_from_findings, plan_questions_summary, split_set_aside
from research.engine.budget import BudgetGate
from research.engine.critic import CriticDeps, Critique, critic_agent, critic_prompt_data
from research.engine.intent import is_collection_question, names_the_collection, strategy_for
from research.engine.judge import (
    DocumentVerdicts,
    JudgeDeps,
    judge_agent,
    judge_prompt_data,
    shown_passages,
)
from research.engine.minds import Minds, Role
from research.engine.planner import Plan, PlannerDeps, offline_planner, planner_agent
from research.engine.prompts import request_prompt
from research.engine.researcher import (
    Direction,
    DirectionNotes,
    ResearcherDeps,
    direction_prompt_data,
    researcher_agent,
)
from research.engine.store import RunStore, SweepEvidence
from research.engine.text import (
    core_question,
    keywords,
    names_held_by_none,
    negated,
    plan_questions,
    proper_names,
    request_conjunctions,
    without_names,
    without_words,
)
from research.engine.writer import (
    EXTRACTIVE_NOTE,
    Draft,
    WriterDeps,
    cited_finding_ids,
    writer_agent,
    writer_prompt_data,
)
from research.exceptions import FindingRejected
from research.models import ReportStrategy
from research.services import FindingInput

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Model requests one agent run of a role may make: a guard against a model that loops on one
# direction or one document (the run-wide budget bounds them all together).
REQUESTS_PER_ROLE = {
    Role.PLANNER: 10,
    Role.RESEARCHER: 100,
    Role.JUDGE: 4,
    Role.WRITER: 10,
    Role.CRITIC: 5,
}
# Documents judged per sweep batch: one retrieval write, their judges in parallel, one findings write.
SWEEP_BATCH = 8
PASSAGES_PER_DOCUMENT = 3
ORIGIN_SWEEP = "sweep"
ORIGIN_GAP = "gap"
ORIGIN_FOLLOW_UP = "follow-up"


class RunCancelled(Exception):
    """The user cancelled the run: it stops at this step, keeping its findings."""


@dataclass
class Orchestration:
    title: str
    prompt: str
    rubric: str
    depth: str
    preset: DepthPreset
    breadth: int
    store: RunStore
    minds: Minds
    state: dict[str, Any]
    plan: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # --- The pipeline ---------------------------------------------------------------------------
    async def run(self) -> str:
        """The run's draft (markdown with <cite findings> placeholders)."""
        if "corrections" not in self.state:
            found = await self.store.spelling_corrections(text=self.prompt)
            self.state["corrections"] = [c.as_pair() for c in found]
            if found:
                # Asked as the corpus's words spell it: the report says how it was read.
                self.state["read_as"] = corrected_text(self.prompt, found)
        if self.state.get("read_as"):
            self.prompt = self.state["read_as"]
        names = proper_names(self.prompt)
        if "absent_names" not in self.state:
            # Names no document holds: a question naming one is answered by none. Only a name
            # in letters, capitalised ("Japan"): an acronym ("MFN", "GDPR") or a hyphenated term
            # ("Non-Compete") a document may spell out or split.
            plain = [n for n in names if n.isalpha() and n[0].isupper() and n[1:].islower()]
            self.state["absent_names"] = await self.store.absent_names(names=plain) if plain else []
        if "named_documents" not in self.state:
            self.state["named_documents"] = await self._named_documents(names)
            if self.state["named_documents"]:
                # Asked of the named documents, the names say nothing their passages must say.
                self.state["named_prompt"] = without_names(self.prompt, names)
        if self.state["named_documents"]:
            self.store.document_ids = list(self.state["named_documents"])
            self.prompt = self.state["named_prompt"]
        if "documents" not in self.state:
            self.state["documents"] = await self.store.document_count()
        documents = self.state["documents"]
        strategy = self.state.get("strategy") or strategy_for(
            self.prompt, depth=self.depth, documents=documents
        )
        self.state["strategy"] = strategy
        await self._progress("planning", checkpoint=True, strategy=strategy)
        if strategy == ReportStrategy.FAST:
            return await self._fast()
        await self._plan()
        levels = self.preset.depth
        directions = self._directions()
        while self.state.get("levels_done", 0) < levels and directions:
            level = self.state.get("levels_done", 0) + 1
            notes = await self._research(directions, level=level, levels=levels)
            if level == 1 and not self.state.get("sweep_done"):
                await self._sweep()
            directions = self._follow_ups(directions, notes, level + 1)
            self.state["levels_done"] = level
            self.state["directions"] = [d.as_dict() for d in directions]
            await self._progress("researching", level=level, levels=levels, checkpoint=True)
        if not self.state.get("sweep_done"):
            await self._sweep()
        draft = await self._review(await self._write())
        # The final draft's positions join the run's state (the exports give them).
        await self._progress("writing", checkpoint=True)
        return draft

    async def _named_documents(self, names: list[str]) -> list[int]:
        """The documents a request not about the collection names by a party or a name few
        documents hold ("What is the term of the Cheetah Mobile cooperation agreement?"): the
        run is asked of them alone, as if the user had chosen them. None where the user chose
        documents, or the request is about the collection ("Which of these agreements ...")."""
        if self.store.document_ids is not None or names_the_collection(self.prompt):
            return []
        return await self.store.named_documents(names=names) if names else []

    async def _fast(self) -> str:
        """One researcher, one retrieval round, the brief answer."""
        if not self.plan:
            self.plan = [
                {"question": self.prompt, "queries": [self.prompt, keywords(self.prompt)], "sweep": False}
            ]
            await self.store.record_plan(plan=self.plan)
        if not self.state.get("levels_done"):
            direction = Direction(
                self.prompt, (self.prompt, keywords(self.prompt) or self.prompt), plan_index=0
            )
            await self._research([direction], level=1, levels=1)
            self.state["levels_done"] = 1
            await self._progress("writing", checkpoint=True)
        return await self._write(brief=True)

    # --- Plan -----------------------------------------------------------------------------------
    async def _plan(self) -> None:
        if self.plan:
            return
        prompt = request_prompt(
            prompt=self.prompt,
            rubric=self.rubric,
            intro=f"Plan the research: at most {self.breadth} sub-questions, each with its search queries.",
        )
        deps = PlannerDeps(self.store, self.breadth)
        try:
            plan: Plan = await self._agent(planner_agent, prompt, deps, Role.PLANNER)
        except UnexpectedModelBehavior as exc:
            # The model could not plan (e.g. its plan never validated): the offline planner plans
            # the request from its own structure, as the writer's findings are composed instead.
            self.warnings.append("planner_failed")
            logger.warning("planner failed: %s", exc)
            plan = await self._agent(
                planner_agent, prompt, deps, Role.PLANNER, model=offline_planner(self.breadth)
            )
        documents = self.state.get("documents", 0)
        collection = is_collection_question(self.prompt, documents=documents)
        self.plan = [
            _plan_step(
                sub.question,
                sub.queries or [sub.question],
                # Swept: every sub-question at deep, or those about the collection (the request
                # being about the collection makes each of its parts so); not one naming what no
                # document holds ("... governed by the laws of Japan?"): no document answers it.
                sweep=(
                    self.preset.sweep_always
                    or collection
                    or is_collection_question(sub.question, documents=documents)
                )
                and not names_held_by_none(sub.question, self.state.get("absent_names") or ()),
            )
            for sub in plan.sub_questions
        ]
        await self.store.record_plan(plan=self.plan)
        self.state["both"] = self._conjunctions()
        self.state["not_planned"] = self._not_planned()
        if self.state["not_planned"]:
            self.warnings.append(f"plan_truncated:{len(self.state['not_planned'])}")
        self.state["directions"] = [
            Direction(step["question"], tuple(step["queries"]), plan_index=i).as_dict()
            for i, step in enumerate(self.plan)
        ]
        await self._progress("researching", level=1, levels=self.preset.depth, checkpoint=True)

    def _not_planned(self) -> list[str]:
        """The parts of the request its plan leaves out because they are more than the run's
        breadth ("research X, Y, Z and W" at a breadth of 3): the report names them, so that
        nothing asked is dropped unsaid. A part the plan asks in other words is not named."""
        parts = plan_questions(self.prompt, BREADTH_MAX)
        if len(parts) <= self.breadth:
            return []
        planned = {_key(text) for step in self.plan for text in (step["question"], step.get("asked") or "")}
        return [part for part in parts if _key(part) not in planned]

    def _conjunctions(self) -> list[dict[str, Any]]:
        """The request's questions asking for documents that answer two ("Which contracts have
        both X and Y?", "... X but no Y?") whose two questions the plan sweeps: {question, of:
        [the plan indices]}, answered by the documents that answer both."""
        index = {_key(step.get("asked") or step["question"]): i for i, step in enumerate(self.plan)}
        found = []
        for asked, first, second in request_conjunctions(self.prompt):
            pair = [index.get(_key(first)), index.get(_key(second))]
            if None not in pair and all(self.plan[i].get("sweep") for i in pair):
                found.append({"question": asked, "of": pair})
        return found

    def _swept(self, direction: Direction) -> bool:
        index = direction.plan_index
        return index is not None and 0 <= index < len(self.plan) and bool(self.plan[index].get("sweep"))

    def _directions(self) -> list[Direction]:
        return [Direction.from_dict(d) for d in self.state.get("directions") or []]

    # --- Research -------------------------------------------------------------------------------
    async def _research(
        self, directions: Sequence[Direction], *, level: int, levels: int
    ) -> list[DirectionNotes]:
        """One researcher per direction, all at once on the run's loop, sharing its budget."""

        async def one(direction: Direction) -> DirectionNotes:
            await self._progress("researching", level=level, levels=levels, direction=direction.question)
            deps = ResearcherDeps(
                store=self.store,
                direction=direction,
                findings_limit=self.preset.findings_per_direction,
                context_reads=self.preset.context_reads,
                search_top_k=self.preset.search_top_k,
            )
            prompt = request_prompt(
                prompt=self.prompt,
                rubric=self.rubric,
                intro=f"Research this direction of the request (level {level} of {levels}).",
                data=direction_prompt_data(direction, swept=self._swept(direction)),
            )
            try:
                return await self._agent(researcher_agent, prompt, deps, Role.RESEARCHER)
            except UnexpectedModelBehavior as exc:  # the model could not finish; its findings stand
                self.warnings.append(f"researcher_failed:{_preview(direction.question)}")
                logger.warning("researcher on %r failed: %s", direction.question, exc)
                return DirectionNotes()

        return await _all(one(d) for d in directions)

    def _follow_ups(
        self, parents: Sequence[Direction], notes: Sequence[DirectionNotes], level: int
    ) -> list[Direction]:
        """The next level's directions: the researchers' follow-ups, new ones first in the order
        given, breadth halving with each level."""
        if level > self.preset.depth:
            return []
        limit = max(1, self.breadth >> (level - 1))
        done = {" ".join(d.lower().split()) for d in self.state.get("researched", [])}
        done |= {" ".join(step["question"].lower().split()) for step in self.plan}
        chosen: list[Direction] = []
        for parent, note in zip(parents, notes, strict=False):
            for follow_up in note.follow_ups:
                key = " ".join(follow_up.lower().split())
                if not key or key in done:
                    continue
                done.add(key)
                chosen.append(
                    Direction(
                        follow_up,
                        (follow_up, keywords(follow_up) or follow_up),
                        plan_index=parent.plan_index,
                        level=level,
                        origin=ORIGIN_FOLLOW_UP,
                    )
                )
        # Round-robin over the parents, so that each sub-question gets its best follow-up first.
        by_parent: dict[Any, list[Direction]] = {}
        for direction in chosen:
            by_parent.setdefault(direction.plan_index, []).append(direction)
        ordered = [d for group in _round_robin(list(by_parent.values())) for d in group]
        picked = ordered[:limit]
        self.state["researched"] = [*self.state.get("researched", []), *(d.question for d in picked)]
        return picked

    # --- Sweep ----------------------------------------------------------------------------------
    def _swept_questions(self) -> list[int]:
        """The plan's questions about the collection: their candidate documents are judged."""
        return [i for i, step in enumerate(self.plan) if step.get("sweep")]

    async def _sweep(self) -> None:
        """Every candidate document of the questions about the collection, judged on its own
        passages, in batches: one finding per addressing document and question."""
        swept = self._swept_questions()
        if not swept or self.state.get("sweep_done"):
            self.state["sweep_done"] = True
            return
        questions = self._judged_questions(swept)[0]
        sweep = self.state.setdefault("sweep", {})
        candidates = self.state.get("sweep_candidates")
        if candidates is None:
            queries = list(dict.fromkeys(q for i in swept for q in self.plan[i]["queries"]))
            # A question asked in the negative is answered by the documents without it: every
            # document is a candidate, not only those its searches reach.
            candidates = await self.store.candidate_documents(
                queries=queries,
                limit=self.preset.sweep_documents,
                every_document=any(self.plan[i].get("asked") for i in swept),
            )
            self.state["sweep_candidates"] = candidates
        judged = {int(d) for entry in sweep.values() for d in entry.get("judged", [])}
        todo = [d for d in candidates if d not in judged]
        total = len(candidates)
        references = (
            await self.store.sweep_references(
                questions=questions, document_ids=candidates, per_document=PASSAGES_PER_DOCUMENT
            )
            if todo
            else []
        )
        for start in range(0, len(todo), SWEEP_BATCH):
            if await self.store.cancel_pending():
                raise RunCancelled
            batch = todo[start : start + SWEEP_BATCH]
            failed = await self._judge_documents(batch, swept, references)
            # A document whose judging failed is not examined: neither counted nor "does not
            # address it" (for a question in the negative, that would answer it); Gaps name it.
            if failed:
                self.state["not_judged"] = sorted({*self.state.get("not_judged", []), *failed})
            for index in swept:
                entry = _sweep_entry(sweep, index)
                entry["judged"] = [*entry["judged"], *(d for d in batch if d not in failed)]
            await self._progress(
                "sweeping",
                documents_swept=len(judged) + start + len(batch),
                documents_total=total,
                checkpoint=True,
            )
        self.state["sweep_done"] = True

    async def _judge_documents(
        self,
        documents: list[int],
        swept: list[int],
        references: list[Any],
        *,
        turned_down_only: bool = False,
    ) -> set[int]:
        """Judges `documents` on the swept questions and records each outcome in the sweep's
        checkpoint: a document addressing a question is among those addressing it, with a
        finding unless a researcher already quoted it for that question; one turned down keeps
        the passages the judge read of it (a finding quoting one of them is set aside,
        findings_set_aside). With `turned_down_only`, only the questions a document was turned
        down for are settled again (a second reading, after researchers quoted more of it).
        Returns the documents whose judging failed (judge_failed): none of their questions is settled."""
        sweep = self.state.setdefault("sweep", {})
        questions, of = self._judged_questions(swept)
        quoted: dict[tuple[int, int], list[int]] = {}
        for (document_id, position), passages in self._quoted(swept).items():
            quoted.setdefault((document_id, of[position]), []).extend(passages)
        evidence = await self.store.sweep_evidence(
            questions=questions,
            document_ids=documents,
            per_document=PASSAGES_PER_DOCUMENT,
            references=references,
            quoted=quoted,
        )
        verdicts = await _all(self._judge(e, questions) for e in evidence)
        items, owners = [], []
        failed: set[int] = set()
        for document, outcome in zip(evidence, verdicts, strict=True):
            if outcome is None:
                failed.add(document.document_id)
                continue
            key = str(document.document_id)
            settled = {
                position
                for position, index in enumerate(swept)
                if not turned_down_only or key in (_sweep_entry(sweep, index).get("turned_down") or {})
            }
            verdict_of = {v.question: v for v in outcome.verdicts if v.addresses and v.passage_id is not None}
            addressed = {position for position in settled if of[position] in verdict_of}
            for position in settled:
                entry = _sweep_entry(sweep, swept[position])
                if position in addressed:
                    (entry.get("turned_down") or {}).pop(key, None)
                    continue
                shown = [p["passage_id"] for p in shown_passages(document, of[position])]
                if shown:
                    entry.setdefault("turned_down", {})[key] = shown
            for position in sorted(addressed):
                verdict, index = verdict_of[of[position]], swept[position]
                items.append(
                    FindingInput(
                        claim=verdict.claim or verdict.quote or "",
                        quote=verdict.quote or "",
                        passage_ids=[verdict.passage_id],
                        section=self.plan[index]["question"],
                        question=index,
                        position=verdict.position,
                        origin=ORIGIN_SWEEP,
                    )
                )
                owners.append((index, document.document_id))
        # A document a researcher already quoted for the question addresses it: no second finding.
        covered = {(f.get("question"), f["document_id"]) for f in self.store.findings}
        fresh = [(item, owner) for item, owner in zip(items, owners, strict=True) if owner not in covered]
        for index, document in owners:
            if (index, document) in covered:
                entry = _sweep_entry(sweep, index)
                if document not in entry["addressing"]:
                    entry["addressing"].append(document)
        items, owners = [i for i, _ in fresh], [o for _, o in fresh]
        outcomes = await self.store.record_findings(items)
        for item, (index, document), outcome in zip(items, owners, outcomes, strict=True):
            if not isinstance(outcome, FindingRejected) or outcome.code == "finding_duplicate":
                entry = _sweep_entry(sweep, index)
                if document not in entry["addressing"]:
                    entry["addressing"].append(document)
            if isinstance(outcome, FindingRejected) and outcome.code == "finding_duplicate":
                # The quote is another question's finding already: this question's answer cites it.
                same = _same_quote(self.store.findings, item)
                if same is not None:
                    entry.setdefault("shared", {})[str(document)] = same["id"]
        return failed

    async def _read_new_quotes(self) -> None:
        """Before a draft: a document the sweep turned down for a question, from which a
        researcher has since quoted a passage the judge has not read (a follow-up's, a critic
        gap's), is judged again with that passage in view. Each quote is read again once, even
        when its passage could not be shown (deleted meanwhile). Skipped, with a warning, when
        the budget cannot pay for it."""
        swept = self._swept_questions()
        sweep = self.state.get("sweep") or {}
        done = {tuple(quote) for quote in self.state.get("second_readings", [])}
        unread = []
        for finding in self.store.findings:
            turned_down = (sweep.get(str(finding.get("question"))) or {}).get("turned_down") or {}
            read = turned_down.get(str(finding["document_id"]))
            quote = (finding.get("question"), finding["document_id"], finding["passage_id"])
            if (
                finding.get("origin") != ORIGIN_SWEEP
                and read is not None
                and finding["passage_id"] not in read
                and quote not in done
            ):
                unread.append(quote)
        if not swept or not unread:
            return
        documents = sorted({document for _, document, _ in unread})
        questions = self._judged_questions(swept)[0]
        budget = self.store.budget
        if budget.tool_calls_left() < len(questions) + len(documents) or budget.steps_left() < len(documents):
            if "second_reading_skipped:budget" not in self.warnings:
                self.warnings.append("second_reading_skipped:budget")
            return
        references = await self.store.sweep_references(
            questions=questions,
            document_ids=self.state.get("sweep_candidates") or documents,
            per_document=PASSAGES_PER_DOCUMENT,
        )
        for start in range(0, len(documents), SWEEP_BATCH):
            if await self.store.cancel_pending():
                raise RunCancelled
            batch = documents[start : start + SWEEP_BATCH]
            await self._judge_documents(batch, swept, references, turned_down_only=True)
            self.state["second_readings"] = [
                *self.state.get("second_readings", []),
                *(list(quote) for quote in unread if quote[1] in batch),
            ]
            await self._progress("rereading", checkpoint=True)

    def _judged_questions(self, swept: list[int]) -> tuple[list[str], list[int]]:
        """The distinct questions the judge decides for the swept plan steps, and for each step
        (by its position in `swept`) the position of its question among them: "Which agreements
        require insurance, and which do not?" sweeps one question, answered both ways."""
        questions: list[str] = []
        of = []
        for index in swept:
            # Judged by what a document must say to answer it, not by its follow-ups' words
            # ("..., and how long does each restriction last?").
            question = core_question(self.plan[index]["question"])
            if question not in questions:
                questions.append(question)
            of.append(questions.index(question))
        return questions, of

    def _quoted(self, swept: list[int]) -> dict[tuple[int, int], list[int]]:
        """{(document, position in `swept`): passages the researchers quoted from it for that
        question}: the judge reads them beside the document's best passages."""
        positions = {index: position for position, index in enumerate(swept)}
        quoted: dict[tuple[int, int], list[int]] = {}
        for finding in self.store.findings:
            position = positions.get(finding.get("question"))
            if position is not None and finding.get("origin") != ORIGIN_SWEEP:
                quoted.setdefault((finding["document_id"], position), []).append(finding["passage_id"])
        return quoted

    async def _judge(self, evidence: SweepEvidence, questions: list[str]) -> DocumentVerdicts | None:
        prompt = request_prompt(
            prompt=self.prompt,
            # The title (from a file name: untrusted) is in the framed data, never in the intro.
            intro="Judge whether the document in the data (its title and passages) addresses each question.",
            data=judge_prompt_data(evidence, questions),
        )
        try:
            return await self._agent(
                judge_agent, prompt, JudgeDeps(evidence, questions), Role.JUDGE, check_cancel=False
            )
        except UnexpectedModelBehavior as exc:  # verdicts that never checked out: not judged
            self.warnings.append(f"judge_failed:{evidence.document_id}")
            logger.warning("judging document %s failed: %s", evidence.document_id, exc)
            return None

    # --- Write and review -----------------------------------------------------------------------
    def _citable(self) -> list[dict[str, Any]]:
        """The findings a draft may cite: all but those the sweep's judge overruled."""
        return split_set_aside(self.store.findings, self.state)[0]

    async def _write(self, *, brief: bool = False, note: str = "") -> str:
        await self._read_new_quotes()
        recorded = list(self.store.findings)
        findings, set_aside = split_set_aside(recorded, self.state)
        documents = {f["document_id"] for f in recorded} | set(self.state.get("named_documents") or [])
        documents |= {int(d) for e in (self.state.get("sweep") or {}).values() for d in e.get("judged", [])}
        documents |= {int(d) for d in self.state.get("not_judged") or []}
        titles = await self.store.document_titles(sorted(documents))
        questions = plan_questions_summary(
            plan=self.plan, engine_state=self.state, titles=titles, set_aside=set_aside
        )
        cited = {f["document_id"] for f in findings}
        versions = await self.store.document_versions({d: t for d, t in titles.items() if d in cited})
        self.state["versions"] = versions.as_data()
        await self._progress("writing", checkpoint=True)
        prompt = request_prompt(
            prompt=self.prompt,
            rubric=self.rubric,
            intro="Write the report from these findings." + (f" The critic asks: {note}" if note else ""),
            data=writer_prompt_data(
                title=self.title,
                questions=questions,
                findings=findings,
                titles=titles,
                brief=brief,
                both=self.state.get("both") or [],
                not_planned=self.state.get("not_planned") or [],
                named=[titles.get(d, f"Document {d}") for d in self.state.get("named_documents") or []],
                corrections=self.state.get("corrections") or [],
                not_judged=[titles.get(d, f"Document {d}") for d in self.state.get("not_judged") or []],
                versions=versions,
            ),
        )
        deps = WriterDeps(store=self.store, finding_ids={f["id"] for f in findings})
        self.store.positions.clear()
        try:
            draft: Draft = await self._agent(writer_agent, prompt, deps, Role.WRITER)
            self.state["positions"] = {str(i): label for i, label in self.store.positions.items()}
            return draft.markdown
        except UnexpectedModelBehavior as exc:
            # The model could not write a valid report: the findings are composed instead.
            self.warnings.append("writer_failed:composed_from_findings")
            logger.warning("writer failed: %s", exc)
            return compose_from_findings(
                title=self.title,
                plan=self.plan,
                engine_state=self.state,
                findings=recorded,
                titles=titles,
                note=EXTRACTIVE_NOTE,
            )

    async def _review(self, draft: str) -> str:
        """Up to the preset's rubric iterations: the critic grades the draft; its gaps go back to
        researchers and the writer writes again."""
        rounds = self.preset.rubric_iterations
        while self.state.get("critic_rounds", 0) < rounds:
            round_number = self.state.get("critic_rounds", 0) + 1
            await self._progress("reviewing", round=round_number, rounds=rounds)
            findings = self._citable()
            data = critic_prompt_data(
                draft=draft,
                rubric=self.rubric,
                questions=[
                    {
                        "index": i,
                        "question": s["question"],
                        "swept": bool(s.get("sweep")),
                        **({"asked": s["asked"]} if s.get("asked") else {}),
                    }
                    for i, s in enumerate(self.plan)
                ],
                findings=findings,
                cited=cited_finding_ids(draft),
            )
            prompt = request_prompt(
                prompt=self.prompt, rubric=self.rubric, intro="Review this draft.", data=data
            )
            deps = CriticDeps(finding_ids={f["id"] for f in findings}, questions=len(self.plan))
            try:
                critique: Critique = await self._agent(critic_agent, prompt, deps, Role.CRITIC)
            except UnexpectedModelBehavior as exc:
                self.warnings.append("critic_failed")
                logger.warning("critic failed: %s", exc)
                break
            self.state["critic_rounds"] = round_number
            for finding_id in critique.unsupported_findings:
                self.warnings.append(f"finding_disputed:{finding_id}")
            await self._progress("reviewing", round=round_number, rounds=rounds, checkpoint=True)
            if critique.satisfied or (not critique.gaps and not critique.uncited_findings):
                break
            if critique.gaps:
                directions = [
                    Direction(
                        g.direction,
                        (g.direction, keywords(g.direction) or g.direction),
                        plan_index=g.question,
                        level=self.preset.depth + round_number,
                        origin=ORIGIN_GAP,
                    )
                    for g in critique.gaps[: self.breadth]
                ]
                before = len(self._citable())
                await self._research(
                    directions, level=self.preset.depth + round_number, levels=self.preset.depth + rounds
                )
                if len(self._citable()) == before and not critique.uncited_findings:
                    break  # nothing new to write from
            note = ""
            if critique.uncited_findings:
                note = f"cite findings {critique.uncited_findings[:50]} too"
            draft = await self._write(note=note)
        return draft

    # --- Helpers --------------------------------------------------------------------------------
    async def _agent(
        self,
        agent: Agent,
        prompt: str,
        deps: Any,
        role: Role,
        *,
        check_cancel: bool = True,
        model: Model | None = None,
    ) -> Any:
        """One agent run of `role` (on `model`, else the role's), checking for a cancel before
        each of its model requests."""
        limits = UsageLimits(request_limit=REQUESTS_PER_ROLE[role], tool_calls_limit=None)
        gate = BudgetGate(self.store.budget, role.value)
        async with agent.iter(
            prompt, deps=deps, model=model or self.minds.model(role), usage_limits=limits, capabilities=[gate]
        ) as run:
            async for node in run:
                if check_cancel and agent.is_model_request_node(node) and await self.store.cancel_pending():
                    raise RunCancelled
        return run.result.output

    def _counts(self) -> dict[str, Any]:
        """What the sweep has judged so far (and judged again before a draft), carried through
        every later progress record."""
        if "sweep_candidates" not in self.state:
            return {}
        judged = {int(d) for e in (self.state.get("sweep") or {}).values() for d in e.get("judged", [])}
        counts = {"documents_swept": len(judged), "documents_total": len(self.state["sweep_candidates"])}
        if self.state.get("second_readings"):
            counts["documents_reread"] = len({document for _, document, _ in self.state["second_readings"]})
        return counts

    async def _progress(
        self, phase: str, *, checkpoint: bool = False, strategy: str | None = None, **details: Any
    ) -> None:
        progress = {"phase": phase, "strategy": self.state.get("strategy"), **self._counts(), **details}
        await self.store.record_progress(
            progress, state=dict(self.state) if checkpoint else None, strategy=strategy
        )


async def _all(coroutines: Any) -> list[Any]:
    """Run the coroutines as tasks on the run's loop; the first failure cancels the rest and is
    raised (a budget running out, a cancel, a lost lease end the whole step). Cancelled itself,
    it cancels them all: none outlives the run."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    if not tasks:
        return []
    try:
        _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:  # the run was cut short (time limit, cancel): so are they
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None), None)
    if failed is not None:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise failed.exception()
    return [t.result() for t in tasks]


def _same_quote(findings: Sequence[dict[str, Any]], item: FindingInput) -> dict[str, Any] | None:
    """The recorded finding quoting `item`'s quote from its passage (what made it a duplicate)."""
    quote = " ".join(item.quote.split())
    return next(
        (
            f
            for f in findings
            if f["passage_id"] in item.passage_ids and " ".join(f["quote"].split()) == quote
        ),
        None,
    )


def _key(question: str) -> str:
    return " ".join(question.lower().split()).rstrip(" ?.!")


def _plan_step(question: str, queries: Sequence[str], *, sweep: bool) -> dict[str, Any]:
    """A plan step. A swept question asking which documents do not say something ("Which
    contracts do not have a non-compete?") is researched and judged as the question it negates,
    its queries without the negation; `asked` keeps it as asked, and the report answers it with
    the documents judged not to address the affirmative one."""
    negation = negated(question) if sweep else None
    if negation is None:
        return {"question": question, "queries": list(queries), "sweep": sweep}
    affirmed = [negation.affirmative]
    affirmed += [without_words(q, negation.negation) for q in queries if q != question]
    return {
        "question": negation.affirmative,
        "queries": [q for q in dict.fromkeys(affirmed) if q.strip()],
        "sweep": sweep,
        "asked": question,
    }


def _sweep_entry(sweep: dict[str, Any], index: int) -> dict[str, Any]:
    """The checkpointed sweep record of plan question `index`: the documents judged for it, those
    addressing it and, per document turned down, the passages its judge read."""
    return sweep.setdefault(str(index), {"judged": [], "addressing": []})


def _round_robin(groups: list[list[T]]) -> list[list[T]]:
    rounds: list[list[T]] = []
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        rounds.append([g[i] for g in groups if i < len(g)])
    return rounds


def _preview(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
