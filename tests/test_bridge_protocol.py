"""Native-messaging framing: round trips, bad input, size limits, splitting."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatagent.events import Done, Screenshot, Token
from extension_bridge.errors import BadJsonError, FrameTooLargeError, TruncatedFrameError
from extension_bridge.messages import EventMessage
from extension_bridge.protocol import (
    DISCARD_CHUNK,
    MAX_INCOMING_FRAME,
    MAX_OUTGOING_FRAME,
    ChunkAssembler,
    FrameReader,
    FrameWriter,
    decode_payload,
    encode_frame,
    encode_payload,
    split_payload,
)

MiB = 1024 * 1024


class Sink:
    """StreamWriter stand-in that keeps what was written."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, b: bytes) -> None:
        self.data += b

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        pass


def frames_of(data: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(bytes(data[i + 4 : i + 4 + n]))
        i += 4 + n
    assert i == len(data)
    return out


def reader_for(data: bytes, *, eof: bool = True, max_frame: int = MAX_INCOMING_FRAME) -> FrameReader:
    r = asyncio.StreamReader()
    r.feed_data(data)
    if eof:
        r.feed_eof()
    return FrameReader(r, max_frame=max_frame)


def frame(obj: Any) -> bytes:
    return encode_frame(json.dumps(obj).encode())


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)


# ---------------------------------------------------------------- round trips


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(json_values, min_size=1, max_size=4))
async def test_round_trip_arbitrary_json(values: list[Any]) -> None:
    sink = Sink()
    w = FrameWriter(sink)
    for v in values:
        assert await w.send({"type": "x", "v": v}) == 1
    r = reader_for(bytes(sink.data))
    for v in values:
        assert await r.read_json() == {"type": "x", "v": v}
    assert await r.read_frame() is None


@settings(max_examples=100, deadline=None)
@given(value=json_values, text=st.text(min_size=1, max_size=400))
async def test_split_round_trip_arbitrary_json(value: Any, text: str) -> None:
    # A tiny frame limit forces splitting of almost everything.
    sink = Sink()
    w = FrameWriter(sink, max_frame=300)
    msg = {"type": "event", "id": "r1", "event": {"type": "token", "text": text}, "v": value}
    await w.send(msg)
    assembler = ChunkAssembler()
    results = []
    for payload in frames_of(bytes(sink.data)):
        assert len(payload) <= 300
        out = assembler.feed(json.loads(payload))
        if out is not None:
            results.append(out)
    assert results == [msg]
    assert assembler.pending == 0


async def test_read_frames_in_order_then_clean_eof() -> None:
    r = reader_for(frame({"type": "ping"}) + frame([1, 2]) + frame("x"))
    assert await r.read_json() == {"type": "ping"}
    assert await r.read_json() == [1, 2]
    assert await r.read_json() == "x"
    with pytest.raises(EOFError) as ei:
        await r.read_json()
    assert not isinstance(ei.value, TruncatedFrameError)


async def test_json_null_is_a_frame_not_eof() -> None:
    r = reader_for(frame(None))
    assert await r.read_json() is None
    assert await r.read_frame() is None


def test_lone_surrogates_still_encode() -> None:
    payload = encode_payload({"text": "broken \ud800 text"})
    assert json.loads(payload) == {"text": "broken \ud800 text"}


def test_encode_pydantic_message_uses_wire_names() -> None:
    payload = encode_payload(EventMessage.wrap("r1", Done(answer="a", pass_=1)))
    data = json.loads(payload)
    assert data["event"]["pass"] == 1 and data["id"] == "r1"


# ---------------------------------------------------------------- bad input


async def test_truncated_header_ends_session() -> None:
    r = reader_for(frame({"a": 1}) + b"\x05\x00")
    assert await r.read_json() == {"a": 1}
    with pytest.raises(TruncatedFrameError):
        await r.read_frame()


async def test_truncated_body_ends_session() -> None:
    r = reader_for(struct.pack("<I", 100) + b'{"type": "pi')
    with pytest.raises(TruncatedFrameError) as ei:
        await r.read_json()
    assert isinstance(ei.value, EOFError)  # one `except EOFError` ends a loop
    assert "12 of 100" in ei.value.message


