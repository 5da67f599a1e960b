"""A question's deadline, kept by chatagent's own timer whatever the libraries
under it do with a cancellation.

The question runs in a task of its own; its events are waited for with a timer
(`ChatAgent.ask`). When the timer fires, the task is cancelled (`stop`), and
cancelled again while it runs on: Python 3.11's `asyncio.wait_for` (which
langchain-openai wraps each chunk's read in) loses a cancellation that arrives
as the read completes, which a server flooding chunks makes likely. A task
still running `CANCEL_GRACE_S` later is abandoned: the model connections it
opened (`Connections`, registered by `models.http_bounds` for the question
whose task opened them) are closed, which ends a read it is blocked in, and
the deadline's error goes out without waiting for it."""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from contextvars import ContextVar
from typing import Any, Protocol

from .limits import CANCEL_GRACE_S

log = logging.getLogger(__name__)

RECANCEL_S = 0.05  # how often a task that runs on after its cancellation is cancelled again


class Closable(Protocol):
    async def aclose(self) -> None: ...


class Connections:
    """The response streams one question's model calls have open, so that they can be
    closed from outside its task (a connection closed under a blocked read ends it)."""

    def __init__(self) -> None:
        self._open: set[Closable] = set()

    def add(self, stream: Closable) -> None:
        self._open.add(stream)

    def discard(self, stream: Closable) -> None:
        self._open.discard(stream)

    def __len__(self) -> int:
        return len(self._open)

    async def close_all(self) -> None:
        for stream in list(self._open):
            with suppress(Exception):  # a broken stream may fail to close too; it is gone either way
                await stream.aclose()
        self._open.clear()


# The connections of the question whose task is running: each question's task sets its own.
QUESTION_CONNECTIONS: ContextVar[Connections | None] = ContextVar("chatagent_question_connections", default=None)


async def stop(task: "asyncio.Task[Any]", grace_s: float = CANCEL_GRACE_S) -> bool:
    """Cancel `task`, and again every RECANCEL_S while it runs on, for up to `grace_s`;
    whether it ended."""
    loop = asyncio.get_running_loop()
    end = loop.time() + grace_s
    while not task.done():
        left = end - loop.time()
        if left <= 0:
            log.warning("a question past its deadline did not stop within %.1f s of its cancellation: "
                        "its model connections are closed and it is left to end on its own", grace_s)
            return False
        task.cancel()
        await asyncio.wait({task}, timeout=min(RECANCEL_S, left))
    return True
