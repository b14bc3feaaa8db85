"""Tests of research.engine.budget: the run-wide budget and its gate on agent runs."""

import asyncio
import itertools
from decimal import Decimal

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from research.engine.budget import BudgetExhausted, BudgetGate, RunBudget


def _budget(**limits) -> RunBudget:
    return RunBudget(**{"max_steps": 10, "max_tool_calls": 10, "token_limit": 1_000, **limits})


def _response(input_tokens: int, output_tokens: int) -> ModelResponse:
    return ModelResponse(parts=[], usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens))


def test_steps_are_counted_up_to_the_limit_then_refused():
    # given
    budget = _budget(max_steps=3)

    # when three steps are taken and a fourth is asked for
    for _ in range(3):
        budget.take_step()
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_step()

    # then
    assert refused.value.budget == "steps"
    assert str(refused.value).startswith("the run's 3 model requests are spent. ")
    assert budget.steps == 3
    assert budget.steps_left() == 0
    assert budget.exhausted == "steps"


def test_the_first_budget_exhausted_is_the_one_kept():
    # given a budget whose steps ran out
    budget = _budget(max_steps=0, max_tool_calls=0)
    with pytest.raises(BudgetExhausted):
        budget.take_step()

    # when the tool calls run out too
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_tool_calls()

    # then
    assert refused.value.budget == "tool_calls"
    assert budget.exhausted == "steps"


def test_a_tool_call_batch_passing_the_limit_is_refused_and_not_counted():
    # given a budget of 5 tool calls of which 2 are taken
    budget = _budget(max_tool_calls=5)
    budget.take_tool_calls(2)

    # when 4 more are asked for, then 3
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_tool_calls(4)
    counted_after_refusal = budget.tool_calls
    budget.take_tool_calls(3)

    # then
    assert refused.value.budget == "tool_calls"
    assert str(refused.value).startswith("the run's 5 tool calls are spent. ")
    assert counted_after_refusal == 2
    assert budget.tool_calls == 5
    assert budget.tool_calls_left() == 0
    assert budget.exhausted == "tool_calls"


def test_a_step_is_refused_when_its_reservation_would_pass_the_token_limit():
    # given a limit of 100 tokens and a request in flight reserving 60
    budget = _budget(token_limit=100)
    budget.take_step(reserve_tokens=60)

    # when a request reserving 41 asks, then one reserving 40
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_step(reserve_tokens=41)
    budget.take_step(reserve_tokens=40)

    # then the first is refused uncounted, the second fills the limit exactly
    assert refused.value.budget == "tokens"
    assert str(refused.value).startswith("the run's 100 tokens are spent. ")
    assert budget.exhausted == "tokens"
    assert budget.steps == 2
    assert budget.reserved_tokens == 100


def test_settle_replaces_the_reservation_with_the_responses_usage():
    # given two requests in flight, reserving 60 and 40 of 100 tokens
    budget = _budget(token_limit=100)
    budget.take_step(reserve_tokens=60)
    budget.take_step(reserve_tokens=40)

    # when the first is answered having used 30 + 5 tokens
    budget.settle(role="researcher", response=_response(30, 5), reserved=60)

    # then 35 are spent and 40 still reserved: a request may reserve 25 more, not 26
    assert budget.tokens == 35
    assert budget.reserved_tokens == 40
    with pytest.raises(BudgetExhausted):
        budget.take_step(reserve_tokens=26)
    budget.take_step(reserve_tokens=25)
    assert budget.steps == 3


def test_settle_accumulates_usage_per_role():
    # given
    budget = _budget()
    for _ in range(4):
        budget.take_step(reserve_tokens=10)

    # when three responses and one failed request (no response) settle
    budget.settle(role="researcher", response=_response(100, 20), reserved=10)
    budget.settle(role="researcher", response=_response(50, 7), reserved=10)
    budget.settle(role="writer", response=_response(200, 80), reserved=10)
    budget.settle(role="writer", response=None, reserved=10)

    # then
    assert budget.reserved_tokens == 0
    assert budget.tokens == 457
    assert budget.roles["researcher"].requests == 2
    assert budget.roles["researcher"].input_tokens == 150
    assert budget.roles["researcher"].output_tokens == 27
    assert budget.roles["writer"].requests == 2
    assert budget.roles["writer"].input_tokens == 200
    assert budget.roles["writer"].output_tokens == 80
    assert budget.cost is None


def test_usage_snapshot():
    # given
    budget = _budget()
    for _ in range(3):
        budget.take_step(reserve_tokens=10)
    budget.take_tool_calls(4)
    budget.settle(role="writer", response=_response(200, 80), reserved=10)
    budget.settle(role="researcher", response=_response(100, 20), reserved=10)

    # when
    usage = budget.usage()

    # then requests counts the steps taken (one still in flight), roles the requests settled
    assert usage == {
        "requests": 3,
        "input_tokens": 300,
        "output_tokens": 100,
        "tool_calls": 4,
        "roles": {
            "researcher": {"requests": 1, "input_tokens": 100, "output_tokens": 20},
            "writer": {"requests": 1, "input_tokens": 200, "output_tokens": 80},
        },
    }
    assert list(usage["roles"]) == ["researcher", "writer"]


