"""Scripted models for research tests: each step sees every tool result so far (by call id)
and returns the next tool calls, as a model would. Only the model is scripted; the agent,
tools, services and database are real."""

from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from research.engine.prompts import tool_returns

Step = Callable[[dict[str, Any]], list[ToolCallPart]]


def scripted(*steps: Step, after: Callable[[int], Any] | None = None) -> FunctionModel:
    """A model that plays `steps` in order; once they run out it repeats the last one."""

    async def model(messages, info: AgentInfo) -> ModelResponse:
        index = sum(1 for m in messages if isinstance(m, ModelResponse))
        if after is not None:
            await after(index)
        step = steps[min(index, len(steps) - 1)]
        return ModelResponse(parts=step(tool_returns(messages)))

    return FunctionModel(model)


def call(tool: str, call_id: str, **args) -> ToolCallPart:
    return ToolCallPart(tool, args, tool_call_id=call_id)


def first_result(returns: dict[str, Any], call_id: str) -> dict[str, Any]:
    return returns[call_id]["results"][0]
