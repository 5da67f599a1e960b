"""The extension is untrusted input too (issue 14, items 7 and 8). The real host
(`python -m extension_bridge`, the real agent with the offline `extractive`
model) over its pipes, with the test playing the extension:

* browser tools on one Chrome tab run one at a time, across every ask;
* a malformed `tool_result` is a tool error the model sees, and the ask goes on.

Then the pieces that guarantee it: the per-tab turns of `ToolRequester` (a
cancelled or timed-out call gives the tab up) and the validation of results.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatagent.errors import ToolError
from extension_bridge import errors, messages
from extension_bridge.protocol import encode_frame
from extension_bridge.spawn import spawn_host
from extension_bridge.tab import BridgeTab

from test_bridge_host import Peer
from test_bridge_tab import rig
from warm_start import command

# Small, so a conversation of many asks stays within a question's input budget.
PAGE = (
    "<html><head><title>Aurora X14 Pro</title></head><body><h1>Aurora X14 Pro</h1>"
    "<p>A 14-inch laptop with an OLED display and a 72 Wh battery. It costs $1,349.</p>"
    "<p>Free delivery in 3 to 5 working days.</p></body></html>"
)
ANSWER_TEXT = "Returns go to our Tilburg warehouse. The warehouse code is ZX-4471."
# Not in the page the ask carries: pass 2 re-reads the tab, then scrolls for it.
QUESTION = "What is the warehouse code for returns?"
TAB = 41


@contextlib.asynccontextmanager
async def real_host() -> AsyncIterator[Peer]:
    # No API key: the host's default model is the offline extractive one.
    async with spawn_host({"GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}, host=command(module="extension_bridge")) as proc:
        yield Peer(proc)


def ask(rid: str, question: str = QUESTION) -> dict[str, Any]:
    tab = {"tabId": TAB, "url": "https://shop.example/aurora", "title": "Aurora X14 Pro", "html": PAGE}
    return {"type": "ask", "id": rid, "question": question, "tabs": [tab], "noCache": True}


def good_reply(req: dict[str, Any]) -> dict[str, Any]:
    """What a well-behaved extension answers."""
    reply: dict[str, Any] = {"type": "tool_result", "id": req["id"], "callId": req["callId"], "ok": True}
    if req["name"] == "snapshot":
        return reply | {"html": PAGE, "text": "Aurora X14 Pro", "url": "https://shop.example/aurora", "title": "Aurora"}
    if req["name"] == "scroll":
        scroll = {"scrollY": 4200, "pageHeight": 5000, "viewportHeight": 800, "atBottom": True}
        return reply | {"text": ANSWER_TEXT, "scroll": scroll}
    raise AssertionError(f"unexpected tool {req['name']}")


# ---------------------------------------------------------------- item 7


@pytest.mark.e2e
async def test_tools_on_one_tab_run_one_at_a_time_across_asks() -> None:
    outstanding: dict[int, int] = defaultdict(int)
    most: dict[int, int] = defaultdict(int)
    seen: list[tuple[str, str]] = []
    ends: dict[str, dict[str, Any]] = {}
    replies: list[asyncio.Task[None]] = []

    async with real_host() as peer:

        async def answer_later(req: dict[str, Any]) -> None:
            # Hold each request a moment while frames keep being read: a host
            # that lets a second request for the tab out meanwhile is caught.
            await asyncio.sleep(0.3)
            outstanding[req["tabId"]] -= 1
            await peer.send(good_reply(req))

        await peer.send(ask("a"))
        await peer.send(ask("b", "Which warehouse code do returns need?"))
        while len(ends) < 2:
            msg = await peer.recv(timeout=60)
            if msg["type"] == "tool_request":
                outstanding[msg["tabId"]] += 1
                most[msg["tabId"]] = max(most[msg["tabId"]], outstanding[msg["tabId"]])
                seen.append((msg["id"], msg["name"]))
                replies.append(asyncio.create_task(answer_later(msg)))
            else:
                assert msg["type"] == "event", msg
                if msg["event"]["type"] in ("done", "error"):
                    ends[msg["id"]] = msg["event"]
        await asyncio.gather(*replies)

    assert {rid for rid, _ in seen} == {"a", "b"}, "both asks used the tab"
    assert most[TAB] == 1, f"{most[TAB]} tool requests for tab {TAB} were outstanding at once: {seen}"
    for rid in ("a", "b"):
        assert ends[rid]["type"] == "done", ends[rid]
        assert "ZX-4471" in ends[rid]["answer"]


# ---------------------------------------------------------------- item 8


def raw(req: dict[str, Any], body: str) -> bytes:
    """A tool_result frame with `body` spliced in verbatim: Python's json cannot
    write 1e400, a browser's JSON can carry it."""
    head = json.dumps({"type": "tool_result", "id": req["id"], "callId": req["callId"], "ok": True})
    return encode_frame(f"{head[:-1]}, {body}}}".encode())


