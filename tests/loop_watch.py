"""A fixture that fails a test whose code holds the event loop: `loop_watch`.

While a call's code runs on the loop, nothing else that shares it moves: an
MCP server's or a daemon's other calls, the deadline's timer, a cancelled
client's cancellation. The fixture runs a heartbeat on the test's loop, a
task that sleeps STEP_S at a time; a heartbeat that wakes more than HELD_S
late saw the loop held that long. The test fails at its end if one did.

A heartbeat rather than asyncio's debug mode (which times each callback):
debug mode records a stack for every callback and future, which on a busy
machine made an ordinary step of Playwright's take seconds, and the test
measure itself.

Import it into a test module (`from loop_watch import loop_watch`) and name
it in a test: applied where the loop is at stake (the offline model's
answers, MCP calls), not suite-wide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest_asyncio

# A loop held this long is a call held: callbacks take milliseconds. Generous, because a
# busy 2-core machine (the suite runs on 6 workers) can leave the loop's thread unscheduled
# for a second; what this catches holds it for many.
HELD_S = 2.0
STEP_S = 0.05


class LoopWatch:
    """How late the heartbeat woke, each time it was later than HELD_S (seconds)."""

    def __init__(self) -> None:
        self.held: list[float] = []

    async def beat(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asleep = loop.time()
            await asyncio.sleep(STEP_S)
            if (late := loop.time() - asleep - STEP_S) > HELD_S:
                self.held.append(late)


@pytest_asyncio.fixture(loop_scope="session")
async def loop_watch() -> AsyncIterator[LoopWatch]:
    watch = LoopWatch()
    heartbeat = asyncio.create_task(watch.beat())
    await asyncio.sleep(0)  # beating before the test's code runs
    try:
        yield watch
    finally:
        heartbeat.cancel()
        await asyncio.gather(heartbeat, return_exceptions=True)
    held = ", ".join(f"{s:.1f} s" for s in watch.held)
    assert not watch.held, f"the event loop was held longer than {HELD_S:g} s: {held}"
