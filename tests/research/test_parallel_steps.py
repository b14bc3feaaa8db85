"""The parallel work of a step (researchers, judges) lives and dies with the run: when the step is
cut short (the time limit, a cancel), every task it started is cancelled with it, so none goes on
making model requests on the worker's long-lived run loop after the run has ended."""

import asyncio

import pytest

from research.engine.orchestrator import _all


def test_parallel_work_cut_short_is_cancelled_with_the_step():
    async def main():
        cancelled = []

        async def stuck(name):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(name)
                raise

        step = asyncio.ensure_future(_all([stuck("first"), stuck("second")]))
        await asyncio.sleep(0.05)
        step.cancel()
        with pytest.raises(asyncio.CancelledError):
            await step
        return list(cancelled)  # as it stood when the step ended, before the loop closes

    assert sorted(asyncio.run(main())) == ["first", "second"]


def test_the_first_failure_cancels_the_rest_and_is_raised():
    async def main():
        cancelled = []

        async def fails():
            raise LookupError("budget")

        async def stuck():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append("stuck")
                raise

        with pytest.raises(LookupError):
            await _all([stuck(), fails()])
        return list(cancelled)

    assert asyncio.run(main()) == ["stuck"]
