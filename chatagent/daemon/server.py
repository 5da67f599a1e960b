"""The daemon: one warm `Runtime` serving asks on a Unix socket (`chatagent daemon run`).

The browser is launched, the extraction workers started and the default
model's client made once, at start. Each ask gets a session of its own in
that browser (`PlaywrightBrowser.session`): its tabs, cookies, storage and the
local files it names end with it, as they would in a process of its own. What asks
share is what is keyed by content: extractions, token counts and page
analyses. There is no answer cache for asks (see `protocol.NOT_FOR_ASK`).

It stops after `daemon_idle` seconds without an ask, on `chatagent daemon
stop` or SIGTERM/SIGINT, and when its socket is removed or replaced.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError

from ..agent import ChatAgent
from ..browser import Tab, TabFailure
from ..browser.playwright import PlaywrightBrowser
from ..browser.targets import normalize_target
from ..errors import ChatAgentError, TabError
from ..events import ErrorEvent, Event
from ..runtime import Runtime
from ..scrub import EventStream
from ..settings import Settings, check_model
from .paths import BUILD, DaemonError, DaemonPaths, peer, settings_inputs, take_lock
from .protocol import (
    MAX_REQUEST_BYTES, Answering, AskRequest, AskSettings, Failed, Opened, ProtocolError, Refused, SettingsNeeded,
    Status, StatusRequest, Stopping, StopRequest, parse_request, read_frame, refuse_cdp, shared_settings,
)

log = logging.getLogger(__name__)

Send = Callable[[Event | Failed | Opened], Awaitable[None]]
UNASKED = "closed the pages opened ahead for an ask that did not follow"
SETTINGS_WAIT_S = 30.0  # an ask loading its settings: far less, even on a busy machine


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
        self._spare: asyncio.Task[PlaywrightBrowser] | None = None  # the next ask's session, made between asks
        self._closing: set[asyncio.Future[None]] = set()  # sessions made for asks that went meanwhile

    async def warm(self) -> None:
        """Launch the browser, start the extraction workers, make the default model."""
        browser = await self.runtime.browser()
        if not isinstance(browser, PlaywrightBrowser):
            raise DaemonError("The daemon needs a browser it can open contexts in (a launched one, or browser_ws).")
        self._browser = browser
        browser.on_exit(lambda: self.stop("the browser exited"))  # a browser that dies takes the daemon with it
        self._prepare_spare()
        try:
            await self.runtime.warm()
        except ChatAgentError as exc:  # asks that use this model report it; others work
            log.warning("the default model cannot be used: %s", exc.message)
        if self._spare is not None:  # ready means ready for the first ask too
            await asyncio.wait({self._spare})

    def _prepare_spare(self) -> None:
        if self._spare is None and self._browser is not None:
            self._spare = asyncio.ensure_future(self._browser.session())

    def _close_when_made(self, spare: "asyncio.Future[PlaywrightBrowser]") -> None:
        if not spare.cancelled() and spare.exception() is None:
            closing = asyncio.ensure_future(spare.result().close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def _session(self) -> PlaywrightBrowser:
        """A session for one ask: the spare one, else a new one (two asks at once)."""
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
                log.info("the spare browser session failed (%s); making another", exc)
        assert self._browser is not None
        return await self._browser.session()

    # --- connections -------------------------------------------------------------------

    async def _send(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        """Every frame to a client goes out here, with the secrets masked (`scrub`)."""
        writer.write(self.runtime.scrubber.json(frame))
        await writer.drain()

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ahead: asyncio.Task[_Ahead] | None = None
        try:
            pid = _peer_pid(writer)
            frame = await read_frame(reader)
            if frame is None:
                return
            request = parse_request(frame)
            if isinstance(request, StatusRequest):
                await self._send(writer, self.status().encode())
            elif isinstance(request, StopRequest):
                await self._send(writer, Stopping(pid=os.getpid()).encode())
                self.stop(f"`chatagent daemon stop` (pid {pid})")
            elif isinstance(request, AskSettings):
                raise ProtocolError("a 'settings' frame before its 'ask'")
            elif request.build != BUILD:
                await self._refuse(writer, pid, f"it runs {BUILD}, and this command is {request.build}")
            else:
                try:
                    targets = [normalize_target(t, cwd=request.cwd) for t in request.targets]
                except TabError as exc:  # the ask says so, in a failed tab's words
                    await self._send(writer, SettingsNeeded(reason=exc.message).encode())
                    return
                # The pages open now, while the settings are made known: they do not depend on them.
                ahead = asyncio.ensure_future(self._open_ahead(targets, request.flags.timeout or self.settings.timeout))
                chosen = await self._settings_of(request, reader, writer)
                if isinstance(chosen, str):
                    await self._refuse(writer, pid, chosen)
                elif chosen is not None:
                    head, ahead = ahead, None  # the ask's from now on
                    await self._serve_ask(request.question, targets, chosen, reader, writer, pid, head)
        except ProtocolError as exc:
            log.warning("bad frame from a client: %s", exc)
            with suppress(ConnectionError):
                await self._send(writer, Refused(reason=f"the daemon could not read the request: {exc}").encode())
        except PeerError as exc:
            log.warning("%s", exc)
        except ConnectionError:
            pass  # the client left; an ask of its was cancelled already
        finally:
            if ahead is not None:
                await _drop(ahead)
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()

    async def _refuse(self, writer: asyncio.StreamWriter, pid: int | None, reason: str) -> None:
        log.info("ask from pid %s refused: %s", pid, reason)
        await self._send(writer, Refused(reason=reason).encode())

    async def _settings_of(
        self, request: AskRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
    ) -> AskSettings | str | None:
        """The settings the ask is answered with: loaded here when its
        environment is the daemon's, else sent by the ask (`settings_needed`).
        A str: why the daemon refuses them; None: the ask left to answer itself."""
        loaded = self._load_settings(request)
        if isinstance(loaded, AskSettings):
            await self._send(writer, Answering().encode())
            return loaded
        log.info("an ask's settings are needed: %s", loaded)
        await self._send(writer, SettingsNeeded(reason=loaded).encode())
        try:
            async with asyncio.timeout(SETTINGS_WAIT_S):
                frame = await read_frame(reader)
        except TimeoutError:
            raise ProtocolError(f"no settings within {SETTINGS_WAIT_S:g} s of 'settings_needed'") from None
        if frame is None:
            return None
        sent = parse_request(frame)
        if not isinstance(sent, AskSettings):
            raise ProtocolError(f"a {sent.type!r} frame where 'settings' belongs")
        return self._refusal(sent) or sent

    def _load_settings(self, request: AskRequest) -> AskSettings | str:
        """The ask's settings, as its own process would load them: its flags
        over the environment and the settings file (read again), which are the
        daemon's. Else why they cannot be loaded here: the ask then loads them,
        and says what is wrong, as without a daemon."""
        if request.inputs != self.inputs:
            return "the ask's environment is not the daemon's"
        flags = request.flags.model_dump()
        try:
            settings = Settings.load(**flags)
            check_model(settings, flags)
        except ChatAgentError as exc:  # a bad setting: the ask says so
            return f"{type(exc).__name__}: {exc}"
        if settings.cdp:
            return "the cdp setting"
        chosen = AskSettings.of(settings)
        return self._refusal(chosen) or chosen

    def _refusal(self, chosen: AskSettings) -> str | None:
        differ = sorted(k for k in self.shared.keys() | chosen.settings.keys()
                        if self.shared.get(k) != chosen.settings.get(k))
        return f"it was started with other settings ({', '.join(differ)})" if differ else None

    async def _open_ahead(self, targets: list[str], timeout: float) -> "_Ahead":
        """Open an ask's pages in a session of their own, with the timeout its
        flags give (its settings may give another: `_ask` then opens them again)."""
        session = await self._session()
        try:
            tabs = await session.open_tabs(targets, timeout_s=timeout, slots=self.runtime.tab_slots)
        except BaseException:
            await session.close()
            raise
        # Snapshots and extraction now: they do not depend on the settings. Its own task:
        # `prefetch` keeps one at a time, and asks at once each have theirs.
        reading = asyncio.ensure_future(self.runtime.builder.read_ahead(tabs))
        return _Ahead(session, timeout, tabs, reading)

    async def _serve_ask(
        self, question: str, targets: list[str], chosen: AskSettings, reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter, pid: int | None, ahead: "asyncio.Task[_Ahead] | None",
    ) -> None:
        """Answer, and cancel the ask if the client goes (Ctrl-C, or killed)."""
        self.asks += 1
        n = self.asks
        log.info("ask %d from pid %s: %d target(s), model %s", n, pid, len(targets), chosen.model)
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

        ask = asyncio.create_task(self._ask(question, targets, chosen, send, ahead), name=f"chatagent-daemon-ask-{n}")
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

    async def _ask(
        self, question: str, targets: list[str], chosen: AskSettings, send: Send, ahead: "asyncio.Task[_Ahead] | None",
    ) -> None:
        """Open the targets in a session of the ask's own while the model is
        made, then stream the agent's events. What `chatagent ask` does in its
        own process (`Runtime.open`, then `Conversation.ask`), with this ask's
        settings. `ahead`: its pages, opened as its request came, used if they
        were opened with the timeout its settings give."""
        warm = asyncio.ensure_future(self.runtime.models.warm(chosen.model))
        session: PlaywrightBrowser | None = None
        head: _Ahead | None = None
        opened = False
        try:
            try:
                head = await _taken(ahead)
                if head is not None and head.timeout == chosen.timeout:
                    log.info("its pages were opened ahead, from its command line")
                    session, tabs = head.session, head.tabs
                else:
                    if head is not None:  # opened ahead, but not as this ask wants
                        log.info("its pages were opened ahead with another timeout than its settings give; opening them again")
                        await head.close()
                        head = None
                    session = await self._session()
                    tabs = await session.open_tabs(targets, timeout_s=chosen.timeout, slots=self.runtime.tab_slots)
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
                model, tabs, builder=self.runtime.builder.with_budget(chosen.budget),
                deadline_s=chosen.deadline, input_budget_factor=chosen.input_budget,
            )
            stream = agent.ask(question)
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
        return Status(
            pid=os.getpid(), build=BUILD, browser=self._browser.version if self._browser is not None else "",
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
            if isinstance(spare[0], PlaywrightBrowser):
                await spare[0].close()


@dataclass
class _Ahead:
    """An ask's pages opened as its request came, and how; `reading`: their read-ahead."""

    session: PlaywrightBrowser
    timeout: float
    tabs: list[Tab | TabFailure]
    reading: asyncio.Future[None]

    async def close(self) -> None:
        self.reading.cancel()
        await self.session.close()


async def _taken(ahead: "asyncio.Task[_Ahead] | None") -> _Ahead | None:
    """The pages opened ahead; None if there were none or opening them failed (the ask opens them itself)."""
    if ahead is None:
        return None
    try:
        return await ahead
    except (ChatAgentError, PlaywrightError) as exc:
        log.info("opening the ask's pages ahead failed (%s); opening them again", exc)
        return None


async def _drop(ahead: "asyncio.Task[_Ahead]") -> None:
    """Close what was opened ahead for an ask that did not follow, or was refused."""
    ahead.cancel()
    with suppress(BaseException):
        head = await ahead
        await head.close()
    if ahead.cancelled() or ahead.exception() is None:
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
