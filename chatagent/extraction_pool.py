"""Worker processes that extract pages, each page within a time and a memory limit.

A page's HTML or PDF is untrusted, and what extraction's libraries (lxml,
trafilatura, the PDF reader) compute and hold for one is theirs to decide: a
small page can ask for minutes and gigabytes. Nothing in this process could
stop them, so every page is extracted in a worker process: its address space
is capped (`RLIMIT_AS`, so an allocation past it fails there, not here), and
its run is timed from here. A worker that passes either limit is killed and
replaced, so the next page gets a healthy one, and the caller gets an
`ExtractionLimit` saying which limit it passed.

trafilatura also holds the GIL, so the workers extract tabs in parallel as
well (10 cold tabs on 2 cores: 396 → 174 ms median). They come from a fork
server that has imported extraction once, so none pays for the imports again,
and none is forked from a process with Playwright's threads in it. Each warms
itself up before it takes a page.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import resource
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from .limits import DEFAULT_EXTRACT_MEMORY_MB, DEFAULT_EXTRACT_TIMEOUT_S
from .owner_watch import exit_with

if TYPE_CHECKING:
    from .browser.base import PageSnapshot
    from .extraction import Extracted

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0  # a worker not warm after this (a machine short of memory) is given up
# Each worker holds ~75 MB; a question rarely has more tabs than a few workers can share.
MAX_WORKERS = 4
_EXTRACTION = "chatagent.extraction"  # what the fork server imports once for every worker


class ExtractionLimit(Exception):
    """A page passed a worker's limit, or its extraction failed: `reason` says which, in a tab's note's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PoolBroken(Exception):
    """No worker can be had (they cannot start): the caller extracts elsewhere."""



def _verbosity() -> int | None:
    """How much this process logs, as a `-v` count, for its workers to log alike
    (trafilatura's lines, say, come from them); None: no logging set up here."""
    root = logging.getLogger()
    if not root.handlers:
        return None
    return 0 if root.level >= logging.WARNING else 1 if root.level >= logging.INFO else 2


def _serve(conn: Connection, owner: int, memory_bytes: int | None, verbosity: int | None = None) -> None:
    """A worker: extract each snapshot sent, reply ("ok", Extracted), ("memory", None) or ("error", why)."""
    if verbosity is not None:
        from .process import setup_logging

        setup_logging(verbosity)
    # Ctrl-C in `chatagent chat` stops one answer; it must not kill the workers,
    # which share the terminal's process group. The pool's owner stops them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # An owner killed outright (SIGKILL, a crash) never says goodbye, and a
    # worker waiting for pages would wait forever (the fork server with it).
    exit_with(owner)
    from .extraction import extract_snapshot, warm_extraction  # loaded already: the fork server's preload

    try:
        warm_extraction()
    except Exception as exc:  # noqa: BLE001 - a worker that cannot warm up can still extract
        log.debug("extraction warm-up failed: %s", exc)
    if memory_bytes:
        # After the warm-up, so the cap is what one page may add to a warm worker's ~170 MB.
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    conn.send("ready")
    while True:
        try:
            snapshot = conn.recv()
        except (EOFError, OSError):
            return  # the owner is gone
        if snapshot is None:
            return
        reply: tuple[str, Any]
        try:
            reply = ("ok", extract_snapshot(snapshot))
        except MemoryError:
            reply = ("memory", None)
        except Exception as exc:  # noqa: BLE001 - said to the owner, which goes on with the next page
            reply = ("error", f"{type(exc).__name__}: {exc}")
        del snapshot
        try:
            conn.send(reply)
        except MemoryError:  # the result itself is too big to send
            reply = ("memory", None)
            conn.send(reply)
        if reply[0] == "memory":
            os._exit(0)  # what a failed allocation left half-done is not worth keeping: replaced


class _Worker:
    """One worker process and its pipe. Its methods block: they run on the pool's I/O threads."""

    def __init__(self, ctx: Any, memory_mb: float | None) -> None:
        self.conn, child = ctx.Pipe()
        memory = int(memory_mb * 2**20) if memory_mb else None
        self.process = ctx.Process(target=_serve, args=(child, os.getpid(), memory, _verbosity()), name="chatagent-extract",
                                   daemon=True)
        self.process.start()
        child.close()
        # Killed from two threads at once when the pool closes while the worker warms up
        # (`shutdown`, and `wait_ready` seeing its pipe closed): the pipe is closed once.
        self._kill_lock = threading.Lock()

    def wait_ready(self) -> None:
        """Until it has warmed up; OSError if it cannot (or was killed meanwhile: the pool closed)."""
        try:
            ready = self.conn.poll(START_TIMEOUT_S) and self.conn.recv() == "ready"
        except (EOFError, OSError):  # it died warming up
            ready = False
        if not ready:
            self.kill()
            raise OSError("an extraction worker did not start")

    def roundtrip(self, snapshot: PageSnapshot) -> tuple[str, Any]:
        self.conn.send(snapshot)
        return self.conn.recv()

    def kill(self) -> None:
        with self._kill_lock:
            with suppress(OSError):  # gone already
                self.process.kill()
            self.process.join(5)
            self.conn.close()


