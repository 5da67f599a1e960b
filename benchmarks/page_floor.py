"""The floor under a warm daemon's first token: how long a browser that is
already running takes to open pages no one has read and give up their text.

    python -m benchmarks.page_floor [--tabs 1,10] [--reps 6] [--data DIR]

Plain Playwright, no chatagent in the loop: one Chromium launched once (as a
daemon keeps one), then for each repetition the e2e bench's pages
(`benchmarks.e2e.tasks`: a WikiTableQuestions page and the ones after it,
served on 127.0.0.1 with a query no cache has seen) opened in new tabs at once,
`goto` to DOMContentLoaded, then `innerText`. Every other host is refused at
once, as in the e2e bench. What this takes is time no agent can save on this
machine: chatagent's warm `ask` adds its own extraction and selection on top.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from pathlib import Path

from playwright.async_api import BrowserContext, async_playwright

from chatagent.browser.discovery import find_browser

from .data import DEFAULT_DATA_DIR
from .e2e import tasks
from .server import PageServer, fresh_url

REFUSING_PROXY = "http://127.0.0.1:9"  # nothing listens there: third-party requests fail at once


async def _read(context: BrowserContext, url: str) -> None:
    page = await context.new_page()
    await page.goto(url, wait_until="domcontentloaded")
    await page.evaluate("document.body.innerText")


async def measure(tab_counts: list[int], reps: int, data_dir: Path) -> dict[int, list[float]]:
    """Milliseconds to open and read each tab count's pages, one list per count."""
    fresh = itertools.count(1)
    out: dict[int, list[float]] = {n: [] for n in tab_counts}
    with PageServer() as site:
        work = {n: tasks(data_dir, site, reps + 1, n) for n in tab_counts}
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=find_browser(), headless=True,
                args=[f"--proxy-server={REFUSING_PROXY}", "--proxy-bypass-list=127.0.0.1;localhost"],
            )
            context = await browser.new_context()
            for rep in range(reps + 1):  # the first round is untimed: pages and code read from disk
                for n in tab_counts:
                    urls = [fresh_url(u, next(fresh)) for u in work[n][rep].urls]
                    start = time.perf_counter()
                    await asyncio.gather(*(_read(context, u) for u in urls))
                    if rep:
                        out[n].append((time.perf_counter() - start) * 1000)
                    for page in context.pages:
                        await page.close()
                    await asyncio.sleep(1)  # the closed tabs' processes go before the next round
            await browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.page_floor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tabs", default="1,10", help="tab counts, comma-separated (default 1,10)")
    ap.add_argument("--reps", type=int, default=6, help="timed repetitions per tab count (default 6)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="the shared data directory")
    args = ap.parse_args()
    counts = [int(n) for n in args.tabs.split(",")]
    results = asyncio.run(measure(counts, args.reps, args.data))
    for n, ms in results.items():
        print(f"{n} tab{'s' if n != 1 else ''}: open and read in a running browser, ms p50 "
              f"{statistics.median(ms):,.0f} (min {min(ms):,.0f}, max {max(ms):,.0f}; {len(ms)} reps)")


if __name__ == "__main__":
    main()