async def test_non_utf8_is_bad_json_and_stream_continues() -> None:
    bad = b'{"type": "\xff\xfe"}'
    r = reader_for(encode_frame(bad) + frame({"type": "ping"}))
    with pytest.raises(BadJsonError) as ei:
        await r.read_json()
    assert ei.value.code == "bad_json"
    assert "UTF-8" in ei.value.message and "0xff" in ei.value.message
    assert await r.read_json() == {"type": "ping"}


@pytest.mark.parametrize("payload", [b"", b"{", b'{"a":1,}', b"NaN", b'{"a": Infinity}', b"[" * 100_000])
async def test_invalid_json_is_bad_json_and_stream_continues(payload: bytes) -> None:
    r = reader_for(encode_frame(payload) + frame({"type": "ping"}))
    with pytest.raises(BadJsonError):
        await r.read_json()
    assert await r.read_json() == {"type": "ping"}


def test_decode_payload_reports_position() -> None:
    with pytest.raises(BadJsonError, match="line 1 column 9"):
        decode_payload(b'{"a": 1 "b": 2}')


class RecordingReader(asyncio.StreamReader):
    """Records how much the frame reader asks for at once."""

    def __init__(self) -> None:
        super().__init__()
        self.largest_request = 0

    async def read(self, n: int = -1) -> bytes:
        assert n > 0, "unbounded read"
        self.largest_request = max(self.largest_request, n)
        return await super().read(n)

    async def readexactly(self, n: int) -> bytes:
        self.largest_request = max(self.largest_request, n)
        return await super().readexactly(n)


async def test_oversized_frame_is_skipped_in_bounded_pieces_and_next_frame_served() -> None:
    size = MAX_INCOMING_FRAME + 5 * MiB
    raw = RecordingReader()
    reader = FrameReader(raw)

    async def produce() -> None:
        # Streamed in, like a pipe: the reader never sees the frame whole.
        raw.feed_data(struct.pack("<I", size))
        block = b"x" * MiB
        left = size
        while left:
            n = min(left, MiB)
            raw.feed_data(block[:n])
            left -= n
            while len(raw._buffer) > 2 * MiB:  # crude flow control
                await asyncio.sleep(0)
        raw.feed_data(frame({"type": "ping"}))
        raw.feed_eof()

    producer = asyncio.create_task(produce())
    with pytest.raises(FrameTooLargeError) as ei:
        await reader.read_frame()
    assert ei.value.code == "too_large" and ei.value.size == size
    assert str(MAX_INCOMING_FRAME) in ei.value.message
    assert raw.largest_request <= DISCARD_CHUNK
    assert await reader.read_json() == {"type": "ping"}
    await producer


async def test_oversized_frame_cut_short_is_truncation() -> None:
    r = reader_for(struct.pack("<I", 1000) + b"x" * 10, max_frame=100)
    with pytest.raises(TruncatedFrameError):
        await r.read_frame()


async def test_frame_at_exact_limit_is_accepted() -> None:
    payload = json.dumps("a" * 95).encode()
    r = reader_for(encode_frame(payload), max_frame=len(payload))
    assert await r.read_json() == "a" * 95


# ---------------------------------------------------------------- outgoing size


async def test_big_token_event_is_split_and_reassembled() -> None:
    text = 'héllo "quoted" \\ wörld 🎉 \n' * 120_000  # ~3.5 MB of JSON, escapes and astral chars
    sink = Sink()
    w = FrameWriter(sink)
    msg = EventMessage.wrap("req-1", Token(text=text))
    n = await w.send(msg)
    payloads = frames_of(bytes(sink.data))
    assert n == len(payloads) > 2
    assert all(len(p) <= MAX_OUTGOING_FRAME < MiB for p in payloads)
    first = json.loads(payloads[0])
    assert first["type"] == "chunk" and first["id"] == "req-1" and first["seq"] == 0 and not first["final"]
    assert json.loads(payloads[-1])["final"] is True
    a = ChunkAssembler()
    out = [m for m in (a.feed(json.loads(p)) for p in payloads) if m is not None]
    assert out == [msg.to_wire()]


