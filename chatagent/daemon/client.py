"""The daemon's clients: `chatagent ask` (`ask`), and `chatagent daemon
start|stop|status` (`ensure_running`, `stop`, `status`).

Imported on every `ask` a daemon answers, so it imports little: the
protocol, never the settings machinery (the caller has loaded the settings,
or the daemon has: `early`), the browser, the text pipeline or a model
library. The event types and the renderer are imported once the request is
sent, while the daemon opens the pages.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ChatAgentError, TabError
from ..locations import CONFIG_ENV
from ..scrub import NO_SECRETS
from ..terminal import no_echo, safe_text, stderr_console
from .early import ask_request
from .paths import DIR_ENV, DaemonError, DaemonPaths, check_private, daemon_pid, peer
from .protocol import (
    MAX_REPLY_BYTES, Answering, AskSettings, Failed, Opened, ProtocolError, Refused, Reply, SettingsNeeded, Status,
    StatusRequest, StopRequest, Stopping, parse_reply, read_frame,
)

if TYPE_CHECKING:
    from ..events import Event
    from ..render import EventPrinter
    from ..settings import Settings

log = logging.getLogger(__name__)

START_WAIT_S = 60.0  # a browser launch and warm workers on a busy machine; past this `ask` answers in its own process
STOP_WAIT_S = 15.0
MAX_LOG_BYTES = 1 << 20  # a daemon logs a few lines an ask: past this a new one starts the log afresh
_POLL_S = 0.05

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class AskFailed(ChatAgentError):
    """The daemon could not start the ask (a model that cannot be made, say):
    what `chatagent ask` reports as an error in its own process."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _note(text: str) -> None:
    stderr_console().print(safe_text(("note: ", "yellow"), text))


# --- ask ------------------------------------------------------------------------------


async def ask(args: argparse.Namespace, settings: Settings, *, early: socket.socket | None = None) -> EventPrinter | None:
    """Have the running daemon answer `chatagent ask` (`args`: its command
    line; the daemon is started first when the `daemon` setting is on), shown
    as `render.show` shows an answer: its printer. None when this process
    should answer instead: no daemon, `cdp` (attaching launches nothing), a
    target that is not there (said in-process, in a failed tab's words), or a
    daemon that cannot honour these settings. `early`: the connection
    `early.head_start` opened, where the daemon waits for this ask's settings
    (this takes it over)."""
    try:
        return await _ask(args, settings, early=early)
    finally:
        if early is not None:
            early.close()  # unused or done: a daemon drops what it opened for it


async def _ask(args: argparse.Namespace, settings: Settings, *, early: socket.socket | None) -> EventPrinter | None:
    from ..browser.targets import normalize_target

    if settings.cdp or not args.targets:
        return None
    try:
        for target in args.targets:
            normalize_target(target)
    except TabError:  # a target that is not there
        return None
    try:
        paths = DaemonPaths.locate(create=settings.daemon)  # no daemon wanted: no directory made either
        if early is not None:
            connection: Connection | None = await asyncio.open_unix_connection(sock=early, limit=MAX_REPLY_BYTES)
        else:
            connection = await connect(paths)
        if connection is None and settings.daemon:
            with stderr_console().status("Starting the chatagent daemon…"):
                await ensure_running(paths)
            connection = await connect(paths)
    except DaemonError as exc:
        _note(f"not using the chatagent daemon: {exc.message}")
        return None
    if connection is None:
        return None
    reader, writer = connection
    # The head start sent the ask already (`early`), and the daemon said it needs its settings.
    request = None if early is not None else ask_request(args, cwd=os.getcwd(), env=os.environ)
    with no_echo():  # as in-process: keys typed meanwhile wait for the shell
        return await _answer(reader, writer, paths, json_mode=args.json, request=request, settings=settings)


