"""`TabSlots`: how many tabs the calls of one server may have open at once.

A call takes its slots all at once and in turn (first come, first served), so
two calls can never each hold part of what both need; a call naming more tabs
than the bound takes all of it (it waits until no other call has tabs open),
rather than never. The browser hands a slot to each page it makes for the call
and takes it back when that page has closed (`PlaywrightBrowser.open_tabs`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

# Told, while a call waits, how many open tabs must close before its turn.
Waiting = Callable[[int], Awaitable[None]]


class TabSlots:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a bound on tabs is at least 1")
        self.limit = limit
        self.used = 0
        self._queue: deque[tuple[object, int]] = deque()  # waiting calls, in turn: (its token, slots wanted)
        self._changed = asyncio.Event()

    async def take(self, wanted: int, waiting: Waiting | None = None) -> int:
        """Wait for this call's turn and take min(`wanted`, limit) slots: how
        many were taken. `waiting` is told how many tabs must close first,
        when the call has to wait and whenever that number changes.
        Cancelled while waiting, it takes nothing."""
        n = min(wanted, self.limit)
        if n <= 0:
            return 0
        entry = (object(), n)
        self._queue.append(entry)
        told: int | None = None
        try:
            while True:
                if self._queue[0] is entry and self.used + n <= self.limit:
                    self.used += n
                    return n
                short = self._short_of(entry)
                if waiting is not None and short != told:
                    told = short
                    await waiting(short)
                    continue  # slots may have freed meanwhile
                changed = self._changed
                await changed.wait()
        finally:
            self._queue.remove(entry)
            self._wake()  # the next in turn may go now

    def give(self, n: int = 1) -> None:
        """Give back `n` slots (a page closed, or slots a call took and did not use)."""
        if n:
            self.used -= n
            self._wake()

    def _short_of(self, entry: tuple[object, int]) -> int:
        """How many open tabs must close before `entry` can take its slots: those
        the calls ahead of it want too."""
        ahead = 0
        for queued in self._queue:
            ahead += queued[1]
            if queued is entry:
                break
        return max(1, self.used + ahead - self.limit)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