async def test_big_screenshot_event_split_every_frame_under_1mib() -> None:
    import base64
    import os

    png = base64.b64encode(os.urandom(3 * MiB)).decode()
    sink = Sink()
    w = FrameWriter(sink)
    await w.send(EventMessage.wrap("r", Screenshot(tab_id="7", png_base64=png)))
    await w.send({"type": "pong", "version": 1})
    payloads = frames_of(bytes(sink.data))
    assert all(len(p) < MiB for p in payloads)
    assert w.largest_frame <= MAX_OUTGOING_FRAME
    # Base64 needs no escaping: ~1 MB of data per frame, so 5 chunks for 4 MB.
    assert len(payloads) == 6
    a = ChunkAssembler()
    msgs = [m for m in (a.feed(json.loads(p)) for p in payloads) if m is not None]
    assert msgs[0]["event"]["png_base64"] == png
    assert msgs[1] == {"type": "pong", "version": 1}


async def test_chunks_of_concurrent_sends_do_not_interleave() -> None:
    sink = Sink()
    w = FrameWriter(sink, max_frame=400)
    msgs = [{"type": "event", "id": f"r{i}", "event": {"type": "token", "text": str(i) * 3000}} for i in range(5)]
    await asyncio.gather(*(w.send(m) for m in msgs))
    a = ChunkAssembler()
    out = [m for m in (a.feed(json.loads(p)) for p in frames_of(bytes(sink.data))) if m is not None]
    assert sorted(out, key=lambda m: m["id"]) == msgs


def test_split_payload_worst_case_escaping() -> None:
    # Every character doubles when escaped into `data`; frames must still fit.
    payload = json.dumps({"t": '"\\' * 5000}).encode()
    frames = split_payload(payload, request_id=None, chunk_id="k1", max_frame=1000)
    assert all(len(f) <= 1000 for f in frames)
    assert json.loads("".join(json.loads(f)["data"] for f in frames)) == {"t": '"\\' * 5000}


def test_assembler_rejects_gap() -> None:
    a = ChunkAssembler()
    a.feed({"type": "chunk", "chunk": "k", "seq": 0, "final": False, "data": "["})
    with pytest.raises(BadJsonError):
        a.feed({"type": "chunk", "chunk": "k", "seq": 2, "final": True, "data": "]"})


async def test_writer_reports_closed_pipe() -> None:
    from extension_bridge.errors import BridgeClosedError

    class Broken(Sink):
        async def drain(self) -> None:
            raise BrokenPipeError("gone")

    with pytest.raises(BridgeClosedError):
        await FrameWriter(Broken()).send({"type": "pong"})


async def test_real_pipe_round_trip() -> None:
    """Through an OS pipe with asyncio transports, as with a real browser."""
    import os

    from extension_bridge.protocol import open_stdio

    r_fd, w_fd = os.pipe()
    r2_fd, w2_fd = os.pipe()
    with open(r_fd, "rb", buffering=0) as rin, open(w2_fd, "wb", buffering=0) as wout:
        reader, writer = await open_stdio(rin, wout)
        peer_reader, peer_writer = await open_stdio(open(r2_fd, "rb", buffering=0), open(w_fd, "wb", buffering=0))
        await peer_writer.send({"type": "ping"})
        assert await reader.read_json() == {"type": "ping"}
        big = {"type": "event", "id": "r", "event": {"type": "token", "text": "z" * (3 * MiB)}}
        a = ChunkAssembler()

        async def receive() -> Any:
            got = None
            while got is None:
                got = a.feed(await peer_reader.read_json())
            return got

        # Concurrently: drain() waits for the peer to empty the 64 KiB pipe.
        n, got = await asyncio.gather(writer.send(big), receive())
        assert n == 4 and got == big
        await peer_writer.aclose()
        with pytest.raises(EOFError):
            await reader.read_json()
        await writer.aclose()
