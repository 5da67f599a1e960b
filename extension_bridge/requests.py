"""Host → extension tool calls: send a `tool_request`, await its `tool_result`.

The host loop owns the pipe; it hands every incoming `tool_result` to
`ToolRequester.resolve` (or, when its body is invalid, to `reject`), which
wakes the task waiting on that `callId`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from chatagent.errors import ToolError
from chatagent.limits import DEFAULT_TOOL_TIMEOUT_S

from .errors import BridgeError
from .messages import ToolName, ToolRequestMessage, ToolResultMessage

log = logging.getLogger(__name__)

SendFn = Callable[[ToolRequestMessage], Awaitable[Any]]


def malformed(detail: str) -> str:
    return (
        f"the extension sent a malformed result ({detail}); "
        "if this keeps happening, update or reload the chatagent extension."
    )


class TabTurns:
    """One lock per Chrome tab. Tools on a tab share its state (scroll
    position, which tab is in front), so one request at a time per tab,
    whichever ask sent it; other tabs are not held up."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}  # holders and waiters: a lock nobody uses is dropped

    @contextlib.asynccontextmanager
    async def turn(self, tab_id: int) -> AsyncIterator[None]:
        lock = self._locks.setdefault(tab_id, asyncio.Lock())
        self._users[tab_id] = self._users.get(tab_id, 0) + 1
        try:
            async with lock:  # released on return, error, timeout and cancellation alike
                yield
        finally:
            self._users[tab_id] -= 1
            if not self._users[tab_id]:
                del self._users[tab_id], self._locks[tab_id]

    def busy(self, tab_id: int) -> bool:
        lock = self._locks.get(tab_id)
        return lock is not None and lock.locked()


class ToolRequester:
    """Pending tool calls keyed by `callId`.

    `request()` always removes its entry when it returns, raises, times out or
    is cancelled, so an abandoned call cannot leak; a `tool_result` arriving
    after that is reported as unknown by `resolve()` and dropped.

    The host has one requester for all its asks, so its `TabTurns` serialise
    the requests for each Chrome tab across asks.
    """

    def __init__(self, send: SendFn, *, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self._pending: dict[str, tuple[str, asyncio.Future[ToolResultMessage]]] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None
        self.tabs = TabTurns()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def pending_call_ids(self, request_id: str | None = None) -> list[str]:
        return [cid for cid, (rid, _) in self._pending.items() if request_id is None or rid == request_id]

    async def request(
        self,
        request_id: str,
        tab_id: int,
        name: ToolName,
        args: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        label: str | None = None,
    ) -> ToolResultMessage:
        """Ask the extension to run tool `name` on Chrome tab `tab_id` for request
        `request_id`, once no other request for that tab is outstanding (the
        wait for the tab is not part of the timeout). Raises `ToolError` on
        timeout, on `ok: false` (with the extension's message), on a malformed
        result and when the pipe is closed."""
        what = label or f"{name} on tab {tab_id}"
        if self._closed is not None:
            raise ToolError(f"{what} failed: {self._closed}")
        async with self.tabs.turn(tab_id):
            result = await self._request(request_id, tab_id, name, args, timeout_s, what)
        if not result.ok:
            raise ToolError(f"{what} failed: {result.error or 'the extension reported an unspecified error'}")
        missing = result.missing_for(name)
        if missing:
            raise ToolError(f"{what} failed: " + malformed("missing " + ", ".join(missing)))
        return result

    async def _request(
        self,
        request_id: str,
        tab_id: int,
        name: ToolName,
        args: dict[str, Any] | None,
        timeout_s: float | None,
        what: str,
    ) -> ToolResultMessage:
        if self._closed is not None:  # closed while waiting for the tab
            raise ToolError(f"{what} failed: {self._closed}")
        call_id = f"c{next(self._ids)}"
        fut: asyncio.Future[ToolResultMessage] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = (request_id, fut)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            try:
                await self._send(
                    ToolRequestMessage(id=request_id, call_id=call_id, name=name, args=args or {}, tab_id=tab_id)
                )
            except BridgeError as exc:
                raise ToolError(f"{what} failed: could not reach the extension ({exc.message}).") from exc
            try:
                result = await asyncio.wait_for(fut, timeout)
            except ToolError as exc:  # failed by close()/fail_request()
                raise ToolError(f"{what} failed: {exc.message}") from None
            except asyncio.TimeoutError:  # not the builtin before Python 3.11
                raise ToolError(
                    f"{what} timed out after {timeout:g}s: the extension did not answer "
                    "(the tab may be closed, frozen or busy)."
                ) from None
        finally:
            # Whatever happened (including cancellation of the caller), forget the call.
            self._pending.pop(call_id, None)
            if not fut.done():
                fut.cancel()
        return result

    def resolve(self, result: ToolResultMessage) -> bool:
        """Deliver an incoming `tool_result`. False when nobody waits for it
        (late after a timeout, cancelled, duplicated, or for another request id)."""
        entry = self._pending.get(result.call_id)
        if entry is None:
            log.info("dropping tool_result for unknown callId %s", result.call_id)
            return False
        rid, fut = entry
        if rid != result.id:
            log.warning("tool_result callId %s names request %s, expected %s", result.call_id, result.id, rid)
            return False
        if fut.done():
            return False
        fut.set_result(result)
        return True

    def reject(self, request_id: str, call_id: str, detail: str) -> bool:
        """Fail a pending call whose `tool_result` was invalid (`detail` says
        how): its caller gets a `ToolError` now. False when nobody waits for it."""
        entry = self._pending.get(call_id)
        if entry is None or entry[0] != request_id or entry[1].done():
            log.info("dropping an invalid tool_result for callId %s of %s: nobody waits for it", call_id, request_id)
            return False
        entry[1].set_exception(ToolError(malformed(detail)))
        return True

    def fail_request(self, request_id: str, reason: str) -> int:
        """Fail the pending calls of one request (e.g. on `cancel`)."""
        return self._fail(reason, request_id)

    def close(self, reason: str = "the extension disconnected") -> int:
        """Fail every pending call and refuse new ones (pipe gone)."""
        self._closed = reason
        return self._fail(reason, None)

    def _fail(self, reason: str, request_id: str | None) -> int:
        n = 0
        for cid in self.pending_call_ids(request_id):
            _, fut = self._pending[cid]
            if not fut.done():
                fut.set_exception(ToolError(reason))
                n += 1
        return n