async def answer_opened(sock: socket.socket, *, json_mode: bool) -> EventPrinter | None:
    """Show the answer of a daemon that loaded an ask's settings itself
    (`protocol.Answering` read off `sock` by the head start); None as for `ask`."""
    try:
        paths = DaemonPaths.locate(create=False)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_REPLY_BYTES)
    except (DaemonError, OSError):
        sock.close()
        return None
    with no_echo():
        return await _answer(reader, writer, paths, json_mode=json_mode)


async def _answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, paths: DaemonPaths, *, json_mode: bool,
    request: bytes | None = None, settings: Settings | None = None,
) -> EventPrinter | None:
    """`request` (the ask) sent, unless the head start sent it; `settings`
    sent when the daemon needs them (None: it is answering already); then the
    daemon's reply to the ask, then its events, shown."""
    try:
        try:
            if request is not None:
                writer.write(request)
                await writer.drain()
            from ..render import show  # imported while the daemon opens the pages

            with stderr_console().status("Opening pages…"):
                reply = await _reply(reader) if request is not None else None
                if settings is not None and (reply is None or isinstance(reply, SettingsNeeded)):
                    if reply is not None:
                        log.info("the chatagent daemon needs this ask's settings: %s", reply.reason)
                    writer.write(AskSettings.of(settings).encode())
                    await writer.drain()
                    reply = None
                if reply is None or isinstance(reply, Answering):
                    reply = await _reply(reader)
            if isinstance(reply, Refused):
                _note(f"not using the chatagent daemon: {reply.reason}; answering here. "
                      "`chatagent daemon stop` stops it (the next ask with the daemon setting starts one with these).")
                return None
            if isinstance(reply, Failed):
                raise AskFailed(reply.code, reply.message)
            if not isinstance(reply, Opened):
                raise ProtocolError(f"a {reply.type!r} frame where 'opened' belongs")
        except (ProtocolError, ConnectionError) as exc:  # before the ask started: nothing shown yet
            _note(f"the chatagent daemon did not answer properly ({exc}; its log: {paths.log}); answering here.")
            return None
        log.info("answered by the chatagent daemon (pid %d)", reply.pid)
        # Outside the fallback: a daemon gone mid-answer is an event (`_events`), and a
        # pipe this process writes to closing (`| head`) is not the daemon's failure.
        # The daemon masked its secrets, which are this ask's (`protocol.shared_settings`),
        # in its frames: an ask whose settings it loaded itself never loads them here.
        return await show(_events(reader, paths), json_mode=json_mode, scrubber=NO_SECRETS)
    finally:
        writer.close()


async def _reply(reader: asyncio.StreamReader) -> Reply:
    frame = await read_frame(reader)
    if frame is None:
        raise ConnectionResetError("it closed the connection")
    return parse_reply(frame)


