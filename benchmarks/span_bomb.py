"""Issue 54, row 1: a 15 KB page of tables nested in cells spanning 64 × 64.

Measures (1) one extraction worker reading the page: its time and its peak
memory (VmHWM), and (2) in `chatagent mcp` over stdio, the latency of a
one-page `read_pages` call alone and beside another call reading two such
pages over and over (median of `--runs`). Pages are local files written here.

    .venv/bin/python -m benchmarks.span_bomb --runs 7
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from chatagent.browser.base import PageSnapshot
from chatagent.extraction_pool import ExtractionPool

ROOT = Path(__file__).resolve().parent.parent


def nested_spans(depth: int = 3, words: int = 1800) -> str:
    """Tables nested `depth` deep, each in a header cell spanning 64 × 64 beside another (15 KB)."""
    inner = "<p>" + " ".join(f"word{i}" for i in range(words)) + "</p>"
    for level in range(depth):
        inner = (f"<table><tr><th rowspan='64' colspan='64'>{inner}</th><th>x{level}</th></tr>"
                 f"<tr><td>a{level}</td><td>b{level}</td></tr></table>")
    return f"<html><head><title>Spans</title></head><body><h1>Spans</h1>{inner}</body></html>"


SMALL = ("<html><head><title>Aurora X14</title></head><body><h1>Aurora X14</h1>"
         "<p>The Aurora X14 costs $1,349.00 and weighs 1.28 kg.</p></body></html>")


def _peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


async def worker_figures(html: str) -> None:
    pool = ExtractionPool(workers=1)
    try:
        await pool.start()
        (pid,) = pool.pids()
        warm = _peak_kb(pid)
        start = time.perf_counter()
        ex = await pool.extract(PageSnapshot(tab_id="1", url="http://x/spans.html", html=html))
        took = time.perf_counter() - start
        print(f"worker: {len(html):,} bytes of HTML read in {took:.2f} s into {len(ex.text):,} characters; "
              f"worker peak {_peak_kb(pid) / 1024:.0f} MB (warm: {warm / 1024:.0f} MB); notes: {ex.notes or 'none'}")
    finally:
        await asyncio.to_thread(pool.shutdown)


async def _timed(session: ClientSession, url: str) -> float:
    start = time.perf_counter()
    result = await session.call_tool("read_pages", {"urls": [url]})
    assert not result.is_error, result.content
    return time.perf_counter() - start


async def mcp_figures(small: str, folder: Path, html: str, runs: int) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "chatagent", "mcp"], cwd=str(ROOT),
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _timed(session, small)  # the browser and the workers started
        alone = [await _timed(session, small) for _ in range(runs)]
        stop = asyncio.Event()
        bombs = 0

        async def bombard() -> None:
            nonlocal bombs
            while not stop.is_set():
                # New content each time: the extraction cache would answer the same page from memory.
                pages = [folder / f"spans-{bombs}-{k}.html" for k in range(2)]
                for k, page in enumerate(pages):
                    page.write_text(html + f"<!-- {bombs} {k} -->")
                await session.call_tool("read_pages", {"urls": [str(p) for p in pages]})
                bombs += 1

        task = asyncio.create_task(bombard())
        await asyncio.sleep(0.5)
        beside = [await _timed(session, small) for _ in range(runs)]
        stop.set()
        await task
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"mcp read_pages, one small page: alone median {a * 1000:.0f} ms; beside calls reading two span pages "
          f"({bombs} such calls ran meanwhile) median {b * 1000:.0f} ms ({b / a:.2f}x); runs {runs}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    html = nested_spans()
    asyncio.run(worker_figures(html))
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp, "small.html")
        small.write_text(SMALL)
        asyncio.run(mcp_figures(str(small), Path(tmp), html, args.runs))


if __name__ == "__main__":
    main()
