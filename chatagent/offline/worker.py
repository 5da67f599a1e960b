"""Worker processes for the offline model's reading, so that no question holds another.

The offline model is pure Python: on the event loop, or on a thread (it holds
the GIL), a question of ten parts over ten tabs held every other call of an
MCP server or a daemon for as long as it read (17.6 s for a one-page call
that takes 0.32 s). A thread cannot be stopped either, so a cancelled
question, or one past its deadline, would read on. So each reading runs in a
process of its own, taken from a few kept warm: when its caller is cancelled
(the question's deadline, a client gone) or the reading passes its time
limit, the process is killed and another starts for the next question.

Workers come from multiprocessing's fork server (the extraction workers'
one, when it runs: it has the text pipeline imported), never forked from a
process with Playwright's threads in it.
"""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from ..owner_watch import exit_with

T = TypeVar("T")

# Readings at once: more wait for one to end. Each worker holds ~50 MB before it reads; on a few
# cores, more at once would only share them.
MAX_READERS = 4
KEEP_IDLE = 2  # workers kept warm between questions
START_TIMEOUT_S = 60.0  # a worker's start and imports, on a machine however busy


class ReadingTimeout(Exception):
    """A reading passed its time limit and was stopped."""


class ReaderGone(Exception):
    """The worker ended without answering (killed from outside, out of memory)."""


class Readers:
    """Up to MAX_READERS worker processes that run one call each at a time (`run`).
    A call whose caller is cancelled, or that passes `timeout_s`, has its process killed."""

    def __init__(self, most: int = MAX_READERS, preload: Sequence[str] = ()) -> None:
        """`preload`: the modules the calls need, imported once by the fork server if
        this starts it (the extraction workers' preload serves as well)."""
        self._preload = list(preload)
        self._idle: list[_Worker] = []
        self._turns = asyncio.Semaphore(most)
        # Each call waits for its worker's answer on a thread of its own (a blocking
        # receive, which the worker's death ends); never the loop's shared pool.
        self._threads = ThreadPoolExecutor(most, thread_name_prefix="offline-reader")

    async def warm(self, load: Callable[[], object] | None = None) -> None:
        """Start one worker now, and run `load` in it (what the calls need imported),
        so the first call finds it ready."""
        if not self._idle:
            await self.run(load or _nothing)

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """`fn(*args)` in a worker (both picklable), its result or its exception.
        Raises `ReadingTimeout` after `timeout_s`, `ReaderGone` if the worker dies."""
        async with self._turns:
            worker = self._idle.pop() if self._idle else await self._start()
            loop = asyncio.get_running_loop()
            call = loop.run_in_executor(self._threads, worker.call, fn, args)
            try:
                async with asyncio.timeout(timeout_s):
                    ok, value = await call
            except TimeoutError:
                worker.kill()
                raise ReadingTimeout(f"the reading took longer than {timeout_s:g} s") from None
            except BaseException:  # cancelled (a deadline, a client gone): the reading stops with it
                worker.kill()
                raise
            if not worker.alive:  # it died as it answered (out of memory): its answer, if any, stands
                worker.kill()
            elif len(self._idle) < KEEP_IDLE:
                self._idle.append(worker)
            else:
                worker.kill()
        if ok:
            return value
        raise value

    async def _start(self) -> _Worker:
        return await asyncio.to_thread(_Worker.start, self._preload)  # the fork server is asked over a socket: blocking

    def close(self) -> None:
        for worker in self._idle:
            worker.kill()
        self._idle.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)


class _Worker:
    def __init__(self, process: multiprocessing.process.BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    @classmethod
    def start(cls, preload: list[str]) -> "_Worker":
        ctx = multiprocessing.get_context("forkserver")
        if preload:  # for the fork server's start; one already running keeps what it has
            ctx.set_forkserver_preload(preload)
        ours, theirs = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(theirs, os.getpid()), name="chatagent-offline-reader", daemon=True)
        process.start()
        theirs.close()
        worker = cls(process, ours)
        # What the calls need, imported before any call's time counts: a fork server that the
        # extraction workers started has not preloaded it, and on a busy machine it takes seconds.
        try:
            ours.send((_imports, (preload,)))
            ready = ours.poll(START_TIMEOUT_S) and ours.recv()[0]
        except (EOFError, OSError):  # it died starting
            ready = False
        if not ready:
            worker.kill()
            raise ReaderGone("the offline model's worker process did not start")
        return worker

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
        try:
            self.conn.send((fn, args))
            return self.conn.recv()
        except (EOFError, OSError) as exc:  # killed while it read: its caller has gone already
            return False, ReaderGone(f"the offline model's worker process ended ({type(exc).__name__})")

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()  # its pipe then ends, which ends the wait of the thread receiving from it
        # Reaped off the caller's path: joining a just-killed process is quick, but blocking.
        threading.Thread(target=self._reap, name="offline-reader-reap", daemon=True).start()

    def _reap(self) -> None:
        self.process.join()
        self.conn.close()


def _nothing() -> None:
    pass


def _imports(modules: list[str]) -> None:
    for name in modules:
        importlib.import_module(name)


def _serve(conn: Connection, owner: int) -> None:
    """A worker's life: calls in, results out, until its owner closes the pipe or dies."""
    # Ctrl-C in `chatagent chat` stops one answer; the owner stops its workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with(owner)
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - the caller gets it, raised there
            result = (False, exc)
        try:
            conn.send(result)
        except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its words do
            conn.send((False, RuntimeError(f"{type(result[1]).__name__}: {result[1]} ({exc})")))