class ExtractionPool:
    """`workers` extraction processes, each page given `timeout_s` seconds and its worker
    `memory_mb` MB of address space (None: no limit). The owner shuts the pool down."""

    def __init__(self, workers: int | None = None, *, timeout_s: float = DEFAULT_EXTRACT_TIMEOUT_S,
                 memory_mb: float | None = DEFAULT_EXTRACT_MEMORY_MB) -> None:
        self.workers = workers or min(os.cpu_count() or 1, MAX_WORKERS)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload([_EXTRACTION])
        # Blocking pipe work and process starts, off the event loop: a round trip and a replacement per worker.
        self._io = ThreadPoolExecutor(max_workers=2 * self.workers, thread_name_prefix="extraction-io")
        self._idle: asyncio.Queue[_Worker | None] | None = None  # None: no worker is left
        self._live: set[_Worker] = set()  # started, idle or busy
        self._dying: set[_Worker] = set()  # past a limit, being killed
        self._warming: set[_Worker] = set()  # started, not yet ready
        self._starting: asyncio.Future[None] | None = None
        self._replacing: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        """Start (and so warm) the workers now rather than on the first page. Once."""
        if self._starting is None:
            self._idle = asyncio.Queue()
            self._starting = asyncio.ensure_future(self._start_all())
        await asyncio.shield(self._starting)

    async def _start_all(self) -> None:
        started = await asyncio.gather(*(self._spawn() for _ in range(self.workers)), return_exceptions=True)
        for outcome in started:
            if isinstance(outcome, BaseException) and not self._closed:  # closing stops them on purpose
                log.warning("an extraction worker did not start: %s", outcome)
        if not self._live:
            raise PoolBroken("no extraction worker could start")

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        worker = await loop.run_in_executor(self._io, _Worker, self._ctx, self.memory_mb)
        # Warming up takes seconds: a pool closed meanwhile kills it rather than waiting (an exit would).
        self._warming.add(worker)
        try:
            await loop.run_in_executor(self._io, worker.wait_ready)
        except RuntimeError:  # the pool's threads shut down meanwhile: closed, which kills it
            worker.kill()
            return
        finally:
            self._warming.discard(worker)
        if self._closed:
            worker.kill()
            return
        self._live.add(worker)
        assert self._idle is not None
        self._idle.put_nowait(worker)

    def pids(self) -> list[int]:
        """The live workers' process ids."""
        return [w.process.pid for w in self._live if w.process.pid is not None]

    async def extract(self, snapshot: PageSnapshot) -> Extracted:
        """`snapshot` extracted in a worker; ExtractionLimit when it passes a limit (its worker
        replaced), PoolBroken when no worker can be had."""
        await self.start()
        assert self._idle is not None
        if not self._live and not self._replacing:
            raise PoolBroken("no extraction worker is running")
        while True:
            worker = await self._idle.get()
            if worker is None:  # the last worker could not be replaced: wake the next waiter too
                self._idle.put_nowait(None)
                raise PoolBroken("no extraction worker is running")
            if worker.process.is_alive():
                break
            self._replace(worker)  # killed while idle (the kernel's OOM killer): not this page's doing
        loop = asyncio.get_running_loop()
        try:
            kind, value = await asyncio.wait_for(loop.run_in_executor(self._io, worker.roundtrip, snapshot),
                                                 self.timeout_s)
        except asyncio.TimeoutError:
            self._replace(worker)
            raise ExtractionLimit(f"took longer than {self.timeout_s:g} s to read (the extract_timeout_s setting)")
        except (EOFError, OSError):
            self._replace(worker)  # it died: the kernel's OOM killer, or a crash past the memory cap
            raise ExtractionLimit(self._too_large()) from None
        except BaseException:
            self._replace(worker)  # cancelled mid-page: its reply would be the next caller's
            raise
        if kind == "memory":
            self._replace(worker)
            raise ExtractionLimit(self._too_large())
        self._idle.put_nowait(worker)
        if kind == "error":  # a parser's error on odd input: this page's, the worker is fine
            log.warning("extraction of %s failed: %s", snapshot.url, value)
            raise ExtractionLimit(f"could not be read ({value})")
        return value

    def _too_large(self) -> str:
        limit = f" (more than {self.memory_mb:g} MB, the extract_memory_mb setting)" if self.memory_mb else ""
        return f"is too large to read{limit}"

    def _replace(self, worker: _Worker) -> None:
        self._live.discard(worker)
        self._dying.add(worker)
        task = asyncio.ensure_future(self._replacement(worker))
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _replacement(self, worker: _Worker) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._io, worker.kill)
        except RuntimeError:  # shut down meanwhile, which kills it
            return
        finally:
            self._dying.discard(worker)
        if self._closed:
            return
        try:
            await self._spawn()
        except Exception as exc:  # noqa: BLE001 - one worker fewer; with none, the caller extracts elsewhere
            log.warning("an extraction worker could not be replaced: %s", exc)
            if not self._live and self._idle is not None and len(self._replacing) <= 1:
                self._idle.put_nowait(None)  # every waiter is told (`extract`)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop every worker (blocking: call it from a thread in async code). Pages being
        extracted get no reply; nothing in a worker is worth waiting for."""
        del cancel_futures  # the signature of `Executor.shutdown`, which callers use
        self._closed = True
        for worker in [*self._live, *self._dying, *self._warming]:
            worker.kill()
        self._live.clear()
        self._io.shutdown(wait=wait, cancel_futures=True)
