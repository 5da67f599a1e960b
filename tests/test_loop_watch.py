"""The loop watch (`loop_watch.py`) sees a loop held, and only then."""

from __future__ import annotations

import asyncio
import time

import pytest

from loop_watch import HELD_S, LoopWatch

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_loop_held_past_the_bound_is_seen_and_one_that_moves_is_not() -> None:
    watch = LoopWatch()
    heartbeat = asyncio.create_task(watch.beat())
    try:
        await asyncio.sleep(0.3)  # awaiting: the loop moves
        assert watch.held == []
        time.sleep(HELD_S + 0.5)  # a blocking call on the loop
        await asyncio.sleep(0.2)  # the heartbeat wakes, late
    finally:
        heartbeat.cancel()
        await asyncio.gather(heartbeat, return_exceptions=True)
    assert len(watch.held) == 1 and watch.held[0] >= HELD_S, watch.held
