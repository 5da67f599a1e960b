"""The host loop as a real subprocess speaking frames on stdin/stdout, with a
fake `answer` function in place of the agent."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from extension_bridge.host import origin_from_argv
from extension_bridge.install import EXTENSION_ORIGIN
from extension_bridge.protocol import MAX_OUTGOING_FRAME, ChunkAssembler, FrameReader, FrameWriter

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
PNG = b"\x89PNG\r\n\x1a\nfake"

FAKE_HOST = textwrap.dedent(
    """
    import asyncio, base64, os, sys
    sys.path.insert(0, {root!r})
    from chatagent.events import Done, PassStart, Screenshot, Token, Citation
    from extension_bridge.host import main

    async def answer(ask, tabs):
        yield PassStart(pass_=1)
        q = ask.question
        if q == "crash":
            raise RuntimeError("boom")
        if q == "slow":
            yield Token(text="thinking")
            await asyncio.sleep(60)
        if q == "print":
            print("stray output that must not corrupt frames")
            sys.stdout.write("more stray\\n")
        if q == "tools":
            tab = tabs[0]
            snap = await tab.snapshot()
            yield Token(text=f"initial:{{snap.html}};")
            res = await tab.scroll("down", to_text="Pricing")
            yield Token(text=f"scrolled:{{res.text}}@{{res.scroll_y}};")
            png = await tab.screenshot()
            yield Screenshot(tab_id=tab.tab_id, png_base64=base64.b64encode(png).decode())
        if q == "tool-fail":
            try:
                await tabs[0].screenshot()
            except Exception as exc:
                yield Token(text=f"failed:{{type(exc).__name__}}:{{exc}}")
        if q == "big":
            yield Token(text="x" * 3_000_000)
        if q == "no-done":
            return
        yield Done(answer="answer to " + q, pass_=1,
                   citations=[Citation(tab_id=t.tab_id, url=t.url, title=t.title) for t in tabs])

    async def warm():
        how = os.environ.get("FAKE_WARM", "")
        if how == "fail":
            raise RuntimeError("warm-up exploded")
        if how == "hang":
            await asyncio.sleep(3600)

    raise SystemExit(main(answer, warm=warm))
    """
)


class Peer:
    """The extension's side of the pipe."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout and proc.stdin
        self.proc = proc
        self.reader = FrameReader(proc.stdout)
        self.writer = FrameWriter(proc.stdin)
        self.assembler = ChunkAssembler()
        self.frame_sizes: list[int] = []

    async def send(self, msg: Any) -> None:
        await self.writer.send(msg)

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def recv(self, timeout: float = 60) -> dict[str, Any]:
        # A guard against a hung host, not a time limit: a loaded machine starts it slowly.
        while True:
            payload = await asyncio.wait_for(self.reader.read_frame(), timeout)
            assert payload is not None, "host closed stdout"
            self.frame_sizes.append(len(payload))
            msg = self.assembler.feed(json.loads(payload))
            if msg is not None:
                return msg

    async def events_until_end(self, rid: str) -> list[dict[str, Any]]:
        out = []
        while True:
            msg = await self.recv()
            assert msg["type"] == "event" and msg["id"] == rid, msg
            out.append(msg["event"])
            if msg["event"]["type"] in ("done", "error"):
                return out


@contextlib.asynccontextmanager
async def host(tmp_path: Path, *args: str) -> AsyncIterator[Peer]:
    script = tmp_path / "fake_host.py"
    script.write_text(FAKE_HOST.format(root=str(ROOT)))
    argv = args or (EXTENSION_ORIGIN,)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=2 * 1024 * 1024,
    )
    peer = Peer(proc)
    try:
        yield peer
    finally:
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                proc.stdin.close()  # type: ignore[union-attr]
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()


def ask(q: str, rid: str = "r1", **over: Any) -> dict[str, Any]:
    msg = {
        "type": "ask",
        "id": rid,
        "question": q,
        "tabs": [{"tabId": 7, "url": "https://ex.com/", "title": "Ex", "html": "<p>hello</p>"}],
    }
    msg.update(over)
    return msg