SCROLL = '"text": "nothing here", '
POSITION = '"scroll": {"scrollY": 0, "pageHeight": 5000, "viewportHeight": 800, "atBottom": false}'
VISUAL = "What colour is the logo?"
# case: (question, tool whose first result is bad, the bad body, what the error must name)
BAD_RESULTS: dict[str, tuple[str, str, str, str]] = {
    "infinite": (QUESTION, "scroll", SCROLL + POSITION.replace('"scrollY": 0', '"scrollY": 1e400'), "scrollY"),
    "huge": (QUESTION, "scroll", SCROLL + POSITION.replace("5000", "1e300"), "pageHeight"),
    "negative": (QUESTION, "scroll", SCROLL + POSITION.replace('"scrollY": 0', '"scrollY": -120'), "scrollY"),
    "wrong type": (QUESTION, "scroll", SCROLL + POSITION.replace('"scrollY": 0', '"scrollY": "10"'), "scrollY"),
    "null": (QUESTION, "scroll", SCROLL + POSITION.replace("800", "null"), "viewportHeight"),
    "missing scroll": (QUESTION, "scroll", SCROLL[:-2], "scroll"),
    "text not a string": (QUESTION, "scroll", '"text": 5, ' + POSITION, "text"),
    "ok not a bool": (QUESTION, "scroll", '"ok": "yes", ' + SCROLL + POSITION, "ok"),
    "snapshot without html": (QUESTION, "snapshot", '"url": "https://shop.example/aurora", "title": "A"', "html"),
    "png not base64": (VISUAL, "screenshot", '"png": "this is not base64!"', "png"),
    "no png": (VISUAL, "screenshot", '"text": "a picture"', "png"),
}


async def play(peer: Peer, rid: str, question: str, bad_tool: str | None = None, bad_body: str = "") -> list[dict[str, Any]]:
    """Play the extension for one ask: the first `bad_tool` request gets a
    result with `bad_body`, every other request a good one. Returns the ask's
    events; any other frame (an `error` frame, say) fails the test."""
    await peer.send(ask(rid, question))
    events: list[dict[str, Any]] = []
    sent_bad = False
    while True:
        msg = await peer.recv(timeout=60)
        if msg["type"] == "tool_request":
            if msg["name"] == bad_tool and not sent_bad:
                sent_bad = True
                await peer.send_raw(raw(msg, bad_body))
            else:
                await peer.send(good_reply(msg))
            continue
        assert msg["type"] == "event" and msg["id"] == rid, f"{rid}: the host answered the bad result with {msg}"
        events.append(msg["event"])
        if msg["event"]["type"] in ("done", "error"):
            assert sent_bad or bad_tool is None, f"{rid}: the ask never asked for a {bad_tool}: {events}"
            return events


@pytest.mark.parametrize("tool", ["scroll", "snapshot", "screenshot"])
@pytest.mark.e2e
async def test_a_malformed_tool_result_is_a_tool_error_and_the_ask_goes_on(tool: str) -> None:
    cases = {case: c for case, c in BAD_RESULTS.items() if c[1] == tool}
    async with real_host() as peer:  # one conversation: each case is a follow-up
        for case, (question, _, body, field) in cases.items():
            events = await play(peer, case, question, tool, body)
            assert events[-1]["type"] == "done", (case, events[-1])
            failed = [e for e in events if e["type"] == "tool_result" and not e["ok"]]
            assert failed, (case, events)
            assert "malformed" in failed[0]["text"] and field in failed[0]["text"], (case, failed[0])
        await peer.send({"type": "ping"})
        assert (await peer.recv())["type"] == "pong", "the host still serves"


# ---------------------------------------------------------------- the pieces


