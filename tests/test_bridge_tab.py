"""BridgeTab against a fake extension peer speaking real frames over a socket pair."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatagent.errors import ToolError
from extension_bridge.messages import AskMessage, ToolResultMessage, parse_message
from extension_bridge.protocol import FrameReader, FrameWriter
from extension_bridge.requests import ToolRequester
from extension_bridge.tab import BridgeTab, tabs_from_ask

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00fake-image-data"

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


@dataclass
class Rig:
    requester: ToolRequester
    requests: list[dict[str, Any]] = field(default_factory=list)
    handler: Handler | None = None
    ext_writer: FrameWriter | None = None


async def _ok(req: dict[str, Any]) -> dict[str, Any] | None:
    name = req["name"]
    base = {"type": "tool_result", "id": req["id"], "callId": req["callId"], "ok": True}
    if name == "snapshot":
        return base | {"html": "<p>fresh</p>", "text": "fresh", "url": "https://ex.com/after", "title": "After"}
    if name == "screenshot":
        return base | {"png": "data:image/png;base64," + base64.b64encode(PNG).decode()}
    if name == "scroll":
        return base | {
            "text": f"viewport {req['args']}",
            "scroll": {"scrollY": 1400.5, "pageHeight": 9000, "viewportHeight": 700, "atBottom": False},
        }
    raise AssertionError(name)


@contextlib.asynccontextmanager
async def rig(timeout_s: float = 5.0) -> AsyncIterator[Rig]:
    """Host side: FrameWriter/Reader + a router feeding tool_results to the
    requester. Extension side: reads tool_requests, answers via `rig.handler`."""
    a, b = socket.socketpair()
    host_r, host_w = await asyncio.open_connection(sock=a)
    ext_r, ext_w = await asyncio.open_connection(sock=b)
    host_writer, host_reader = FrameWriter(host_w), FrameReader(host_r)
    ext_writer, ext_reader = FrameWriter(ext_w), FrameReader(ext_r)
    r = Rig(ToolRequester(host_writer.send, timeout_s=timeout_s), handler=_ok, ext_writer=ext_writer)

    async def extension() -> None:
        while True:
            try:
                req = await ext_reader.read_json()
            except EOFError:
                return
            r.requests.append(req)
            assert r.handler is not None
            reply = await r.handler(req)
            if reply is not None:
                await ext_writer.send(reply)

    async def router() -> None:
        while True:
            try:
                msg = parse_message(await host_reader.read_json())
            except EOFError:
                return
            assert isinstance(msg, ToolResultMessage)
            r.requester.resolve(msg)

    tasks = [asyncio.create_task(extension()), asyncio.create_task(router())]
    try:
        yield r
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        host_w.close()
        ext_w.close()


def make_tab(r: Rig, html: str = "<p>initial</p>") -> BridgeTab:
    return BridgeTab(r.requester, "req-1", 42, "https://ex.com/", "Ex", html, "initial text")


async def test_first_snapshot_is_from_the_ask_then_fresh() -> None:
    async with rig() as r:
        tab = make_tab(r)
        assert tab.tab_id == "42"
        s1 = await tab.snapshot()
        assert (s1.html, s1.visible_text, s1.url, s1.title) == (
            "<p>initial</p>",
            "initial text",
            "https://ex.com/",
            "Ex",
        )
        assert r.requests == []  # no round trip
        s2 = await tab.snapshot()
        assert (s2.html, s2.visible_text, s2.url, s2.title) == (
            "<p>fresh</p>",
            "fresh",
            "https://ex.com/after",
            "After",
        )
        assert s2.tab_id == "42" and tab.url == "https://ex.com/after"
        assert r.requests == [
            {
                "type": "tool_request",
                "id": "req-1",
                "callId": r.requests[0]["callId"],
                "name": "snapshot",
                "args": {},
                "tabId": 42,
            }
        ]
        assert r.requester.pending == 0


async def test_snapshot_without_html_asks_the_extension() -> None:
    async with rig() as r:
        tab = make_tab(r, html="")
        assert (await tab.snapshot()).html == "<p>fresh</p>"
        assert [q["name"] for q in r.requests] == ["snapshot"]


async def test_screenshot_round_trip() -> None:
    async with rig() as r:
        assert await make_tab(r).screenshot() == PNG
        assert r.requests[0]["name"] == "screenshot" and r.requests[0]["tabId"] == 42


async def test_scroll_round_trip_and_invalidates_initial_snapshot() -> None:
    async with rig() as r:
        tab = make_tab(r)
        res = await tab.scroll("down")
        assert res.scroll_y == 1400 and res.page_height == 9000 and res.viewport_height == 700 and not res.at_bottom
        assert res.text == "viewport {'direction': 'down'}"
        res = await tab.scroll(to_text="Pricing")
        assert r.requests[1]["args"] == {"direction": "down", "toText": "Pricing"}
        await tab.snapshot()  # page may have changed: fresh, not the ask's html
        assert [q["name"] for q in r.requests] == ["scroll", "scroll", "snapshot"]


async def test_concurrent_calls_resolved_by_call_id_out_of_order() -> None:
    async with rig() as r:
        held: list[dict[str, Any]] = []

        async def hold_then_reverse(req: dict[str, Any]) -> None:
            held.append(req)
            if len(held) == 3:
                for q in reversed(held):  # answer the first call last
                    assert r.ext_writer is not None
                    await r.ext_writer.send((await _ok(q)) | {"text": f"answer {q['callId']}"})

        r.handler = hold_then_reverse
        tabs = [BridgeTab(r.requester, "req-1", i, f"https://x/{i}") for i in (1, 2, 3)]
        results = await asyncio.gather(*(t.scroll() for t in tabs))
        by_tab = {q["tabId"]: q["callId"] for q in r.requests}
        assert [res.text for res in results] == [f"answer {by_tab[i]}" for i in (1, 2, 3)]
        assert r.requester.pending == 0


async def test_timeout_raises_tool_error_and_cleans_up() -> None:
    async with rig(timeout_s=0.2) as r:

        async def silent(req: dict[str, Any]) -> None:
            return None

        r.handler = silent
        with pytest.raises(ToolError, match=r"Screenshot of tab 42 timed out after 0.2s"):
            await make_tab(r).screenshot()
        assert r.requester.pending == 0


async def test_ok_false_raises_with_the_extensions_message() -> None:
    async with rig() as r:

        async def fail(req: dict[str, Any]) -> dict[str, Any]:
            return {
                "type": "tool_result",
                "id": req["id"],
                "callId": req["callId"],
                "ok": False,
                "error": "Text 'Pricing' not found on the page.",
            }

        r.handler = fail
        with pytest.raises(ToolError) as ei:
            await make_tab(r).scroll(to_text="Pricing")
        assert ei.value.message == "Scrolling of tab 42 failed: Text 'Pricing' not found on the page."
        assert r.requester.pending == 0


async def test_non_png_screenshot_is_a_tool_error() -> None:
    async with rig() as r:

        async def jpeg(req: dict[str, Any]) -> dict[str, Any]:
            return {
                "type": "tool_result",
                "id": req["id"],
                "callId": req["callId"],
                "ok": True,
                "png": base64.b64encode(b"\xff\xd8\xff\xe0jpeg").decode(),
            }

        r.handler = jpeg
        with pytest.raises(ToolError, match="not a PNG"):
            await make_tab(r).screenshot()


async def test_cancellation_cleans_up_and_late_result_is_dropped() -> None:
    async with rig() as r:
        seen = asyncio.Event()
        held: list[dict[str, Any]] = []

        async def hold(req: dict[str, Any]) -> None:
            held.append(req)
            seen.set()
            return None

        r.handler = hold
        task = asyncio.create_task(make_tab(r).screenshot())
        await seen.wait()
        assert r.requester.pending == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert r.requester.pending == 0
        late = ToolResultMessage.model_validate(await _ok(held[0]))
        assert r.requester.resolve(late) is False


async def test_requester_close_fails_pending_and_refuses_new_calls() -> None:
    async with rig() as r:

        async def never(req: dict[str, Any]) -> None:
            return None

        r.handler = never
        task = asyncio.create_task(make_tab(r).snapshot())
        tab2 = make_tab(r, html="")
        await asyncio.sleep(0)
        t2 = asyncio.create_task(tab2.snapshot())
        while r.requester.pending < 1:
            await asyncio.sleep(0.01)
        assert (await task).html == "<p>initial</p>"  # served locally, never pending
        assert r.requester.close("the extension disconnected") == 1
        with pytest.raises(ToolError, match="Reading of tab 42 failed: the extension disconnected"):
            await t2
        with pytest.raises(ToolError, match="disconnected"):
            await tab2.scroll()


async def test_result_for_wrong_request_id_is_ignored() -> None:
    async with rig(timeout_s=0.3) as r:

        async def wrong(req: dict[str, Any]) -> dict[str, Any]:
            return (await _ok(req)) | {"id": "someone-else"}

        r.handler = wrong
        with pytest.raises(ToolError, match="timed out"):
            await make_tab(r).screenshot()


async def test_closed_tab_refuses_tools() -> None:
    async with rig() as r:
        tab = make_tab(r)
        await tab.close()
        await tab.close()
        with pytest.raises(ToolError, match="closed"):
            await tab.screenshot()


def test_tabs_from_ask() -> None:
    ask = AskMessage.model_validate(
        {
            "type": "ask",
            "id": "r",
            "question": "q",
            "tabs": [
                {"tabId": 3, "url": "https://a/", "title": "A", "html": "<b>a</b>"},
                {"tabId": 9, "url": "https://b/"},
            ],
        }
    )
    req = ToolRequester(lambda m: asyncio.sleep(0))
    tabs = tabs_from_ask(ask, req)
    assert [(t.tab_id, t.chrome_tab_id, t.url, t.title, t.request_id) for t in tabs] == [
        ("3", 3, "https://a/", "A", "r"),
        ("9", 9, "https://b/", "", "r"),
    ]
