"""A page's extraction is bounded (issue 54, row 1): table spans are filled with
bounded work, and every page is extracted in a worker process that is killed
and replaced past its time (`extract_timeout_s`) or memory (`extract_memory_mb`)
limit; the tab then says why and keeps its visible text, and the other tabs are
read as usual. Through the pool, `chatagent ask` and MCP `read_pages`."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import lxml.html
import pytest

from chatagent import table_spans
from chatagent.browser.base import PageSnapshot
from chatagent.extraction import Extractor, extract_snapshot
from chatagent.extraction_pool import ExtractionPool
from chatagent.table_spans import fill_spans

from conftest import Site
from test_context_cli import _no_traceback, run_cli
from test_mcp import server as stdio_server

HARBOUR = "The harbour opens at 06:00 every day."


def nested_spans(depth: int, words: int) -> str:
    """Tables nested `depth` deep, each in a header cell spanning 64 × 64 beside another: a page
    of a few hundred bytes whose spans, each repeated with all it holds, are millions of characters."""
    inner = "<p>" + " ".join(f"word{i}" for i in range(words)) + "</p>"
    for level in range(depth):
        inner = (f"<table><tr><th rowspan='64' colspan='64'>{inner}</th><th>x{level}</th></tr>"
                 f"<tr><td>a{level}</td><td>b{level}</td></tr></table>")
    return f"<html><head><title>Spans</title></head><body><h1>Spans</h1>{inner}</body></html>"


def slow_page(paragraphs: int) -> str:
    """A page within every cap that is slow to extract: 12,000 paragraphs take trafilatura ~5 s on 2 cores."""
    filler = " ".join(f"w{i}" for i in range(25))
    body = "".join(f"<p>Paragraph {i}: {filler}</p>" for i in range(paragraphs))
    return f"<html><head><title>Long</title></head><body><article><p>{HARBOUR}</p>{body}</article></body></html>"


PRICE_PAGE = ("<html><head><title>Aurora X14</title></head><body><h1>Aurora X14</h1>"
              "<p>The Aurora X14 costs $1,349.00 and weighs 1.28 kg.</p></body></html>")


def test_filling_nested_spans_costs_no_more_than_the_page_holds() -> None:
    # Before the fix: these 426 bytes filled into 2.1 million characters (16,383 cells copied with
    # the tables inside them); 13 KB into 1.2 billion, in 52 s and 3.7 GB.
    doc = lxml.html.fromstring(nested_spans(depth=2, words=20))
    before = len("".join(doc.itertext()))
    added = fill_spans(doc)
    assert len("".join(doc.itertext())) <= before + 2 * table_spans.MAX_SPAN_CHARS  # two spanning cells
    assert added <= 2 * table_spans.MAX_SPAN_CELLS
    assert "word19" in doc.text_content(), "the spanning cell itself stays"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def _replaced(pool: ExtractionPool, old: int) -> list[int]:
    for _ in range(100):  # the replacement starting
        if (pids := pool.pids()) and old not in pids:
            return pids
        await asyncio.sleep(0.1)
    return pool.pids()


async def test_a_page_past_the_time_limit_keeps_its_visible_text_and_its_worker_is_replaced() -> None:
    slow = PageSnapshot(tab_id="1", url="http://x/slow.html", html=slow_page(12_000),
                        visible_text=f"Long\n{HARBOUR}\nParagraph 0", rendered=True)
    price = PageSnapshot(tab_id="2", url="http://x/price.html", html=PRICE_PAGE)
    pool = ExtractionPool(workers=1, timeout_s=1)
    try:
        await pool.start()
        (worker,) = pool.pids()
        extractor = Extractor(pool)
        given_up = await extractor.extract(slow)
        assert "This page took longer than 1 s to read (the extract_timeout_s setting)" in " ".join(given_up.notes)
        assert given_up.method == "rendered" and HARBOUR in given_up.text
        assert (await _replaced(pool, worker)) and not _alive(worker), "the worker past its limit is gone"
        assert await extractor.extract(price) == extract_snapshot(price), "the next page gets a healthy worker"
    finally:
        await asyncio.to_thread(pool.shutdown)


async def test_a_page_past_the_memory_limit_is_said_too_large_and_its_worker_is_replaced() -> None:
    # 10 MB of text a page's scripts wrote into it: a warm worker's ~170 MB plus what reading it takes pass 256 MB.
    lines = "\n".join(f"Line {i} of a page that writes a great deal of text into itself." for i in range(150_000))
    big = PageSnapshot(tab_id="1", url="http://x/big.html", visible_text=lines, rendered=True)
    price = PageSnapshot(tab_id="2", url="http://x/price.html", html=PRICE_PAGE)
    pool = ExtractionPool(workers=1, memory_mb=256)
    try:
        await pool.start()
        (worker,) = pool.pids()
        extractor = Extractor(pool)
        too_large = await extractor.extract(big)
        assert "This page is too large to read (more than 256 MB, the extract_memory_mb setting)" in " ".join(
            too_large.notes)
        assert too_large.text.startswith("Line 0 of a page"), "its visible text is kept"
        assert (await _replaced(pool, worker)) and not _alive(worker)
        assert await extractor.extract(price) == extract_snapshot(price)
    finally:
        await asyncio.to_thread(pool.shutdown)


@pytest.mark.e2e
def test_ask_gives_up_a_slow_page_at_its_limit_and_answers_from_the_other_tab(tmp_path: Path) -> None:
    slow, price = tmp_path / "slow.html", tmp_path / "price.html"
    slow.write_text(slow_page(12_000))
    price.write_text(PRICE_PAGE)
    proc = run_cli("ask", str(slow), str(price), "-q", "How much does the Aurora X14 cost?", "--model", "extractive",
                   env={"CHATAGENT_EXTRACT_TIMEOUT_S": "1"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc)
    out = proc.stdout + proc.stderr
    assert "This page took longer than 1 s to read (the extract_timeout_s setting)" in out
    assert "$1,349.00" in proc.stdout


@pytest.mark.e2e
@pytest.mark.asyncio(loop_scope="session")
async def test_read_pages_reads_a_page_of_nested_spans_in_bounded_text_beside_another(
    tmp_path: Path, site: Site
) -> None:
    # Unbounded, these 800 bytes filled into 41 million characters (8 s) before trafilatura even began.
    bomb = tmp_path / "spans.html"
    bomb.write_text(nested_spans(depth=3, words=60))
    async with stdio_server() as s:
        read = await s.call_tool("read_pages", {"urls": [str(bomb), site.url("product")]})
    assert not read.is_error, read.content
    spans, product = read.structured_content["pages"]
    assert not spans["error"] and "word59" in spans["text"]
    assert not any("to read" in note for note in spans["notes"]), "read whole, not given up at a limit"
    assert len(spans["text"]) < 100 * os.path.getsize(bomb)
    assert "$1,349.00" in product["text"]
