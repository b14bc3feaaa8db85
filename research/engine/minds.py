"""Which mind plays each role of a run: the offline minds (deterministic FunctionModels, the
default) or provider models from the run's model spec (RESEARCH_MODEL for the planner, writer
and critic; RESEARCH_WORKER_MODEL, a cheaper one, for the researchers and the document judge).
The orchestration runs every role under the run's shared budget (BudgetGate)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from django.conf import settings
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel

from llms.providers import OFFLINE, ChosenModel, Engine, configured_model
from research.constants import DepthPreset
from research.engine.critic import offline_critic
from research.engine.judge import offline_judge
from research.engine.planner import offline_planner
from research.engine.researcher import offline_researcher
from research.engine.writer import offline_writer


class Role(StrEnum):
    PLANNER = "planner"
    RESEARCHER = "researcher"
    JUDGE = "judge"
    WRITER = "writer"
    CRITIC = "critic"


WORKER_ROLES = frozenset({Role.RESEARCHER, Role.JUDGE})


@dataclass
class Minds:
    lead: str
    worker: str
    preset: DepthPreset
    breadth: int
    shared_client: bool = False
    _providers: dict[str, ChosenModel] = field(default_factory=dict)

    @classmethod
    def for_run(cls, *, override: str, preset: DepthPreset, breadth: int, shared_client: bool) -> "Minds":
        lead = (override or settings.RESEARCH_MODEL or OFFLINE).strip()
        worker = (override or settings.RESEARCH_WORKER_MODEL or lead).strip()
        return cls(
            lead=lead,
            worker=worker,
            preset=preset,
            breadth=breadth,
            shared_client=shared_client,
        )

    @property
    def engine(self) -> str:
        if self.lead == OFFLINE and self.worker == OFFLINE:
            return Engine.OFFLINE
        return Engine.LLM if OFFLINE not in (self.lead, self.worker) else "mixed"

    def model(self, role: Role) -> Model:
        """The model for one agent run of `role`."""
        spec = self.worker if role in WORKER_ROLES else self.lead
        if spec == OFFLINE:
            base: Model = self._offline[role]()
        else:
            if spec not in self._providers:
                self._providers[spec] = configured_model(spec, shared_client=self.shared_client)
            base = self._providers[spec].model
        return base

    @property
    def _offline(self) -> dict[Role, Callable[[], FunctionModel]]:
        preset = self.preset
        return {
            Role.PLANNER: lambda: offline_planner(self.breadth),
            Role.RESEARCHER: lambda: offline_researcher(
                findings_limit=preset.findings_per_direction,
                context_reads=preset.context_reads,
                search_top_k=preset.search_top_k,
            ),
            Role.JUDGE: offline_judge,
            Role.WRITER: offline_writer,
            Role.CRITIC: offline_critic,
        }

    def inline_retries(self) -> int:
        return sum(getattr(chosen.model, "retried", 0) for chosen in self._providers.values())

    async def aclose(self) -> None:
        for chosen in self._providers.values():
            if chosen.aclose is not None:  # clients of this run's own, on the loop that used them
                await chosen.aclose()
