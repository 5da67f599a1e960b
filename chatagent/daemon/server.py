"""The daemon: one warm `Runtime` serving asks on a Unix socket (`chatagent daemon run`).

The browser is launched, the extraction workers started and the default
model's client made once, at start. Each ask gets a browser context of its
own in that browser (`_AskBrowser`): its tabs, cookies, storage and the local
files it names end with it, as they would in a process of its own. What asks
share is what is keyed by content: extractions, token counts and page
analyses. There is no answer cache for asks (see `protocol.NOT_FOR_ASK`).

It stops after `daemon_idle` seconds without an ask, on `chatagent daemon
stop` or SIGTERM/SIGINT, and when its socket is removed or replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import redirect_stderr, redirect_stdout, suppress
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError, Page

from ..agent import ChatAgent
from ..browser import Tab, TabFailure
from ..browser.playwright import VIEWPORT, PlaywrightBrowser
from ..browser.targets import normalize_target
from ..errors import ChatAgentError, TabError
from ..events import ErrorEvent, Event
from ..runtime import Runtime
from ..scrub import EventStream
from ..settings import Settings
from .paths import BUILD, DaemonError, DaemonPaths, peer, settings_inputs, take_lock
from .protocol import (
    MAX_REQUEST_BYTES, Answering, AskNeeded, AskRequest, Failed, OpenRequest, Opened, ProtocolError, Refused, Status, StatusRequest,
    Stopping, StopRequest, parse_request, read_frame, refuse_cdp, shared_settings,
)

log = logging.getLogger(__name__)

Send = Callable[[Event | Failed | Opened], Awaitable[None]]
UNASKED = "closed the pages opened ahead for a connection that did not ask for them"
ASK_AFTER_OPEN_S = 30.0  # an ask's head start, then its settings loaded: far less, even on a busy machine


class _AskBrowser(PlaywrightBrowser):
    """One ask's own context in the daemon's browser, with its own server for
    the local files the ask names: a page of one ask can reach neither another
    ask's cookies nor another ask's files."""

    _spare_page: Page | None = None

    @classmethod
    async def within(cls, browser: PlaywrightBrowser) -> "_AskBrowser":
        """A new context with a blank page open in it, made ahead of the ask:
        a context's first page costs ~300 ms more than its next ones, and any
        page ~100 ms. The ask's first tab opens in that page."""
        launched = browser.context.browser
        if launched is None:
            raise DaemonError("The daemon's browser cannot open contexts of its own.")
        context = await launched.new_context(viewport=VIEWPORT, accept_downloads=False)
        try:
            page = await context.new_page()
        except PlaywrightError:
            await context.close()
            raise
        made = cls(browser._pw, launched, context, owned=False,  # noqa: SLF001 - the same driver and bounds
                   max_response_mb=browser._max_response_mb)  # noqa: SLF001
        made._spare_page = page
        return made

    async def _new_page(self) -> Page:
        page, self._spare_page = self._spare_page, None
        return page if page is not None and not page.is_closed() else await super()._new_page()

    async def close(self) -> None:
        """The context and its file server; the browser and its driver stay."""
        try:
            await self.context.close()
        except PlaywrightError:
            pass
        finally:
            self._files.close()


