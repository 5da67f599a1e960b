"""The native-messaging host loop: reads frames from the extension, answers
`ping`, runs each `ask` as a task streaming agent events back, routes
`tool_result`s to the waiting `BridgeTab`, honours `cancel`, exits on EOF.

The agent is injected as `answer(ask, tabs) -> AsyncIterator[event]` so this
module does not depend on how `ChatAgent` is built (and tests can fake it);
so is `warm()`, run in the background once the caller is accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from chatagent import startup
from chatagent.errors import ChatAgentError
from chatagent.events import ErrorEvent, Event
from chatagent.scrub import NO_SECRETS, EventStream, LogScrubber, Secrets, configured

from .errors import BadToolResultError, BridgeClosedError, MessageError, ProtocolError
from .install import EXTENSION_ORIGIN
from .messages import (
    PROTOCOL_VERSION,
    AskMessage,
    CancelMessage,
    ErrorMessage,
    EventMessage,
    ModelCheckedMessage,
    ModelCheckMessage,
    PingMessage,
    PongMessage,
    SettingsGetMessage,
    SettingsMessage,
    SettingsSetMessage,
    TabLabel,
    ToolResultMessage,
    parse_message,
)
from .panel_settings import in_panel_words
from .protocol import FrameReader, FrameWriter, open_stdio, protect_stdout
from .requests import DEFAULT_TOOL_TIMEOUT_S, ToolRequester
from .tab import BridgeTab, tabs_from_ask

log = logging.getLogger("extension_bridge.host")

AnswerFn = Callable[[AskMessage, list[BridgeTab]], AsyncIterator["Event | dict[str, Any]"]]
WarmFn = Callable[[], Awaitable[None]]
# The panel's settings view: `settings_get`/`settings_set` → `settings`, `model_check` → `model_checked`.
SettingsRequest = SettingsGetMessage | SettingsSetMessage | ModelCheckMessage
SettingsFn = Callable[[SettingsRequest], Awaitable[SettingsMessage | ModelCheckedMessage]]

DEFAULT_ALLOWED_ORIGINS = frozenset({EXTENSION_ORIGIN})
MAX_CONCURRENT_ASKS = 8


def origin_from_argv(argv: Sequence[str]) -> str | None:
    """Chrome passes `chrome-extension://<id>/` as the first argument; Firefox
    passes the manifest path and then the add-on id."""
    for arg in argv:
        if arg.startswith("chrome-extension://"):
            return arg
    if len(argv) >= 2 and not argv[1].startswith("-"):
        return argv[1]  # Firefox: [manifest path, extension id]
    return None


def _event_dict(ev: Any) -> dict[str, Any]:
    if isinstance(ev, dict):
        return ev
    data: dict[str, Any] = ev.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


class BridgeHost:
    def __init__(
        self,
        reader: FrameReader,
        writer: FrameWriter,
        answer: AnswerFn,
        *,
        origin: str | None = None,
        allowed_origins: frozenset[str] | None = DEFAULT_ALLOWED_ORIGINS,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        max_concurrent_asks: int = MAX_CONCURRENT_ASKS,
        warm: WarmFn | None = None,
        settings: SettingsFn | None = None,
        secrets: Secrets = lambda: NO_SECRETS,
    ) -> None:
        """`secrets`: those `writer` masks (`chatagent.scrub`), for an answer's tokens to
        be held back where one could be split between two."""
        self.reader = reader
        self.writer = writer
        self.answer = answer
        self.origin = origin
        self.allowed_origins = allowed_origins  # None: no check (tests, manual runs)
        self.requester = ToolRequester(self.writer.send, timeout_s=tool_timeout_s)
        self.tool_timeout_s = tool_timeout_s
        self.max_concurrent_asks = max_concurrent_asks
        self.asks: dict[str, asyncio.Task[None]] = {}
        self._closed = False
        self._warm = warm  # run once the caller is accepted, alongside the first messages
        self._warming: asyncio.Task[None] | None = None
        self._settings = settings  # the panel's settings view; None: this host has none
        self._checks: set[asyncio.Task[None]] = set()  # connection tests under way
        self._secrets = secrets

    async def send(self, message: Any) -> None:
        if self._closed:
            return
        try:
            await self.writer.send(message)
        except BridgeClosedError as exc:
            log.info("output closed: %s", exc)
            self._closed = True

    async def serve(self) -> int:
        """Run until stdin EOF (0) or a refused origin (2)."""
        if self.allowed_origins is not None and self.origin not in self.allowed_origins:
            log.error("refusing caller origin %r", self.origin)
            await self.send(
                ErrorMessage(
                    code="bad_origin",
                    message=f"This host only serves the chatagent extension ({EXTENSION_ORIGIN}); "
                    f"it was started for {self.origin or 'an unknown caller'}.",
                )
            )
            return 2
        if self._warm is not None:
            self._warming = asyncio.create_task(self._run_warm(self._warm), name="warm")
        try:
            while not self._closed:
                try:
                    data = await self.reader.read_json()
                except EOFError as exc:  # clean EOF, or truncated frame: the browser is gone
                    if isinstance(exc, ProtocolError):
                        log.warning("%s", exc)
                    break
                except ProtocolError as exc:  # too large / bad JSON: stream still in sync
                    log.warning("bad frame: %s", exc)
                    await self.send(ErrorMessage.from_exception(exc))
                    continue
                try:
                    msg = parse_message(data)
                except BadToolResultError as exc:
                    # Not an error frame: that would end the ask in the extension,
                    # while the agent only loses this one call (a tool error).
                    log.warning("bad tool_result for %s/%s: %s", exc.request_id, exc.call_id, exc.detail)
                    self.requester.reject(exc.request_id or "", exc.call_id, exc.detail)
                    continue
                except MessageError as exc:
                    log.warning("bad message: %s", exc)
                    await self.send(ErrorMessage.from_exception(exc))
                    continue
                await self.dispatch(msg)
        finally:
            await self.shutdown()
        return 0

    async def dispatch(self, msg: Any) -> None:
        if isinstance(msg, PingMessage):
            await self.send(PongMessage(version=PROTOCOL_VERSION))
        elif isinstance(msg, AskMessage):
            if msg.id in self.asks:
                await self.send(
                    ErrorMessage(id=msg.id, code="duplicate_id", message=f"Request {msg.id!r} is still running.")
                )
            elif len(self.asks) >= self.max_concurrent_asks:
                await self.send(
                    ErrorMessage(
                        id=msg.id,
                        code="too_many_requests",
                        message=f"At most {self.max_concurrent_asks} questions can run at once; wait or cancel one.",
                    )
                )
            else:
                rid = msg.id
                task = asyncio.create_task(self._run_ask(msg), name=f"ask-{rid}")
                self.asks[rid] = task

                def forget(_t: asyncio.Task[None]) -> None:
                    self.asks.pop(rid, None)

                task.add_done_callback(forget)
        elif isinstance(msg, CancelMessage):
            running = self.asks.get(msg.id)
            if running is None:
                log.info("cancel for %s: not running (already finished?)", msg.id)
            else:
                running.cancel()
        elif isinstance(msg, ToolResultMessage):
            self.requester.resolve(msg)
        elif isinstance(msg, (SettingsGetMessage, SettingsSetMessage)):
            await self._answer_settings(msg)
        elif isinstance(msg, ModelCheckMessage):  # asks a server (seconds at worst): frames keep flowing meanwhile
            task = asyncio.create_task(self._answer_settings(msg), name=f"check-{msg.id}")
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)

    async def _answer_settings(self, msg: SettingsRequest) -> None:
        if self._settings is None:
            await self.send(ErrorMessage(id=msg.id, code="unsupported", message="This host has no settings to show."))
            return
        try:
            await self.send(await self._settings(msg))
        except ChatAgentError as exc:  # a bad value, an unreadable settings file: the panel says which
            await self.send(ErrorMessage(id=msg.id, code=exc.code, message=exc.message))
        except OSError as exc:  # the settings file cannot be written: say so, keep serving
            await self.send(ErrorMessage(id=msg.id, code="config_error",
                                         message=f"Could not save the settings: {exc.strerror or exc} ({exc.filename})."))

    async def _run_ask(self, ask: AskMessage) -> None:
        tabs = tabs_from_ask(ask, self.requester, timeout_s=self.tool_timeout_s)
        finished = False
        labelled = False
        scrubbed = EventStream(self._secrets())
        stream = self.answer(ask, tabs)

        async def emit(ev: Event | dict[str, Any]) -> None:
            nonlocal finished, labelled
            data = _event_dict(ev)
            labels = None
            if not labelled:
                # The agent has labelled the tabs by its first event. "[Tab 2]" is the
                # conversation's second tab, which need not be the panel's second
                # (the extension leaves out tabs it cannot read): the panel is told which.
                labelled = True
                labels = [TabLabel(tab_id=t.chrome_tab_id, label=t.label) for t in tabs]
            await self.send(EventMessage(id=ask.id, event=data, tabs=labels))
            finished = data.get("type") in ("done", "error")

        try:
            async for ev in stream:
                if isinstance(ev, ErrorEvent):
                    ev = in_panel_words(ev)
                for shown in [ev] if isinstance(ev, dict) else scrubbed(ev):  # dicts: a stand-in's (tests)
                    await emit(shown)
                if finished:
                    break  # a run ends with exactly one done or error
            if not finished:
                for shown in scrubbed.end():
                    await emit(shown)
                finished = True
                await self._send_error(ask.id, "internal", "The agent stopped without an answer.")
        except asyncio.CancelledError:
            if not finished:
                finished = True
                # Shielded: the task is being cancelled, the frame must still go out.
                await asyncio.shield(self._send_error(ask.id, "aborted", "Cancelled."))
            raise
        except ChatAgentError as exc:
            if not finished:
                await self.send(EventMessage.wrap(ask.id, in_panel_words(ErrorEvent.of(exc))))
        except Exception as exc:  # noqa: BLE001 - one bad ask must not kill the host
            log.exception("ask %s failed", ask.id)
            if not finished:
                await self._send_error(ask.id, "internal", f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            # Close the agent's generator now (not at GC) so it releases what it holds.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:  # noqa: BLE001
                    log.debug("closing the answer stream of %s failed", ask.id, exc_info=True)
            self.requester.fail_request(ask.id, "the question was cancelled")
            for t in tabs:
                await t.close()

    @staticmethod
    async def _run_warm(warm: WarmFn) -> None:
        try:
            await warm()
        except Exception as exc:  # noqa: BLE001 - warming only saves time; the first ask does the work
            log.warning("warm-up failed (%s: %s); the first question will be slower", type(exc).__name__, exc)
        finally:
            startup.over()  # the host's start-up ends here (chatagent/startup.py)

    async def _send_error(self, rid: str, code: str, message: str) -> None:
        await self.send(EventMessage.wrap(rid, ErrorEvent(code=code, message=message)))

    async def shutdown(self) -> None:
        self.requester.close("the extension disconnected")
        tasks = [*self.asks.values(), *self._checks]
        if self._warming is not None:
            tasks.append(self._warming)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        await self.writer.aclose()


async def serve_stdio(
    answer: AnswerFn,
    argv: Sequence[str] = (),
    *,
    stdout: Any = None,
    allowed_origins: frozenset[str] | None = DEFAULT_ALLOWED_ORIGINS,
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    warm: WarmFn | None = None,
    settings: SettingsFn | None = None,
    secrets: Secrets = configured,
) -> int:
    """`secrets` are masked in every frame to the extension."""
    reader, writer = await open_stdio(sys.stdin.buffer, stdout, scrub=lambda payload: secrets().json(payload))
    host = BridgeHost(
        reader,
        writer,
        answer,
        origin=origin_from_argv(argv),
        allowed_origins=allowed_origins,
        tool_timeout_s=tool_timeout_s,
        warm=warm,
        settings=settings,
        secrets=secrets,
    )
    return await host.serve()


def main(answer: AnswerFn | None = None, argv: Sequence[str] | None = None, *, warm: WarmFn | None = None) -> int:
    """Process entry point (`python -m extension_bridge`): the real agent over
    a runtime built from the settings, or `answer` (a stand-in, for tests).
    Protects stdout first: from here on only frames reach it."""
    real_stdout = protect_stdout()
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="chatagent-bridge %(levelname)s %(name)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(LogScrubber())  # the configured secrets masked (`chatagent.scrub`)
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m extension_bridge", add_help=False)
    p.add_argument("--tool-timeout", type=float)
    p.add_argument("--any-origin", action="store_true", help="skip the caller check (development only)")
    opts, rest = p.parse_known_args(argv)
    origins = None if opts.any_origin else DEFAULT_ALLOWED_ORIGINS
    if answer is not None:
        return asyncio.run(serve_stdio(
            answer, rest, stdout=real_stdout, allowed_origins=origins,
            tool_timeout_s=opts.tool_timeout or DEFAULT_TOOL_TIMEOUT_S, warm=warm,
        ))
    return asyncio.run(_serve(rest, real_stdout, tool_timeout=opts.tool_timeout, allowed_origins=origins))


async def _serve(
    argv: Sequence[str], stdout: Any, *, tool_timeout: float | None, allowed_origins: frozenset[str] | None,
) -> int:
    from chatagent.runtime import Runtime
    from chatagent.settings import Settings

    from .answer import AgentAnswerer

    try:
        settings = Settings.load(tool_timeout=tool_timeout)
    except ChatAgentError as exc:  # a broken settings file: the panel must hear why
        _, writer = await open_stdio(sys.stdin.buffer, stdout)
        await writer.send(ErrorMessage(code=exc.code, message=exc.message))
        await writer.aclose()
        return 1
    async with Runtime(settings) as runtime:
        answerer = AgentAnswerer(runtime, flags={"tool_timeout": tool_timeout})
        return await serve_stdio(
            answerer, argv, stdout=stdout, allowed_origins=allowed_origins,
            tool_timeout_s=settings.tool_timeout, warm=answerer.warm, settings=answerer.settings,
            secrets=lambda: runtime.scrubber,
        )
