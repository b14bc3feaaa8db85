"""The run's budget, shared by every role and every researcher running in parallel: model
requests (steps), tool calls, tokens and cost. A step or a tool call is taken before it happens,
in one synchronous check-and-count on the run's event loop, so parallel agents can never take
more than the run has. Tokens and cost are known only after a response: a request starts only
while the tokens used plus those reserved by requests in flight leave room for it.

PydanticAI's own UsageLimits checks each agent run against its own usage and counts a request
after it returns, so N researchers in parallel could each pass a check for the last step; this
gate is the run-wide one, applied by BudgetGate (a capability on each agent run) around each
model request and by the run store around each tool call."""

import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestContext

from research.constants import BUDGET_STEPS, BUDGET_TOKENS, BUDGET_TOOL_CALLS

# A request's tokens are reserved before it is sent at this many characters per token of its
# history, plus its answer's allowance; the response's own count replaces the estimate.
CHARS_PER_TOKEN = 3
OUTPUT_TOKENS_RESERVED = 2_048
BUDGET_COST = "cost"
# The offline minds' model names: they cost nothing, so a cost limit needs no price for them.
OFFLINE_MIND_PREFIX = "deepcite-offline-"

logger = logging.getLogger(__name__)


class BudgetExhausted(UsageLimitExceeded):
    """The run's budget `budget` (steps, tool_calls, tokens, cost) has no room left."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget


@dataclass
class RoleUsage:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    # Some of the tokens are estimated: a provider answered without its usage.
    estimated: bool = False

    def as_dict(self) -> dict[str, Any]:
        usage = {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cost is not None:
            usage["cost_usd"] = float(round(self.cost, 6))
        if self.estimated:
            usage["tokens_estimated"] = True
        return usage


@dataclass
class RunBudget:
    max_steps: int
    max_tool_calls: int
    token_limit: int
    cost_limit: Decimal | None = None
    steps: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost: Decimal | None = None
    roles: dict[str, RoleUsage] = field(default_factory=dict)
    reserved_tokens: int = 0
    # The first budget that ran out, for the report's warning.
    exhausted: str | None = None
    # Models that answered without price data while a cost limit is set: the limit cannot hold
    # for them, and the report says so (cost_limit_unpriced:MODEL).
    unpriced: list[str] = field(default_factory=list)
    # Requests answered per provider model, by the name its responses gave: which member of a
    # fallback chain served the run.
    answered_by: dict[str, int] = field(default_factory=dict)

    @classmethod
    def resumed(
        cls,
        *,
        max_steps: int,
        max_tool_calls: int,
        token_limit: int,
        cost_limit: Decimal | None,
        earlier: dict[str, Any],
    ) -> "RunBudget":
        """A budget that counts what an earlier attempt of the run spent (its model usage)."""
        budget = cls(
            max_steps=max_steps, max_tool_calls=max_tool_calls, token_limit=token_limit, cost_limit=cost_limit
        )
        budget.steps = int(earlier.get("requests", 0))
        budget.tool_calls = int(earlier.get("tool_calls", 0))
        budget.tokens = int(earlier.get("input_tokens", 0)) + int(earlier.get("output_tokens", 0))
        if earlier.get("cost_usd") is not None:
            budget.cost = Decimal(str(earlier["cost_usd"]))
        budget.answered_by = {str(k): int(v) for k, v in (earlier.get("answered_by") or {}).items()}
        for role, usage in (earlier.get("roles") or {}).items():
            budget.roles[role] = RoleUsage(
                requests=int(usage.get("requests", 0)),
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
                cost=Decimal(str(usage["cost_usd"])) if usage.get("cost_usd") is not None else None,
                estimated=bool(usage.get("tokens_estimated")),
            )
        return budget

    # --- Taking -------------------------------------------------------------------------------
    def take_step(self, *, reserve_tokens: int = 0) -> None:
        """Count one model request, or raise BudgetExhausted; reserves its tokens until
        `settle` (no await between the check and the count: parallel agents cannot both pass)."""
        if self.steps >= self.max_steps:
            self._exhaust(BUDGET_STEPS, f"the run's {self.max_steps} model requests are spent")
        if self.tokens + self.reserved_tokens + reserve_tokens > self.token_limit:
            self._exhaust(BUDGET_TOKENS, f"the run's {self.token_limit:,} tokens are spent")
        if self.cost_limit is not None and self.cost is not None and self.cost >= self.cost_limit:
            self._exhaust(BUDGET_COST, f"the run's ${self.cost_limit} cost limit is reached")
        self.steps += 1
        self.reserved_tokens += reserve_tokens

    def take_tool_calls(self, count: int = 1) -> None:
        if self.tool_calls + count > self.max_tool_calls:
            self._exhaust(BUDGET_TOOL_CALLS, f"the run's {self.max_tool_calls} tool calls are spent")
        self.tool_calls += count

    def tool_calls_left(self) -> int:
        return max(0, self.max_tool_calls - self.tool_calls)

    def steps_left(self) -> int:
        return max(0, self.max_steps - self.steps)

    def settle(self, *, role: str, response: ModelResponse | None, reserved: int) -> None:
        """Replace a request's reservation (its estimate, _estimate) with what its response used.
        A response without usage (a provider that omits it) counts the estimate of its request
        and of its own parts, so that the token budget still holds."""
        self.reserved_tokens -= reserved
        usage = self.roles.setdefault(role, RoleUsage())
        usage.requests += 1
        if response is None:
            return
        name = response.model_name
        if name and not name.startswith(OFFLINE_MIND_PREFIX):
            self.answered_by[name] = self.answered_by.get(name, 0) + 1
        input_tokens, output_tokens = response.usage.input_tokens, response.usage.output_tokens
        if not input_tokens and not output_tokens:
            input_tokens = max(0, reserved - OUTPUT_TOKENS_RESERVED)
            output_tokens = _estimate([response]) - OUTPUT_TOKENS_RESERVED
            usage.estimated = True
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        self.tokens += input_tokens + output_tokens
        cost = _cost(response)
        if cost is not None:
            usage.cost = (usage.cost or Decimal(0)) + cost
            self.cost = (self.cost or Decimal(0)) + cost
        elif self.cost_limit is not None:
            self._unpriced(response.model_name or "unknown")

    def _unpriced(self, model: str) -> None:
        if model.startswith(OFFLINE_MIND_PREFIX) or model in self.unpriced:
            return
        self.unpriced.append(model)
        logger.warning(
            "the cost limit of $%s cannot hold for model %r: it has no price data", self.cost_limit, model
        )

    def warnings(self) -> list[str]:
        """What the report should say of this budget: the models a cost limit could not price."""
        return [f"cost_limit_unpriced:{model}" for model in self.unpriced]

    def _exhaust(self, budget: str, message: str) -> None:
        self.exhausted = self.exhausted or budget
        raise BudgetExhausted(budget, message)

    # --- Reporting ----------------------------------------------------------------------------
    def usage(self) -> dict[str, Any]:
        totals = RoleUsage()
        for role in self.roles.values():
            totals.input_tokens += role.input_tokens
            totals.output_tokens += role.output_tokens
            totals.estimated |= role.estimated
        snapshot: dict[str, Any] = {
            "requests": self.steps,
            "input_tokens": totals.input_tokens,
            "output_tokens": totals.output_tokens,
            "tool_calls": self.tool_calls,
            "roles": {name: role.as_dict() for name, role in sorted(self.roles.items())},
        }
        if self.cost is not None:
            snapshot["cost_usd"] = float(round(self.cost, 6))
        if self.answered_by:
            snapshot["answered_by"] = dict(sorted(self.answered_by.items()))
        if totals.estimated:
            snapshot["tokens_estimated"] = True
        return snapshot


def _cost(response: ModelResponse) -> Decimal | None:
    """The response's price from PydanticAI's price data, when the model is known to it."""
    if not response.model_name or response.usage.unmeasured_requests:
        return None
    try:
        return Decimal(str(response.cost().total_price))
    except Exception:  # no price for this model or provider (local models, the offline minds)
        return None


class BudgetGate(AbstractCapability):
    """The run's budget on one agent run of a role: every model request takes a step (and
    reserves its tokens) before it is sent and settles its usage after. A capability rather than
    a model wrapper, so it holds whatever model plays the role (a test's FunctionModel too)."""

    def __init__(self, budget: RunBudget, role: str) -> None:
        self.budget = budget
        self.role = role

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        reserved = _estimate(request_context.messages)
        self.budget.take_step(reserve_tokens=reserved)
        response = None
        try:
            response = await handler(request_context)
            return response
        finally:
            self.budget.settle(role=self.role, response=response, reserved=reserved)


def _estimate(messages: list[ModelMessage]) -> int:
    characters = 0
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", None) or getattr(part, "args", None) or ""
            characters += len(content) if isinstance(content, str) else len(str(content))
    return characters // CHARS_PER_TOKEN + OUTPUT_TOKENS_RESERVED
