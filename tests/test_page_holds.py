"""What a page can make the browser, the Playwright driver and chatagent hold
is bounded: text a page's own script builds is cut as it is read
(`max_page_chars`), a response streamed as fast as loopback goes is cut
at `max_response_mb` all the same, and the renderers of all open tabs hold
no more than `max_tabs_mb`. Through `chatagent mcp` over stdio with the
real MCP SDK client, against a hostile origin in a process of its own
(`hostile_origin.py`), so its bytes are not paced by the test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatagent.browser.memory import LOADING_RESERVE_MB, renderers_mb
from conftest import Site
from hostile_origin import HIDDEN_MB, TEXT_MB
from test_mcp import server as stdio_server

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]

HERE = Path(__file__).resolve().parent


class Hostile:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    async def sent(self, path: str) -> tuple[int, bool]:
        """Bytes the origin sent for `path` and whether all of it went, once its answer has ended."""
        query = urllib.request.quote(path, safe="")
        for _ in range(600):
            try:
                with await asyncio.to_thread(urllib.request.urlopen, self.url(f"/sent?path={query}"), timeout=10) as r:
                    got = json.loads(r.read())
                return got["sent"], got["finished"]
            except urllib.error.HTTPError:
                await asyncio.sleep(0.1)
        raise AssertionError(f"{path}: still sending after 60 s")


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    proc = subprocess.Popen([sys.executable, str(HERE / "hostile_origin.py")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield Hostile(int(proc.stdout.readline()))
    finally:
        proc.terminate()
        proc.wait(10)


async def test_text_a_page_script_builds_is_cut_as_it_is_read(hostile: Hostile, site: Site) -> None:
    """A 500-byte page whose script builds 2 MB of text and 20 MB more hidden,
    read with max_page_chars 200,000: the tab is read, its first part kept,
    no more than the bound came out of the browser, and it says which setting
    cut it; a page beside it reads as usual."""
    limit = 200_000
    async with stdio_server(CHATAGENT_MAX_PAGE_CHARS=str(limit)) as s:
        read = await s.call_tool("read_pages", {"urls": [hostile.url("/builds-text"), site.url("product")],
                                                "budget_per_tab": 500})
    assert not read.is_error, read.content
    ledger, product = read.structured_content["pages"]
    assert not ledger["error"], ledger
    assert "Entry of a ledger that its own script writes" in ledger["text"]
    # Every character is at least one token's worth of text: the whole page would be ~10x the bound.
    assert 0 < ledger["page_tokens"] <= limit, (ledger["page_tokens"], TEXT_MB, HIDDEN_MB)
    said = " ".join(ledger["notes"])
    assert "max_page_chars" in said and f"{limit:,}" in said, ledger["notes"]
    assert "$1,349.00" in product["text"] and not any("max_page_chars" in n for n in product["notes"])


async def test_a_response_streamed_at_full_speed_is_cut_at_max_response_mb(hostile: Hostile, site: Site) -> None:
    """300 MB of HTML with no Content-Length, written as fast as loopback takes it by
    another process, read with max_response_mb 5 (and a load timeout long enough that
    the bound, not the timeout, is what stops it): the tab says it is too large and
    which setting reads it, the origin saw the browser hang up long before the end,
    and a page beside it reads as usual."""
    path = "/flood?mb=300"
    async with stdio_server(CHATAGENT_MAX_RESPONSE_MB="5", CHATAGENT_TIMEOUT="60") as s:
        read = await s.call_tool("read_pages", {"urls": [hostile.url(path), site.url("product")]})
    sent, finished = await hostile.sent(path)
    assert not read.is_error, read.content
    flood, product = read.structured_content["pages"]
    assert "larger than 5 MB" in (flood["error"] or "") and "raise max_response_mb" in flood["error"], flood
    assert not flood["text"]
    assert not finished and sent < 100_000_000, sent
    assert "$1,349.00" in product["text"]


class _Peak:
    """The most renderer memory (PSS, MB) the test's processes held while in the block."""

    def __init__(self) -> None:
        self.mb = 0.0
        self._stop = threading.Event()

    def __enter__(self) -> "_Peak":
        def sample() -> None:
            while not self._stop.wait(0.1):
                self.mb = max(self.mb, renderers_mb(os.getpid()) or 0.0)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.timeout(300)  # a busy machine reads these pages one or two at a time, by design
