"""What a server's browser may hold is bounded by its settings: a response
larger than `max_response_mb` is not loaded (the tab says so, and the rest of
it is never fetched), and no more than `max_tabs` tabs are open at once
across concurrent `chatagent mcp` calls (calls beyond wait their turn, and say
so in progress notifications). Through the real MCP SDK client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from benchmarks.server import debuggable_chromium

from conftest import Site
from origin import BIG_MB, serving
from test_mcp import server as stdio_server

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]


async def test_a_response_larger_than_max_response_mb_is_not_loaded(site: Site) -> None:
    """200 MB pages, streamed with no Content-Length and announced with one,
    and a page whose script fetches such a body, read with max_response_mb 5:
    each tab says it is too large and which setting reads it, and the origin
    saw the browser hang up before the end; a page beside them reads as usual."""
    with serving() as origin:
        # A load the bound would not stop gives up after 5 s.
        async with stdio_server(CHATAGENT_MAX_RESPONSE_MB="5", CHATAGENT_TIMEOUT="5") as s:
            read = await s.call_tool("read_pages", {"urls": [
                origin.url("/big?mode=chunked"), origin.url("/big?mode=length"), origin.url("/fetches-big"),
                site.url("product")]})
        sent = {path: origin.sent(path) for path in ("/big?mode=chunked", "/big?mode=length", "/big?mode=length&for=fetch")}
    assert not read.is_error, read.content
    *big, product = read.structured_content["pages"]
    for page in big:
        assert "larger than 5 MB" in (page["error"] or ""), page
        assert "raise max_response_mb" in page["error"] and not page["text"]
    assert "loads a file larger" in big[2]["error"], "the page itself was small: one of its files was not"
    assert "$1,349.00" in product["text"]
    for path, (bytes_sent, whole) in sent.items():
        assert not whole and bytes_sent < BIG_MB * 1_000_000, (path, bytes_sent)


async def test_calls_beyond_max_tabs_wait_their_turn_and_say_so(site: Site) -> None:
    """max_tabs 2, four calls at once of two pages each (pages that take a
    moment to arrive): the attached Chrome never has more than 2 of the
    calls' tabs open at once, every call is answered, and those that waited
    were told so in progress notifications. A call naming more pages than the
    bound still goes through, alone."""
    from playwright.async_api import async_playwright

    with serving() as origin:
        async with debuggable_chromium(url=site.url("product")) as endpoint, async_playwright() as pw:
            watcher = await pw.chromium.connect_over_cdp(endpoint)
            cdp = await watcher.new_browser_cdp_session()
            users: set[str] = set()
            ours: set[str] = set()
            most = 0

            def created(event: dict[str, Any]) -> None:
                nonlocal most
                info = event["targetInfo"]
                if info["type"] == "page" and info["targetId"] not in users:
                    ours.add(info["targetId"])
                    most = max(most, len(ours))

            cdp.on("Target.targetCreated", created)
            cdp.on("Target.targetDestroyed", lambda event: ours.discard(event["targetId"]))
            users.update(t["targetId"] for t in (await cdp.send("Target.getTargets"))["targetInfos"] if t["type"] == "page")
            await cdp.send("Target.setDiscoverTargets", {"discover": True})

            waited: dict[int, list[str]] = {i: [] for i in range(4)}

            def progress_of(i: int) -> Any:
                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    waited[i].append(message or "")
                return on_progress

            async with stdio_server(CHATAGENT_CDP=endpoint, CHATAGENT_MAX_TABS="2") as s:
                results = await asyncio.gather(*(
                    s.call_tool("read_pages", {"urls": [origin.url(f"/late?s=1&n={i}-{j}") for j in range(2)]},
                                progress_callback=progress_of(i))
                    for i in range(4)
                ))
                at_once = most
                beyond = await s.call_tool("read_pages", {"urls": [origin.url(f"/late?s=0.2&n=beyond-{j}") for j in range(3)]})
            await watcher.close()
    for result in [*results, beyond]:
        assert not result.is_error, result.content
        assert all("Late page" in p["text"] for p in result.structured_content["pages"]), result.structured_content
    assert at_once == 2, f"{at_once} tabs of the calls were open at once (2 is the bound, and what the calls want)"
    told = [m for messages in waited.values() for m in messages if m.startswith("Waiting for")]
    assert told, waited
    assert all("max_tabs" in m for m in told)
