"""Chrome native-messaging framing: a 32-bit little-endian length, then that
many bytes of UTF-8 JSON, in both directions. See PROTOCOL.md.

Two asymmetric limits shape this module:

* Chrome closes the port if the host sends a frame over 1 MiB, so `FrameWriter`
  splits any bigger message into `chunk` frames that the extension reassembles.
* We refuse frames from the browser over `MAX_INCOMING_FRAME` (32 MiB) without
  holding them in memory: the payload is read and dropped in small pieces, so
  the stream stays in sync and the session goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import struct
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from pydantic import BaseModel

from .errors import BadJsonError, BridgeClosedError, FrameTooLargeError, TruncatedFrameError

log = logging.getLogger(__name__)

HEADER = struct.Struct("<I")
#: Chrome's own cap on host → browser messages is 1024 * 1024 bytes; keep a margin.
MAX_OUTGOING_FRAME = 1_000_000
#: Our cap on browser → host frames (Chrome allows up to 64 MiB).
MAX_INCOMING_FRAME = 32 * 1024 * 1024
#: Oversized frames are skipped this many bytes at a time.
DISCARD_CHUNK = 64 * 1024

__all__ = [
    "DISCARD_CHUNK",
    "HEADER",
    "MAX_INCOMING_FRAME",
    "MAX_OUTGOING_FRAME",
    "ChunkAssembler",
    "FrameReader",
    "FrameWriter",
    "decode_payload",
    "encode_frame",
    "encode_payload",
    "open_stdio",
    "protect_stdout",
    "split_payload",
]


# ---------------------------------------------------------------- encoding


def encode_payload(message: BaseModel | Mapping[str, Any] | Any) -> bytes:
    """Serialise a message (pydantic model or plain JSON value) to compact UTF-8 JSON."""
    if isinstance(message, BaseModel):
        to_wire = getattr(message, "to_wire", None)  # messages know their own wire shape
        message = to_wire() if callable(to_wire) else message.model_dump(mode="json", by_alias=True, exclude_none=True)
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (e.g. from a page's broken text) cannot be UTF-8;
        # ASCII escapes (\udXXX) keep them representable and JS parses them.
        return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def encode_frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_payload(payload: bytes) -> Any:
    """UTF-8 JSON bytes → value; `BadJsonError` with a precise reason otherwise."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJsonError(
            f"Frame is not valid UTF-8: byte 0x{payload[exc.start]:02x} at offset {exc.start}. "
            "Native messages must be UTF-8 JSON."
        ) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise BadJsonError(f"Frame is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    except ValueError as exc:  # NaN / Infinity
        raise BadJsonError(f"Frame is not valid JSON: {exc}.") from None
    except RecursionError:
        raise BadJsonError("Frame is not valid JSON: nested too deeply.") from None


# ---------------------------------------------------------------- splitting

_CHUNK_OVERHEAD = 256  # generous bound on a chunk frame's JSON besides `data`


def split_payload(
    payload: bytes, *, request_id: str | None, chunk_id: str, max_frame: int = MAX_OUTGOING_FRAME
) -> list[bytes]:
    """Split one serialised message into `chunk` frame payloads, each ≤ `max_frame`.

    `data` carries consecutive slices of the message's JSON *text*; the receiver
    concatenates the slices of one `chunk` id in `seq` order and parses the result.
    Slicing text (not bytes) never cuts a code point, and slices are sized by
    their encoded length, since escaping can grow them (`"` → `\\"`).
    """
    if max_frame <= _CHUNK_OVERHEAD + len(chunk_id) + len(request_id or "") * 6:
        raise ValueError(f"max_frame={max_frame} is too small to carry chunks")
    text = payload.decode("utf-8")
    out: list[bytes] = []
    start = 0
    seq = 0
    while start < len(text) or not out:
        n = min(len(text) - start, max_frame)
        while True:
            piece = text[start : start + n]
            final = start + n >= len(text)
            frame = encode_payload(
                {"type": "chunk", "id": request_id, "chunk": chunk_id, "seq": seq, "final": final, "data": piece}
            )
            if len(frame) <= max_frame:
                break
            # Shrink in proportion to the overshoot; always make progress.
            n = max(1, min(n - 1, n * (max_frame - _CHUNK_OVERHEAD) // len(frame)))
        out.append(frame)
        start += n
        seq += 1
    return out


class ChunkAssembler:
    """Reassembles `chunk` frames (the Python twin of the extension's reassembler:
    used by tests and by any Python client of the host)."""

    def __init__(self, max_bytes: int = 256 * 1024 * 1024) -> None:
        self._parts: dict[str, list[str]] = {}
        self._sizes: dict[str, int] = {}
        self._max = max_bytes

    def feed(self, frame: Mapping[str, Any]) -> Any | None:
        """Returns the whole message when `frame` is the final chunk, else None.
        Non-chunk frames pass straight through."""
        if frame.get("type") != "chunk":
            return frame
        cid = str(frame["chunk"])
        parts = self._parts.setdefault(cid, [])
        if frame["seq"] != len(parts):
            self._parts.pop(cid, None)
            raise BadJsonError(f"chunk {cid}: expected seq {len(parts)}, got {frame['seq']}")
        parts.append(frame["data"])
        self._sizes[cid] = self._sizes.get(cid, 0) + len(frame["data"])
        if self._sizes[cid] > self._max:
            self._parts.pop(cid, None)
            raise BadJsonError(f"chunk {cid}: reassembled message over {self._max} characters")
        if not frame["final"]:
            return None
        self._sizes.pop(cid, None)
        return json.loads("".join(self._parts.pop(cid)))

    @property
    def pending(self) -> int:
        return len(self._parts)


# ---------------------------------------------------------------- reading


class FrameReader:
    """Reads frames from an `asyncio.StreamReader`.

    `read_frame()` → payload bytes, or None at a clean EOF (between frames).
    `read_json()` → decoded value; raises `EOFError` at a clean EOF.
    Both raise `TruncatedFrameError` (also an `EOFError`) on EOF mid-frame and
    `FrameTooLargeError` for an oversized frame *after* skipping it, so the
    caller can answer with an error frame and keep reading.
    """

    def __init__(self, reader: asyncio.StreamReader, *, max_frame: int = MAX_INCOMING_FRAME) -> None:
        self._reader = reader
        self.max_frame = max_frame

    async def read_frame(self) -> bytes | None:
        try:
            header = await self._reader.readexactly(HEADER.size)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise TruncatedFrameError(f"EOF inside a frame header ({len(exc.partial)} of 4 bytes)") from None
        (length,) = HEADER.unpack(header)
        if length > self.max_frame:
            await self._discard(length)
            raise FrameTooLargeError(
                f"Frame of {length} bytes refused: the limit is {self.max_frame} bytes.", size=length
            )
        try:
            return await self._reader.readexactly(length)
        except asyncio.IncompleteReadError as exc:
            raise TruncatedFrameError(f"EOF inside a frame: got {len(exc.partial)} of {length} bytes") from None

    async def _discard(self, length: int) -> None:
        left = length
        while left:
            piece = await self._reader.read(min(left, DISCARD_CHUNK))
            if not piece:
                raise TruncatedFrameError(f"EOF inside an oversized frame ({length - left} of {length} bytes skipped)")
            left -= len(piece)
        log.warning("skipped an oversized frame of %d bytes", length)

    async def read_json(self) -> Any:
        payload = await self.read_frame()
        if payload is None:
            raise EOFError("end of stream")
        return decode_payload(payload)


# ---------------------------------------------------------------- writing


class _FileSink:
    """StreamWriter look-alike over a blocking binary file (fallback where the
    output is a regular file, which asyncio pipe transports refuse)."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._buf: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._buf.append(data)

    async def drain(self) -> None:
        data, self._buf = b"".join(self._buf), []
        if data:
            await asyncio.to_thread(self._write_all, data)

    def _write_all(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        try:
            self._file.flush()
        except (OSError, ValueError):
            pass

    async def wait_closed(self) -> None:
        return None


class FrameWriter:
    """Writes messages as frames. Messages over `max_frame` go out as a run of
    `chunk` frames; a lock keeps one message's chunks contiguous. `scrub`:
    what each message's JSON becomes before it is written (the host masks
    its secrets there: `chatagent.scrub`)."""

    def __init__(
        self, sink: asyncio.StreamWriter | BinaryIO | Any, *, max_frame: int = MAX_OUTGOING_FRAME,
        scrub: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self._sink: Any = sink if hasattr(sink, "drain") else _FileSink(sink)
        self.max_frame = max_frame
        self._scrub = scrub
        self._lock = asyncio.Lock()
        self._chunk_ids = itertools.count(1)
        self.frames_sent = 0
        self.largest_frame = 0

    def frames_for(self, message: BaseModel | Mapping[str, Any]) -> list[bytes]:
        """The frame payloads `send` would write (split when too large)."""
        payload = encode_payload(message)
        if self._scrub is not None:
            payload = self._scrub(payload)
        if len(payload) <= self.max_frame:
            return [payload]
        if isinstance(message, BaseModel):
            rid = getattr(message, "id", None)
        else:
            rid = message.get("id") if isinstance(message, Mapping) else None
        return split_payload(
            payload,
            request_id=rid if isinstance(rid, str) else None,
            chunk_id=f"k{next(self._chunk_ids)}",
            max_frame=self.max_frame,
        )

    async def send(self, message: BaseModel | Mapping[str, Any]) -> int:
        """Write one message; returns the number of frames it took."""
        frames = self.frames_for(message)
        async with self._lock:
            try:
                for payload in frames:
                    self._sink.write(encode_frame(payload))
                    self.largest_frame = max(self.largest_frame, len(payload))
                await self._sink.drain()
            except (ConnectionError, BrokenPipeError, OSError, RuntimeError) as exc:
                raise BridgeClosedError(f"The browser closed the native-messaging pipe: {exc}") from exc
            self.frames_sent += len(frames)
        return len(frames)

    async def aclose(self) -> None:
        try:
            self._sink.close()
            await self._sink.wait_closed()
        except (ConnectionError, OSError, RuntimeError):
            pass


# ---------------------------------------------------------------- stdio


def protect_stdout() -> BinaryIO:
    """Point fd 1 and `sys.stdout` at stderr and return a private handle on the
    real stdout: a stray `print` (ours or a library's, even from C) then cannot
    corrupt the frame stream. Call once, before anything else writes."""
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(real, "wb", buffering=0)


async def open_stdio(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None, *, max_frame: int = MAX_INCOMING_FRAME,
    scrub: Callable[[bytes], bytes] | None = None,
) -> tuple[FrameReader, FrameWriter]:
    """Connect the process's stdin/stdout (or the given binary files) as
    asyncio streams and wrap them as a frame reader and writer (`scrub`: the writer's)."""
    loop = asyncio.get_running_loop()
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    reader = asyncio.StreamReader(limit=DISCARD_CHUNK * 2)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError, NotImplementedError):
        # A regular file (tests, `host < file`): pipe transports refuse those.
        _feed_from_thread(loop, reader, stdin)
    sink: Any
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        sink = asyncio.StreamWriter(transport, protocol, None, loop)
    except (ValueError, OSError, NotImplementedError):
        sink = _FileSink(stdout)
    return FrameReader(reader, max_frame=max_frame), FrameWriter(sink, scrub=scrub)


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, file: BinaryIO) -> None:
    def pump() -> None:
        try:
            while True:
                data = file.read1(DISCARD_CHUNK) if hasattr(file, "read1") else file.read(DISCARD_CHUNK)
                if not data:
                    break
                loop.call_soon_threadsafe(reader.feed_data, data)
        except (OSError, ValueError) as exc:
            log.warning("stdin read failed: %s", exc)
        finally:
            try:
                loop.call_soon_threadsafe(reader.feed_eof)
            except RuntimeError:  # loop already closed
                pass

    threading.Thread(target=pump, name="bridge-stdin", daemon=True).start()