async def test_a_tab_serves_one_request_at_a_time_and_a_cancel_or_timeout_frees_it() -> None:
    async with rig(timeout_s=0.5) as r:
        seen: list[dict[str, Any]] = []

        async def silent(req: dict[str, Any]) -> None:
            seen.append(req)  # never answered

        r.handler = silent
        a, b, c = (BridgeTab(r.requester, rid, 42, "https://ex.com/", tab_id="1") for rid in ("a", "b", "c"))
        elsewhere = BridgeTab(r.requester, "d", 43, "https://ex.com/other")
        first = asyncio.create_task(a.screenshot())
        while not seen:
            await asyncio.sleep(0.01)
        second = asyncio.create_task(b.scroll())
        third = asyncio.create_task(c.snapshot())
        other = asyncio.create_task(elsewhere.screenshot())
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        assert [(q["id"], q["tabId"]) for q in seen] == [("a", 42), ("d", 43)], "another tab is not held up"
        assert r.requester.pending == 2 and r.requester.tabs.busy(42)

        first.cancel()  # a cancelled ask gives the tab up...
        with pytest.raises(asyncio.CancelledError):
            await first
        with pytest.raises(ToolError, match="timed out"):  # ...and so does a call that timed out
            await second
        with pytest.raises(ToolError, match="timed out"):
            await third
        with pytest.raises(ToolError, match="timed out"):
            await other
        assert [q["id"] for q in seen] == ["a", "d", "b", "c"]
        assert r.requester.pending == 0 and not r.requester.tabs.busy(42)


def bad_result(**body: Any) -> dict[str, Any]:
    return {"type": "tool_result", "id": "r", "callId": "c7", "ok": True, **body}


POSITION_OK = {"scrollY": 1400.5, "pageHeight": 9000, "viewportHeight": 0, "atBottom": False}


@pytest.mark.parametrize(
    ("scroll", "field"),
    [
        ({**POSITION_OK, "scrollY": float("inf")}, "scrollY"),
        ({**POSITION_OK, "pageHeight": float("nan")}, "pageHeight"),
        ({**POSITION_OK, "scrollY": -1}, "scrollY"),
        ({**POSITION_OK, "pageHeight": 1e12}, "pageHeight"),
        ({**POSITION_OK, "viewportHeight": "700"}, "viewportHeight"),
        ({**POSITION_OK, "atBottom": "no"}, "atBottom"),
        ({k: v for k, v in POSITION_OK.items() if k != "atBottom"}, "atBottom"),
    ],
)
def test_an_invalid_scroll_position_names_the_call_and_the_field(scroll: dict[str, Any], field: str) -> None:
    with pytest.raises(errors.BadToolResultError) as ei:
        messages.parse_message(bad_result(text="t", scroll=scroll))
    assert (ei.value.request_id, ei.value.call_id) == ("r", "c7")
    assert ei.value.detail.startswith(f"scroll.{field}:"), ei.value.detail


def test_what_each_tool_needs_in_its_result() -> None:
    ok = messages.parse_message(bad_result(text="t", scroll=POSITION_OK))
    assert isinstance(ok, messages.ToolResultMessage) and ok.missing_for("scroll") == []
    assert ok.missing_for("screenshot") == ["png"] and ok.missing_for("snapshot") == ["html", "url"]


async def test_reject_fails_the_waiting_call_at_once_with_the_reason() -> None:
    async with rig(timeout_s=30) as r:

        async def silent(req: dict[str, Any]) -> None:
            return None

        r.handler = silent
        call = asyncio.create_task(BridgeTab(r.requester, "r", 42, "https://ex.com/").scroll())
        while not r.requester.pending:
            await asyncio.sleep(0.01)
        [cid] = r.requester.pending_call_ids()
        assert not r.requester.reject("someone-else", cid, "x"), "the request id must match too"
        assert r.requester.reject("r", cid, "scroll.scrollY: Input should be a finite number")
        with pytest.raises(ToolError) as ei:
            await call
        assert ei.value.message == (
            "Scrolling of tab 42 failed: the extension sent a malformed result "
            "(scroll.scrollY: Input should be a finite number); "
            "if this keeps happening, update or reload the chatagent extension."
        )
        assert r.requester.pending == 0 and not r.requester.reject("r", cid, "late")
