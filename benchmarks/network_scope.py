"""What keeping pages off local addresses (`chatagent.browser.network_scope`)
costs a tab: the fixture pages opened and read as web pages (named by a
public-looking host that Chromium counts as public), with the scope and
without it, in alternating rounds in one browser so both see the same
machine. Pages the user names on loopback (every other benchmark's) are not
scoped at all, so pay nothing.

    .venv/bin/python -m benchmarks.network_scope [--rounds 12]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

from chatagent.browser import playwright as pw_backend
from chatagent.browser.playwright import PlaywrightBrowser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
PAGES = ("product.html", "article.html", "table.html", "listing.html", "forum_thread.html", "js_rendered.html",
         "fetched.html", "frames.html")
HOST = "fixtures.example"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


async def _round(browser: PlaywrightBrowser, urls: list[str]) -> float:
    started = time.perf_counter()
    tabs = await browser.open_tabs(urls)
    await asyncio.gather(*(t.snapshot() for t in tabs if not hasattr(t, "code")))
    elapsed = time.perf_counter() - started
    await asyncio.gather(*(t.close() for t in tabs if not hasattr(t, "code")))
    return elapsed


async def main(rounds: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(FIXTURES)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    urls = [f"http://{HOST}:{port}/{p}" for p in PAGES]
    browser = await PlaywrightBrowser.launch(extra_args=[
        f"--host-resolver-rules=MAP {HOST} 127.0.0.1", f"--ip-address-space-overrides=127.0.0.1:{port}=public"])
    times: dict[str, list[float]] = {"scoped": [], "unscoped": []}
    try:
        await _round(browser, urls)  # warm: the first tabs of a context cost more
        for i in range(rounds * 2):
            mode = "scoped" if i % 2 == 0 else "unscoped"
            if mode == "scoped":
                times[mode].append(await _round(browser, urls))
            else:
                with mock.patch.object(pw_backend, "is_local_url", lambda url: True):
                    times[mode].append(await _round(browser, urls))
    finally:
        await browser.close()
        server.shutdown()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{len(PAGES)} tabs opened and read at once, {rounds} rounds each, alternating (median, ms per round):")
    for k, v in med.items():
        print(f"  {k:9} {v * 1000:7.0f}   (min {min(times[k]) * 1000:.0f}, max {max(times[k]) * 1000:.0f})")
    extra = med["scoped"] - med["unscoped"]
    print(f"  scope    {extra * 1000:+7.0f}   ({extra / med['unscoped']:+.1%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    asyncio.run(main(parser.parse_args().rounds))
