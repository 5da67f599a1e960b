"""What a model server's HTTP responses may make the process hold: each body is
read through a counter (`MAX_MODEL_RESPONSE_BYTES`, else `ModelReplyTooLargeError`)
and, while it is open, registered with the question that opened it
(`deadline.QUESTION_CONNECTIONS`), so that a question abandoned at its deadline
can close it. Installed as an httpx response hook on the client a provider
gives its chat model (`bounded_client`), which keeps the client's own
transport, proxies and pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from ..deadline import QUESTION_CONNECTIONS, Connections
from ..errors import ModelReplyTooLargeError
from ..limits import MAX_MODEL_RESPONSE_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable


def _stream_bases() -> tuple[type, ...]:
    """httpx's body class, and httpx2's: the OpenAI SDK moved to httpx2 (httpx's fork),
    whose responses take only a body of its own class."""
    try:
        import httpx2
    except ImportError:
        return (httpx.AsyncByteStream,)
    return (httpx.AsyncByteStream, httpx2.AsyncByteStream)


class BoundedStream(*_stream_bases()):  # type: ignore[misc]
    """A response body that raises once more than `max_bytes` have come."""

    def __init__(self, inner: Any, max_bytes: int, connections: Connections | None) -> None:
        self.inner = inner
        self.max_bytes = max_bytes
        self.connections = connections
        if connections is not None:
            connections.add(self)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        got = 0
        async for piece in self.inner:
            got += len(piece)
            if got > self.max_bytes:
                raise ModelReplyTooLargeError(
                    f"The model service's reply passed {self.max_bytes / 1e6:g} MB: it was stopped there.")
            yield piece

    async def aclose(self) -> None:
        if self.connections is not None:
            self.connections.discard(self)
        await self.inner.aclose()


def bound_responses(max_bytes: int = MAX_MODEL_RESPONSE_BYTES) -> "Callable[[Any], object]":
    """An httpx (or httpx2) response hook that bounds each body (read or streamed) to `max_bytes`."""

    async def hook(response: Any) -> None:
        response.stream = BoundedStream(response.stream, max_bytes, QUESTION_CONNECTIONS.get())  # type: ignore[arg-type]

    return hook


def bounded_client(max_bytes: int = MAX_MODEL_RESPONSE_BYTES) -> Any:
    """The OpenAI SDK's own default async client (its timeouts, pool and redirects), its bodies bounded."""
    from openai import DefaultAsyncHttpxClient

    return DefaultAsyncHttpxClient(event_hooks={"response": [bound_responses(max_bytes)]})