def test_a_resumed_budget_continues_counting_from_the_earlier_usage():
    # given the usage of an earlier attempt: 3 requests, 4 tool calls, 400 tokens
    earlier_budget = _budget()
    for _ in range(3):
        earlier_budget.take_step()
    earlier_budget.take_tool_calls(4)
    earlier_budget.settle(role="writer", response=_response(200, 80), reserved=0)
    earlier_budget.settle(role="researcher", response=_response(100, 20), reserved=0)
    earlier_budget.settle(role="researcher", response=None, reserved=0)
    earlier = earlier_budget.usage()

    # when the run resumes with room for 5 requests, 6 tool calls and 450 tokens
    budget = RunBudget.resumed(
        max_steps=5, max_tool_calls=6, token_limit=450, cost_limit=None, earlier=earlier
    )

    # then it starts where the earlier attempt stopped
    assert budget.usage() == earlier
    assert (budget.steps, budget.tool_calls, budget.tokens) == (3, 4, 400)
    assert budget.steps_left() == 2
    assert budget.tool_calls_left() == 2
    # and 50 tokens are left for a reservation
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_step(reserve_tokens=51)
    assert refused.value.budget == "tokens"
    budget.take_step(reserve_tokens=50)
    budget.settle(role="researcher", response=_response(30, 10), reserved=50)
    budget.take_step()
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_step()
    assert refused.value.budget == "steps"
    assert budget.usage() == {
        "requests": 5,
        "input_tokens": 330,
        "output_tokens": 110,
        "tool_calls": 4,
        "roles": {
            "researcher": {"requests": 3, "input_tokens": 130, "output_tokens": 30},
            "writer": {"requests": 1, "input_tokens": 200, "output_tokens": 80},
        },
    }


def test_a_resumed_budget_counts_the_earlier_cost_against_the_cost_limit():
    # given an earlier attempt that spent $0.25
    earlier = {
        "requests": 1,
        "input_tokens": 10,
        "output_tokens": 5,
        "tool_calls": 0,
        "roles": {"writer": {"requests": 1, "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25}},
        "cost_usd": 0.25,
    }

    # when it resumes with a cost limit of $0.25
    budget = RunBudget.resumed(
        max_steps=10, max_tool_calls=10, token_limit=1_000, cost_limit=Decimal("0.25"), earlier=earlier
    )
    with pytest.raises(BudgetExhausted) as refused:
        budget.take_step()

    # then
    assert refused.value.budget == "cost"
    assert budget.cost == Decimal("0.25")
    assert budget.roles["writer"].cost == Decimal("0.25")
    assert budget.usage() == earlier


def _endless_agent(requests: list[int], index: int) -> Agent:
    """An agent whose model always calls a tool, and whose tool and model both yield to the event
    loop, so agents run side by side interleave and none ever stops on its own. Its model counts
    the requests it answers in requests[index]."""
    call_ids = itertools.count()

    async def model(messages, info: AgentInfo) -> ModelResponse:
        requests[index] += 1
        await asyncio.sleep(0)
        return ModelResponse(
            parts=[ToolCallPart("wait", {}, tool_call_id=f"call-{next(call_ids)}")],
            usage=RequestUsage(input_tokens=3, output_tokens=2),
        )

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    async def wait() -> str:
        await asyncio.sleep(0)
        return "waited"

    return agent


def test_parallel_agents_under_one_gate_never_take_more_steps_than_the_budget():
    # given five endless agents sharing a budget of 17 model requests
    budget = RunBudget(max_steps=17, max_tool_calls=1_000, token_limit=10_000_000)
    requests = [0] * 5
    agents = [_endless_agent(requests, i) for i in range(5)]

    async def run_all() -> list:
        return await asyncio.gather(
            *(
                agent.run(
                    "x",
                    capabilities=[BudgetGate(budget, "researcher")],
                    usage_limits=UsageLimits(request_limit=None),
                )
                for agent in agents
            ),
            return_exceptions=True,
        )

    # when they run concurrently
    outcomes = asyncio.run(run_all())

    # then exactly 17 requests were made, shared among the agents in turn, all settled, and every
    # agent was stopped by the budget
    assert sum(requests) == 17
    assert sorted(requests, reverse=True) == [4, 4, 3, 3, 3]
    assert budget.steps == 17
    assert budget.reserved_tokens == 0
    assert [type(o) for o in outcomes] == [BudgetExhausted] * 5
    assert [o.budget for o in outcomes] == ["steps"] * 5
    assert budget.exhausted == "steps"
    assert budget.roles["researcher"].requests == 17
    assert budget.usage()["requests"] == 17
    assert budget.tokens == 17 * 5


def test_the_models_that_answered_are_counted_and_kept_across_a_resume():
    # given an attempt whose requests two models of a chain answered, and the offline minds one
    earlier_budget = _budget()
    for name in ["first", "second", "second", "deepcite-offline-writer"]:
        response = ModelResponse(
            parts=[], model_name=name, usage=RequestUsage(input_tokens=1, output_tokens=1)
        )
        earlier_budget.settle(role="researcher", response=response, reserved=0)
    earlier = earlier_budget.usage()
    assert earlier["answered_by"] == {"first": 1, "second": 2}

    # when the run resumes and the second answers once more
    budget = RunBudget.resumed(
        max_steps=5, max_tool_calls=6, token_limit=450, cost_limit=None, earlier=earlier
    )
    again = ModelResponse(parts=[], model_name="second", usage=RequestUsage(input_tokens=1, output_tokens=1))
    budget.settle(role="researcher", response=again, reserved=0)

    # then the count carries on from the earlier attempt's
    assert budget.usage()["answered_by"] == {"first": 1, "second": 3}