async def test_open_tabs_hold_no_more_memory_than_max_tabs_mb(hostile: Hostile) -> None:
    """max_tabs_mb 200 (each 3 MB page's renderer holds ~100 MB): four calls at once
    of one such page each are all answered, while the renderers never hold more
    than the bound and two pages' reserve (a page may hold more than its reserve,
    and the measure is 0.25 s old at most; four at once hold ~400 MB); one call of four such pages,
    whose own open tabs fill the bound, is answered for those that fit and says of
    the others that they were not opened, and which setting to raise."""
    heavy = [hostile.url(f"/heavy?n=3&i={i}") for i in range(4)]
    with _Peak() as peak:
        async with stdio_server(CHATAGENT_MAX_TABS_MB="200", CHATAGENT_TIMEOUT="60") as s:
            results = await asyncio.gather(*(s.call_tool("read_pages", {"urls": [u], "budget_per_tab": 200})
                                             for u in heavy))
    for result in results:
        assert not result.is_error, result.content
        [page] = result.structured_content["pages"]
        assert not page["error"] and "endless ledger" in page["text"], page
    assert peak.mb < 200 + 2 * LOADING_RESERVE_MB, f"renderers held {peak.mb:.0f} MB at once"

    async with stdio_server(CHATAGENT_MAX_TABS_MB="200", CHATAGENT_TIMEOUT="8") as s:
        one = await s.call_tool("read_pages", {"urls": heavy, "budget_per_tab": 200})
    assert not one.is_error, one.content
    pages = one.structured_content["pages"]
    read = [p for p in pages if not p["error"]]
    refused = [p for p in pages if p["error"]]
    assert read and all("endless ledger" in p["text"] for p in read), pages
    assert refused and all("max_tabs_mb" in p["error"] and "was not opened" in p["error"] for p in refused), pages


async def test_a_frame_takes_a_share_of_max_page_chars(hostile: Hostile) -> None:
    """A small page showing, in a frame, the page whose script builds 2 MB of text,
    read with max_page_chars 1,000,000: the page's own text is read whole, the
    frame's is cut to a twentieth of the bound, and the tab says so."""
    from chatagent.browser.playwright import PlaywrightBrowser

    limit = 1_000_000
    browser = await PlaywrightBrowser.launch(max_page_chars=limit)
    try:
        [tab] = await browser.open_tabs([hostile.url("/frames-text")])
        snap = await tab.snapshot()
    finally:
        await browser.close()
    assert "The ledger follows." in snap.visible_text
    assert "Entry of a ledger that its own script writes" in snap.visible_text
    assert len(snap.visible_text) <= limit // 20 + 1000 and len(snap.html) <= limit, len(snap.visible_text)
    assert any("frames" in n and "max_page_chars" in n for n in snap.notes), snap.notes


async def test_a_flood_is_closed_once_the_renderers_pass_max_tabs_mb(hostile: Hostile, site: Site) -> None:
    """The renderer of a fast flood holds 50-100 times the bytes counted so far, and
    the count reaches chatagent late: with max_tabs_mb 250 and a response cap too
    high to trip first (10 MB: ~700 MB of renderer), the flood's tab is closed once
    the renderers hold more than the bound, says so and which setting reads it, the
    renderers never held much more (the watch sees a stream STREAM_S after its first
    bytes and measures every WATCH_STEP_S, while a flood's renderer grows ~100 MB/s),
    and the page beside it reads as usual."""
    path = "/flood?mb=300&for=memory"
    with _Peak() as peak:
        async with stdio_server(CHATAGENT_MAX_TABS_MB="250", CHATAGENT_MAX_RESPONSE_MB="10",
                                CHATAGENT_TIMEOUT="60") as s:
            read = await s.call_tool("read_pages", {"urls": [hostile.url(path), site.url("product")]})
    sent, finished = await hostile.sent(path)
    assert not read.is_error, read.content
    flood, product = read.structured_content["pages"]
    assert "max_tabs_mb" in (flood["error"] or "") and "raise max_tabs_mb" in flood["error"], flood
    assert not finished and sent < 100_000_000, sent
    assert peak.mb < 250 + 3 * LOADING_RESERVE_MB, f"renderers held {peak.mb:.0f} MB at once"
    assert "$1,349.00" in product["text"]