class Daemon:
    def __init__(self, runtime: Runtime, paths: DaemonPaths) -> None:
        self.runtime = runtime
        self.paths = paths
        self.settings = runtime.settings
        self.shared = shared_settings(runtime.settings)
        self.inputs = settings_inputs(os.environ, os.getcwd())
        self.stopped = asyncio.Event()
        self.reason = ""
        self.started_at = time.time()
        self.asks = 0
        self._active: set[asyncio.Task[None]] = set()
        self._last = time.monotonic()
        self._browser: PlaywrightBrowser | None = None
        self._spare: asyncio.Task[_AskBrowser] | None = None  # the next ask's context, made between asks
        self._closing: set[asyncio.Future[None]] = set()  # contexts made for asks that went meanwhile

    async def warm(self) -> None:
        """Launch the browser, start the extraction workers, make the default model."""
        browser = await self.runtime.browser()
        if not isinstance(browser, PlaywrightBrowser):
            raise DaemonError("The daemon needs a browser it can open contexts in (a launched one, or browser_ws).")
        self._browser = browser
        if (launched := browser.context.browser) is not None:  # a browser that dies takes the daemon with it
            launched.on("disconnected", lambda _: self.stop("the browser exited"))
        self._prepare_spare()
        try:
            await self.runtime.warm()
        except ChatAgentError as exc:  # asks that use this model report it; others work
            log.warning("the default model cannot be used: %s", exc.message)
        if self._spare is not None:  # ready means ready for the first ask too
            await asyncio.wait({self._spare})

    def _prepare_spare(self) -> None:
        if self._spare is None and self._browser is not None:
            self._spare = asyncio.ensure_future(_AskBrowser.within(self._browser))

    def _close_when_made(self, spare: "asyncio.Future[_AskBrowser]") -> None:
        if not spare.cancelled() and spare.exception() is None:
            closing = asyncio.ensure_future(spare.result().close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def _session(self) -> _AskBrowser:
        """A context for one ask: the spare one, else a new one (two asks at once)."""
        spare, self._spare = self._spare, None
        if spare is not None:
            try:
                # Shielded: an ask cancelled meanwhile (its client left) must not leave
                # a context half made in the browser; it is closed once made.
                return await asyncio.shield(spare)
            except asyncio.CancelledError:
                spare.add_done_callback(self._close_when_made)
                raise
            except (ChatAgentError, PlaywrightError) as exc:
                log.info("the spare browser context failed (%s); making another", exc)
        assert self._browser is not None
        return await _AskBrowser.within(self._browser)

    # --- connections -------------------------------------------------------------------

    async def _send(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        """Every frame to a client goes out here, with the secrets masked (`scrub`)."""
        writer.write(self.runtime.scrubber.json(frame))
        await writer.drain()

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        early: asyncio.Task[_Early | None] | None = None
        try:
            pid = _peer_pid(writer)
            frame = await read_frame(reader)
            if frame is None:
                return
            request = parse_request(frame)
            if isinstance(request, OpenRequest):  # an ask's head start (`early`)
                args = _parse_ask(request.argv)
                early = asyncio.ensure_future(self._open_early(args, request.cwd))
                resolved = self._resolve(request, args)
                if not isinstance(resolved, str):  # answered from its command line
                    ask, answering = resolved
                    await self._send(writer, answering.encode())
                    head, early = early, None  # the ask's from now on
                    await self._serve_ask(ask, reader, writer, pid, head)
                    return
                log.info("an ask's settings are needed: %s", resolved)
                await self._send(writer, AskNeeded(reason=resolved).encode())
                try:
                    async with asyncio.timeout(ASK_AFTER_OPEN_S):
                        frame = await read_frame(reader)
                except TimeoutError:
                    raise ProtocolError(f"no request within {ASK_AFTER_OPEN_S:g} s of an 'open' frame") from None
                if frame is None:
                    return
                request = parse_request(frame)
                if isinstance(request, OpenRequest):
                    raise ProtocolError("a second 'open' frame")
            if isinstance(request, StatusRequest):
                await self._send(writer, self.status().encode())
            elif isinstance(request, StopRequest):
                await self._send(writer, Stopping(pid=os.getpid()).encode())
                self.stop(f"`chatagent daemon stop` (pid {pid})")
            elif refusal := self._refusal(request):
                log.info("ask from pid %s refused: %s", pid, refusal)
                await self._send(writer, Refused(reason=refusal).encode())
            else:
                head, early = early, None  # the ask's from now on
                await self._serve_ask(request, reader, writer, pid, head)
        except ProtocolError as exc:
            log.warning("bad frame from a client: %s", exc)
            with suppress(ConnectionError):
                await self._send(writer, Refused(reason=f"the daemon could not read the request: {exc}").encode())
        except PeerError as exc:
            log.warning("%s", exc)
        except ConnectionError:
            pass  # the client left; an ask of its was cancelled already
        finally:
            if early is not None:
                await _drop(early)
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()

    async def _open_early(self, args: argparse.Namespace | None, cwd: str) -> "_Early | None":
        """Open the pages of an `ask` command line (`_parse_ask`), in a context
        of their own; None if it names none this daemon would open."""
        if args is None:
            return None
        try:
            targets = [normalize_target(t, cwd=cwd) for t in args.targets]
        except TabError:
            return None
        timeout = args.timeout if args.timeout is not None else self.settings.timeout
        session = await self._session()
        try:
            tabs = await session.open_tabs(targets, timeout_s=timeout, slots=self.runtime.tab_slots)
        except BaseException as exc:
            await session.close()
            if isinstance(exc, asyncio.CancelledError):
                log.info(UNASKED)
            raise
        # Snapshots and extraction now: they do not depend on the settings. Its own task:
        # `prefetch` keeps one at a time, and asks at once each have theirs.
        reading = asyncio.ensure_future(self.runtime.builder.read_ahead(tabs))
        return _Early(session, targets, timeout, tabs, reading)

    def _resolve(self, request: OpenRequest, args: argparse.Namespace | None) -> tuple[AskRequest, Answering] | str:
        """The ask an `open` frame's command line makes, with the settings it
        loads here: the ask's own, as its environment is the daemon's (its
        settings file is read again). Else why its `AskRequest` is needed: the
        ask then says what is wrong, as without a daemon."""
        from ..cli import settings_of, verbosity

        if request.build != BUILD:
            return f"it runs {BUILD}, and the ask is {request.build}"
        if request.inputs != self.inputs:
            return "the ask's environment is not the daemon's"
        if args is None or not args.question.strip():
            return "not an ask this daemon answers from its command line"
        try:
            settings = settings_of(args, model=True)
            ask = AskRequest.of(args.targets, args.question, settings, cwd=request.cwd)
        except (ChatAgentError, ValueError) as exc:  # a bad setting, a target not there: the ask says so
            return f"{type(exc).__name__}: {exc}"
        if settings.cdp:
            return "the cdp setting"
        if refusal := self._refusal(ask):
            return refusal
        return ask, Answering(json_mode=args.json, verbose=verbosity(args))

    def _refusal(self, request: AskRequest) -> str | None:
        if request.build != BUILD:
            return f"it runs {BUILD}, and this command is {request.build}"
        differ = sorted(k for k in self.shared.keys() | request.settings.keys()
                        if self.shared.get(k) != request.settings.get(k))
        if differ:
            return f"it was started with other settings ({', '.join(differ)})"
        return None

    async def _serve_ask(
        self, request: AskRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int | None,
        early: "asyncio.Task[_Early | None] | None",
    ) -> None:
        """Answer, and cancel the ask if the client goes (Ctrl-C, or killed)."""
        self.asks += 1
        n = self.asks
        log.info("ask %d from pid %s: %d target(s), model %s", n, pid, len(request.targets), request.model)
        ended: list[str] = []
        t0 = time.perf_counter()
        opened_ms: list[float] = []
        events = EventStream(self.runtime.scrubber)  # a secret split between two tokens is masked too

        async def send(frame: Event | Failed | Opened) -> None:
            if isinstance(frame, Opened):
                opened_ms.append((time.perf_counter() - t0) * 1000)
            if frame.type in ("done", "error", "failed"):
                ended.append(frame.type if frame.type == "done" else f"{frame.type} ({getattr(frame, 'code', '')})")
            if isinstance(frame, (Failed, Opened)):
                await self._send(writer, frame.encode())
                return
            for event in events(frame):
                await self._send(writer, event.to_json().encode() + b"\n")

        ask = asyncio.create_task(self._ask(request, send, early), name=f"chatagent-daemon-ask-{n}")
        gone = asyncio.create_task(reader.read(1))  # the client sends nothing more: EOF means it left
        self._active.add(ask)
        try:
            await asyncio.wait({ask, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not ask.done() and not ended:  # after its end the ask only closes its tabs
                log.info("ask %d: the client left; cancelling it", n)
                ask.cancel()
            with suppress(asyncio.CancelledError, ConnectionError):
                await ask
        finally:
            gone.cancel()
            self._active.discard(ask)
            self._last = time.monotonic()
            if not self.stopped.is_set():
                self._prepare_spare()
        log.info("ask %d ended: %s in %.0f ms%s", n, ended[0] if ended else "cancelled", (time.perf_counter() - t0) * 1000,
                 f" (pages open after {opened_ms[0]:.0f} ms)" if opened_ms else "")

    async def _ask(self, request: AskRequest, send: Send, early: "asyncio.Task[_Early | None] | None") -> None:
        """Open the targets in a context of the ask's own while the model is
        made, then stream the agent's events. What `chatagent ask` does in its
        own process (`Runtime.open`, then `Conversation.ask`), with this ask's
        settings. `early`: the pages its head start is opening, used if they
        are this ask's targets opened with its timeout."""
        warm = asyncio.ensure_future(self.runtime.models.warm(request.model))
        session: _AskBrowser | None = None
        head: _Early | None = None
        opened = False
        try:
            try:
                head = await _taken(early)
                if head is not None and (head.targets, head.timeout) == (request.targets, request.timeout):
                    log.info("its pages were opened ahead, from its command line")
                    session, tabs = head.session, head.tabs
                else:
                    if head is not None:  # opened ahead, but not as this ask wants
                        log.info("its head start opened its pages otherwise than it asks; opening them again")
                        await head.close()
                        head = None
                    session = await self._session()
                    tabs = await session.open_tabs(request.targets, timeout_s=request.timeout, slots=self.runtime.tab_slots)
                model = await warm
            except ChatAgentError as exc:  # as `chatagent ask` fails in its own process: a setting to fix
                await send(Failed(code=exc.code, message=exc.message))
                return
            finally:
                if not warm.done():
                    warm.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await warm
            await send(Opened(pid=os.getpid()))
            opened = True
            agent = ChatAgent(
                model, tabs, builder=self.runtime.builder.with_budget(request.budget),
                deadline_s=request.deadline, input_budget_factor=request.input_budget,
            )
            stream = agent.ask(request.question)
            try:
                async for event in stream:
                    await send(event)
            finally:
                await stream.aclose()
        except ConnectionError:
            raise
        except Exception as exc:  # a bug: the client is told, in the frame it expects now; the daemon goes on
            log.exception("ask failed")
            message = f"{type(exc).__name__}: {exc}"
            with suppress(ConnectionError):
                await send(ErrorEvent(code="internal", message=message) if opened else Failed(code="internal", message=message))
        finally:
            if head is not None:
                head.reading.cancel()
            if session is not None:
                await session.close()

    def status(self) -> Status:
        browser = self._browser.context.browser if self._browser is not None else None
        return Status(
            pid=os.getpid(), build=BUILD, browser=f"{browser.browser_type.name} {browser.version}" if browser else "",
            model=self.settings.model, started_at=self.started_at, asks=self.asks, active=len(self._active),
            idle_s=0.0 if self._active else time.monotonic() - self._last, idle_timeout_s=self.settings.daemon_idle,
            socket=str(self.paths.socket), log=str(self.paths.log),
        )

    # --- stopping -------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        if not self.stopped.is_set():
            log.info("stopping: %s", reason)
            self.reason = reason
            self.stopped.set()

    async def watch(self, bound: os.stat_result) -> None:
        """Stop when idle for `daemon_idle`, or when the socket file is removed or replaced."""
        tick = min(1.0, self.settings.daemon_idle / 4)
        self._last = time.monotonic()  # idle from when it serves, not from before its warm-up
        while not self.stopped.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(self.stopped.wait(), tick)
            try:
                now = os.stat(self.paths.socket)
                ours = (now.st_ino, now.st_dev) == (bound.st_ino, bound.st_dev)
            except FileNotFoundError:
                ours = False
            if not ours:
                self.stop(f"its socket {self.paths.socket} was removed")
            elif not self._active and time.monotonic() - self._last >= self.settings.daemon_idle:
                self.stop(f"no ask for {self.settings.daemon_idle:g} s (daemon_idle)")

    async def cancel_asks(self) -> None:
        """Cancel the asks in progress (their contexts close) and drop the spare context."""
        for task in self._active:
            task.cancel()
        await asyncio.gather(*self._active, return_exceptions=True)
        if self._spare is not None:
            spare = await asyncio.gather(self._spare, return_exceptions=True)
            if isinstance(spare[0], _AskBrowser):
                await spare[0].close()


@dataclass
class _Early:
    """Pages an ask's head start opened, and how; `reading`: their read-ahead."""

    session: _AskBrowser
    targets: list[str]
    timeout: float
    tabs: list[Tab | TabFailure]
    reading: asyncio.Future[None]

    async def close(self) -> None:
        self.reading.cancel()
        await self.session.close()


def _parse_ask(argv: list[str]) -> argparse.Namespace | None:
    """A `chatagent ask` command line read by the CLI's own parser; None if it
    is not one this daemon answers."""
    from ..cli import build_parser

    try:
        with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):  # usage errors are the client's to say
            args = build_parser(plugins=False).parse_args(argv)
    except SystemExit:
        return None
    return args if args.command == "ask" and not args.cdp and args.targets else None


async def _taken(early: "asyncio.Task[_Early | None] | None") -> _Early | None:
    """What a head start opened; None if there was none or it failed (the ask opens its pages itself)."""
    if early is None:
        return None
    try:
        return await early
    except (ChatAgentError, PlaywrightError) as exc:
        log.info("the ask's head start failed (%s); opening its pages again", exc)
        return None


async def _drop(early: "asyncio.Task[_Early | None]") -> None:
    """Close what a head start opened for an ask that did not come, or was refused."""
    early.cancel()
    with suppress(BaseException):
        head = await early
        if head is not None:
            await head.close()
            log.info(UNASKED)


class PeerError(Exception):
    """The other end of a connection is another user's process."""


def _peer_pid(writer: asyncio.StreamWriter) -> int | None:
    """The connecting process's pid, once it is known to be this user's."""
    found = peer(writer.get_extra_info("socket"))
    if found is None:
        return None
    pid, uid = found
    if uid != os.getuid():
        raise PeerError(f"refused a connection from pid {pid} of another user (uid {uid})")
    return pid


async def run_daemon(settings: Settings, paths: DaemonPaths, *, ready: Callable[[Status], None]) -> str:
    """Serve until stopped; `ready` is called once the socket accepts asks.
    Returns why it stopped."""
    refuse_cdp(settings)
    take_lock(paths)
    loop = asyncio.get_running_loop()
    async with Runtime(settings, extraction_workers=True) as runtime:
        daemon = Daemon(runtime, paths)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.stop, f"signal {sig.name}")
        try:
            await _serve(daemon, paths, ready)
            return daemon.reason
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)


def _private_socket(paths: DaemonPaths) -> socket.socket:
    """A listening socket at `paths.socket` that is 0600 from the moment a
    client can see it: bound under a temporary name, narrowed, then renamed
    into place (a client between bind and chmod saw umask's 0755 and refused)."""
    staging = paths.staging
    staging.unlink(missing_ok=True)  # under the lock: a dead daemon's
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(staging))
        os.chmod(staging, 0o600)  # the directory is 0700 already; this holds if it is ever widened
        sock.listen(100)
        os.replace(staging, paths.socket)  # under the lock, a socket file there is a dead daemon's
    except BaseException:
        sock.close()
        staging.unlink(missing_ok=True)
        raise
    return sock


async def _serve(daemon: Daemon, paths: DaemonPaths, ready: Callable[[Status], None]) -> None:
    warm = asyncio.ensure_future(daemon.warm())
    stop = asyncio.ensure_future(daemon.stopped.wait())
    await asyncio.wait({warm, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if not warm.done():  # stopped while starting
        warm.cancel()
        with suppress(asyncio.CancelledError):
            await warm
        return
    warm.result()
    server = await asyncio.start_unix_server(daemon.serve_client, sock=_private_socket(paths), limit=MAX_REQUEST_BYTES)
    bound = os.stat(paths.socket)
    try:
        ready(daemon.status())
        await daemon.watch(bound)
    finally:
        server.close()
        with suppress(FileNotFoundError):
            if os.stat(paths.socket).st_ino == bound.st_ino:
                paths.socket.unlink()
        await daemon.cancel_asks()
