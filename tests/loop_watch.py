"""A fixture that fails a test whose code holds the event loop: `loop_watch`.

While a call's code runs on the loop, nothing else that shares it moves: an
MCP server's or a daemon's other calls, the deadline's timer, a cancelled
client's cancellation. asyncio's debug mode times every callback and reports
each that ran longer than `slow_callback_duration` (its "Executing … took
N seconds" warning); the fixture turns it on for the test, records those
reports, and fails the test at its end if there was one.

Import it into a test module (`from loop_watch import loop_watch`) and name
it in a test: applied where the loop is at stake (the offline model's
answers, MCP calls), not suite-wide.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator

import pytest_asyncio

# A loop held this long is a call held: callbacks take milliseconds. Generous, because a
# busy 2-core machine (the suite runs on 6 workers) can leave the loop's thread unscheduled
# for a second; what this catches holds it for many.
HELD_S = 2.0
_SLOW = re.compile(r"^Executing (?P<what>.*) took (?P<s>[\d.]+) seconds$", re.S)


class LoopWatch(logging.Handler):
    """The loop's slow-callback reports, as (what ran, seconds)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.held: list[tuple[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if m := _SLOW.match(record.getMessage()):
            self.held.append((m["what"][:300], float(m["s"])))


@pytest_asyncio.fixture(loop_scope="session")
async def loop_watch() -> AsyncIterator[LoopWatch]:
    loop = asyncio.get_running_loop()
    debug, bound = loop.get_debug(), loop.slow_callback_duration
    logger = logging.getLogger("asyncio")
    watch = LoopWatch()
    logger.addHandler(watch)
    loop.set_debug(True)
    loop.slow_callback_duration = HELD_S
    try:
        yield watch
    finally:
        loop.set_debug(debug)
        loop.slow_callback_duration = bound
        logger.removeHandler(watch)
    held = "\n".join(f"  {s:.1f} s: {what}" for what, s in watch.held)
    assert not watch.held, f"the event loop was held longer than {HELD_S:g} s:\n{held}"
