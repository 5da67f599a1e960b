"""Host → extension tool calls: send a `tool_request`, await its `tool_result`.

The host loop owns the pipe; it hands every incoming `tool_result` to
`ToolRequester.resolve`, which wakes the task waiting on that `callId`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from chatagent.errors import ToolError

from .errors import BridgeError
from .messages import ToolName, ToolRequestMessage, ToolResultMessage

log = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT_S = 20.0

SendFn = Callable[[ToolRequestMessage], Awaitable[Any]]


class ToolRequester:
    """Pending tool calls keyed by `callId`.

    `request()` always removes its entry when it returns, raises, times out or
    is cancelled, so an abandoned call cannot leak; a `tool_result` arriving
    after that is reported as unknown by `resolve()` and dropped.
    """

    def __init__(self, send: SendFn, *, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self._pending: dict[str, tuple[str, asyncio.Future[ToolResultMessage]]] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None

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
        `request_id`. Raises `ToolError` on timeout, on `ok: false` (with the
        extension's message) and when the pipe is closed."""
        what = label or f"{name} on tab {tab_id}"
        if self._closed is not None:
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
        if not result.ok:
            raise ToolError(f"{what} failed: {result.error or 'the extension reported an unspecified error'}")
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