async def test_ping_pong_and_clean_exit_on_eof(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send({"type": "ping"})
        assert await peer.recv() == {"type": "pong", "version": 1}
        peer.proc.stdin.close()  # type: ignore[union-attr]
        assert await asyncio.wait_for(peer.proc.wait(), 10) == 0


@pytest.mark.parametrize("how", ["fail", "hang"])
async def test_a_failing_or_hanging_warm_up_does_not_get_in_the_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setenv("FAKE_WARM", how)
    async with host(tmp_path) as peer:
        await peer.send({"type": "ping"})
        assert await peer.recv() == {"type": "pong", "version": 1}
        await peer.send(ask("what?"))
        assert (await peer.events_until_end("r1"))[-1]["answer"] == "answer to what?"
        peer.proc.stdin.close()  # type: ignore[union-attr]
        assert await asyncio.wait_for(peer.proc.wait(), 10) == 0
        assert peer.proc.stderr
        log = (await peer.proc.stderr.read()).decode()
        assert ("warm-up failed" in log) == (how == "fail"), log


async def test_refuses_unknown_origin(tmp_path: Path) -> None:
    async with host(tmp_path, "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/") as peer:
        msg = await peer.recv()
        assert msg["type"] == "error" and msg["code"] == "bad_origin" and msg["id"] is None
        assert EXTENSION_ORIGIN in msg["message"]
        assert await asyncio.wait_for(peer.proc.wait(), 10) == 2


async def test_bad_frames_get_errors_and_serving_continues(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send_raw(struct.pack("<I", 5) + b"{nope")
        err = await peer.recv()
        assert (err["type"], err["code"], err["id"]) == ("error", "bad_json", None)
        await peer.send_raw(struct.pack("<I", 4) + b'"\xff"\n'[:4])
        assert (await peer.recv())["code"] == "bad_json"
        await peer.send({"type": "launch_missiles", "id": "x1"})
        err = await peer.recv()
        assert err["code"] == "unknown_type" and err["id"] == "x1"
        await peer.send(ask("q", tabs=[{"tabId": i, "url": "u"} for i in range(30)]))
        err = await peer.recv()
        assert err["code"] == "too_many_tabs" and err["id"] == "r1"
        # 40 MiB frame: refused, skipped, and the next frame is still served.
        size = 40 * 1024 * 1024
        await peer.send_raw(struct.pack("<I", size))
        block = b" " * (1024 * 1024)
        for _ in range(40):
            await peer.send_raw(block)
        err = await peer.recv()
        assert err["code"] == "too_large" and str(size) in err["message"]
        await peer.send({"type": "ping"})
        assert (await peer.recv())["type"] == "pong"


async def test_ask_streams_events_to_done(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("what?"))
        events = await peer.events_until_end("r1")
        assert [e["type"] for e in events] == ["pass_start", "done"]
        assert events[-1]["answer"] == "answer to what?"
        assert events[-1]["citations"] == [
            {"tab_id": "7", "url": "https://ex.com/", "title": "Ex", "label": "", "block": "", "quote": ""}
        ]


async def test_stray_prints_do_not_corrupt_frames(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("print"))
        events = await peer.events_until_end("r1")
        assert events[-1]["type"] == "done"
        peer.proc.stdin.close()  # type: ignore[union-attr]
        await peer.proc.wait()
        err = await peer.proc.stderr.read()  # type: ignore[union-attr]
        assert b"stray output" in err and b"more stray" in err


async def test_tool_round_trip_through_the_extension(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("tools"))
        events = []
        while True:
            msg = await peer.recv()
            if msg["type"] == "tool_request":
                assert msg["id"] == "r1" and msg["tabId"] == 7
                reply: dict[str, Any] = {"type": "tool_result", "id": "r1", "callId": msg["callId"], "ok": True}
                if msg["name"] == "scroll":
                    assert msg["args"] == {"direction": "down", "toText": "Pricing"}
                    reply |= {
                        "text": "Pricing: $5",
                        "scroll": {"scrollY": 900, "pageHeight": 3000, "viewportHeight": 700, "atBottom": False},
                    }
                elif msg["name"] == "screenshot":
                    reply["png"] = base64.b64encode(PNG).decode()
                await peer.send(reply)
                continue
            events.append(msg["event"])
            if msg["event"]["type"] in ("done", "error"):
                break
        tokens = "".join(e["text"] for e in events if e["type"] == "token")
        assert tokens == "initial:<p>hello</p>;scrolled:Pricing: $5@900;"
        shot = next(e for e in events if e["type"] == "screenshot")
        assert base64.b64decode(shot["png_base64"]) == PNG and shot["tab_id"] == "7"
        assert events[-1]["type"] == "done"


async def test_tool_failure_reaches_the_agent(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("tool-fail"))
        assert (await peer.recv())["event"]["type"] == "pass_start"
        req = await peer.recv()
        assert req["type"] == "tool_request" and req["name"] == "screenshot"
        await peer.send(
            {"type": "tool_result", "id": "r1", "callId": req["callId"], "ok": False, "error": "Tab 7 was closed."}
        )
        events = await peer.events_until_end("r1")
        assert events[0] == {"type": "token", "text": "failed:ToolError:Screenshot of tab 7 failed: Tab 7 was closed."}


async def test_big_event_is_chunked_under_1mib(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("big"))
        events = await peer.events_until_end("r1")
        assert len(events[1]["text"]) == 3_000_000
        assert max(peer.frame_sizes) <= MAX_OUTGOING_FRAME < 1024 * 1024
        assert len(peer.frame_sizes) >= 5


async def test_cancel_ends_with_aborted_error(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("slow"))
        assert (await peer.recv())["event"]["type"] == "pass_start"
        assert (await peer.recv())["event"] == {"type": "token", "text": "thinking"}
        await peer.send(ask("slow"))  # same id while running
        dup = await peer.recv()
        assert dup["type"] == "error" and dup["code"] == "duplicate_id" and dup["id"] == "r1"
        await peer.send({"type": "cancel", "id": "r1"})
        end = await peer.recv()
        assert end == {
            "type": "event",
            "id": "r1",
            "event": {"type": "error", "code": "aborted", "message": "Cancelled."},
        }
        await peer.send({"type": "cancel", "id": "r1"})  # late cancel: harmless
        await peer.send(ask("again", rid="r2"))
        assert (await peer.events_until_end("r2"))[-1]["answer"] == "answer to again"


async def test_agent_crash_and_missing_done_become_error_events(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("crash"))
        events = await peer.events_until_end("r1")
        assert events[-1]["type"] == "error" and events[-1]["code"] == "internal" and "boom" in events[-1]["message"]
        await peer.send(ask("no-done", rid="r2"))
        events = await peer.events_until_end("r2")
        assert events[-1]["code"] == "internal" and "without an answer" in events[-1]["message"]


async def test_eof_while_asks_run_exits_promptly(tmp_path: Path) -> None:
    async with host(tmp_path) as peer:
        await peer.send(ask("slow"))
        await peer.recv()
        await peer.send_raw(struct.pack("<I", 100) + b'{"type"')  # truncated frame, then EOF
        peer.proc.stdin.close()  # type: ignore[union-attr]
        assert await asyncio.wait_for(peer.proc.wait(), 10) == 0


@pytest.mark.parametrize(
    ("argv", "origin"),
    [
        (["chrome-extension://abc/"], "chrome-extension://abc/"),
        (["chrome-extension://abc/", "--parent-window=0"], "chrome-extension://abc/"),
        (["/path/to/manifest.json", "chatagent-bridge@chatagent.dev"], "chatagent-bridge@chatagent.dev"),
        ([], None),
    ],
)
def test_origin_from_argv(argv: list[str], origin: str | None) -> None:
    assert origin_from_argv(argv) == origin