async def _events(reader: asyncio.StreamReader, paths: DaemonPaths) -> AsyncIterator[Event]:
    """The ask's events as the daemon sends them, ending with one `done` or
    `error`: one is made up if the daemon goes away first."""
    from ..events import ErrorEvent, parse_event

    while True:
        try:
            frame = await read_frame(reader)
            if frame is None:
                raise ConnectionResetError("it closed the connection")
            event = parse_event(frame)
        except (ProtocolError, ConnectionError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            yield ErrorEvent(code="daemon_gone", message=(
                f"The chatagent daemon stopped answering before the end ({exc}); its log is {paths.log}. Ask again."
            ))
            return
        yield event
        if event.type in ("done", "error"):
            return


# --- connecting, starting, stopping ---------------------------------------------------------------


async def connect(paths: DaemonPaths) -> Connection | None:
    """A connection to the daemon; None when none is listening. The socket of
    a daemon that is gone (killed) is removed."""
    try:
        check_private(paths.socket, directory=False)
    except FileNotFoundError:
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(str(paths.socket), limit=MAX_REPLY_BYTES)
    except (ConnectionRefusedError, FileNotFoundError):
        if daemon_pid(paths) is None:
            paths.socket.unlink(missing_ok=True)
            log.info("removed the socket of a daemon that is gone: %s", paths.socket)
        return None
    found = peer(writer.get_extra_info("socket"))
    if found is not None and found[1] != os.getuid():
        writer.close()
        raise DaemonError(f"The daemon's socket {paths.socket} is served by another user's process (pid {found[0]}).")
    return reader, writer


async def _request(paths: DaemonPaths, request: StatusRequest | StopRequest) -> Reply | None:
    connection = await connect(paths)
    if connection is None:
        return None
    reader, writer = connection
    try:
        writer.write(request.encode())
        await writer.drain()
        return await _reply(reader)
    except ProtocolError as exc:
        raise DaemonError(f"The daemon answered in a way this chatagent does not understand ({exc}): "
                          "`chatagent daemon stop`, then start it again.") from None
    except ConnectionError:
        return None  # it stopped meanwhile
    finally:
        writer.close()


async def status(paths: DaemonPaths) -> Status | None:
    """The running daemon's status; None when none is listening."""
    reply = await _request(paths, StatusRequest())
    if reply is not None and not isinstance(reply, Status):
        raise DaemonError(f"The daemon answered a status request with {reply.type!r}.")
    return reply


async def ensure_running(paths: DaemonPaths) -> Status:
    """The running daemon's status, after starting one in the background if
    none runs (waiting for one that is starting or stopping first)."""
    started: subprocess.Popen[bytes] | None = None
    deadline = time.monotonic() + START_WAIT_S
    while True:
        if (running := await status(paths)) is not None:
            return running
        if daemon_pid(paths) is None:
            if started is None:
                started = _spawn(paths)
            elif started.poll() is not None:
                raise DaemonError(f"The daemon did not start: {_last_line(paths.log)} (its log: {paths.log}).")
        if time.monotonic() > deadline:
            raise DaemonError(f"The daemon has not answered within {START_WAIT_S:g} s of starting; its log: {paths.log}.")
        await asyncio.sleep(_POLL_S)


def _spawn(paths: DaemonPaths) -> subprocess.Popen[bytes]:
    """`chatagent daemon run` in a session of its own (a Ctrl-C or a closed
    terminal does not reach it), in /, logging to its log file, with this
    process's environment and so its settings, and this process's chatagent."""
    env = {**os.environ, DIR_ENV: str(paths.dir)}
    if env.get(CONFIG_ENV):
        env[CONFIG_ENV] = os.path.abspath(os.path.expanduser(env[CONFIG_ENV]))
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([here, *(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)])
    # Appended to, not truncated: two asks may start daemons at once (one wins the lock, the other logs why it left).
    out = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if os.fstat(out).st_size > MAX_LOG_BYTES:
            os.ftruncate(out, 0)
        return subprocess.Popen(
            [sys.executable, "-m", "chatagent", "-v", "daemon", "run"], stdin=subprocess.DEVNULL, stdout=out,
            stderr=out, cwd="/", env=env, start_new_session=True,
        )
    finally:
        os.close(out)


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "it logged nothing"


async def stop(paths: DaemonPaths) -> int | None:
    """Stop the daemon and wait until it is gone; its pid, or None if none was running."""
    pid = daemon_pid(paths)
    reply = await _request(paths, StopRequest())
    if isinstance(reply, Stopping):
        pid = reply.pid
    elif pid is None:
        return None
    else:  # starting (not listening yet) or not answering: the signal it stops on
        for _ in range(int(1 / _POLL_S)):
            if pid != 0:
                break
            await asyncio.sleep(_POLL_S)  # the lock is taken a moment before the pid is written
            pid = daemon_pid(paths)
        if not pid:
            return None  # gone meanwhile
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while daemon_pid(paths) is not None:
        if time.monotonic() > deadline:
            raise DaemonError(f"The daemon (pid {pid}) did not stop within {STOP_WAIT_S:g} s: `kill {pid}`.")
        await asyncio.sleep(_POLL_S)
    return pid
