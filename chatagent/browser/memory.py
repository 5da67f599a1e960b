"""`TabMemory`: a bound on the memory a launched browser's pages hold across
the open tabs of every call (`chatagent mcp`, the daemon), not only on their
number (`max_tabs`).

What is measured is the proportional set size (PSS: shared pages split
between their sharers) of the browser's renderer processes on this machine.
Measured, because no figure known before a load predicts it: a 3 MB page's
renderer holds ~100 MB PSS (205 MB RSS) while its JS heap is under 1 MB
(`Performance.getMetrics`), and a page's own script or a flood of text can
make it hold 50-100 times the bytes it loaded. Only a browser chatagent
launched can be measured so: a user's Chrome over CDP, or a browser server's
on another machine, is bounded by `max_tabs` alone.

A page about to load waits until the renderers hold, with a reserve for each
page still loading (its memory is not there yet), less than the bound; a page
that has waited its load timeout is not opened, and its tab says why. And
while a page still receives a response, the renderers are measured every
WATCH_STEP_S: past the bound, the page receiving the most is closed (its tab
says why). A renderer fed a fast stream holds 50-100 times the bytes it has
parsed, and the count of those bytes (`max_response_mb`) reaches us only about
once a second, from the busy renderer itself: this bound does not wait for it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from ..errors import TabError

RENDERER_FLAG = "--type=renderer"
# What a page still loading is counted for until its memory shows in the measure: about
# what a large ordinary page (3 MB of HTML) holds once loaded.
LOADING_RESERVE_MB = 100.0
WAIT_STEP_S = 0.5  # while waiting, memory is measured again this often (tabs close, renderers exit)
# While a page receives a stream, memory is measured this often, afresh: a fast machine's flood
# grows its renderer by 300 MB a second and more.
WATCH_STEP_S = 0.1
# A measure this recent is used again (a call opening 20 tabs measures once): the pages admitted
# since are counted by their reserves.
FRESH_S = 0.25


def renderers_mb(root: int) -> float | None:
    """PSS, in MB, of the renderer processes under process `root` (Linux /proc);
    None where /proc cannot say."""
    proc = Path("/proc")
    if not (proc / str(root) / "task").is_dir():
        return None
    total_kb, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for task in (proc / str(pid) / "task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
            if RENDERER_FLAG in (proc / str(pid) / "cmdline").read_bytes().decode("utf-8", "replace"):
                for line in (proc / str(pid) / "smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total_kb += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue  # exited meanwhile
    return total_kb / 1024


class Receiving(Protocol):
    """A page's responses as they arrive (`playwright._ResponseSizes`)."""

    @property
    def receiving(self) -> int: ...  # bytes of its responses still arriving; 0: none is

    def trip_memory(self, budget_mb: float) -> None: ...  # close the page, saying why


class TabMemoryFull(TabError):
    """A page not opened: the open tabs' pages hold the bound."""


class TabMemory:
    """At most `budget_mb` of renderer memory (`measure`) across a browser's open
    tabs; `measure` answers None where it cannot tell (then nothing waits)."""

    def __init__(self, budget_mb: float, measure: Callable[[], float | None] | None = None) -> None:
        self.budget_mb = budget_mb
        self._measure = measure or (lambda: renderers_mb(os.getpid()))
        self._loading = 0  # pages admitted and still loading
        self._turn = asyncio.Lock()  # one admission at a time: each sees the reserves before it
        self._measured = (-FRESH_S, 0.0)  # (when, MB) of the last measure
        self._pages: set[Receiving] = set()  # the open pages' responses, watched while one arrives
        self._watching: asyncio.Task[None] | None = None

    def watch(self, page: Receiving) -> None:
        """Watch an open page's responses until `forget`: past the bound while
        one arrives, the page receiving the most is closed."""
        self._pages.add(page)
        if self._watching is None or self._watching.done():
            self._watching = asyncio.ensure_future(self._watch())

    def forget(self, page: Receiving) -> None:
        self._pages.discard(page)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pages:
            await asyncio.sleep(WATCH_STEP_S)
            busy = [p for p in self._pages if p.receiving]
            if not busy:
                continue
            used = await self._used(loop.time(), fresh=True)
            if used is not None and used > self.budget_mb:
                biggest = max(busy, key=lambda p: p.receiving)
                self.forget(biggest)
                biggest.trip_memory(self.budget_mb)

    @asynccontextmanager
    async def loading(self, url: str, within_s: float) -> AsyncIterator[None]:
        """Admit a page to load (its reserve held while in the block), once the
        memory allows, waiting `within_s` at most: then `TabMemoryFull`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        async with self._turn:
            while True:
                used = await self._used(loop.time())
                if used is None or used + (self._loading + 1) * LOADING_RESERVE_MB <= self.budget_mb \
                        or (self._loading == 0 and used < LOADING_RESERVE_MB):
                    break
                if loop.time() >= deadline:
                    raise TabMemoryFull(
                        f"{url} was not opened: the pages of the tabs open now hold {used:,.0f} MB, and "
                        f"max_tabs_mb is {self.budget_mb:,g} MB (it waited {within_s:g} s for tabs to close). "
                        "Ask again when other calls are done, or raise max_tabs_mb."
                    )
                await asyncio.sleep(WAIT_STEP_S)
            self._loading += 1
        try:
            yield
        finally:
            self._loading -= 1

    async def _used(self, now: float, *, fresh: bool = False) -> float | None:
        when, used = self._measured
        if now - when < FRESH_S and not fresh:
            return used
        measured = await asyncio.to_thread(self._measure)  # /proc reads: off the event loop
        if measured is not None:
            self._measured = (now, measured)
        return measured
