"""What keeping pages off local addresses (`chatagent.browser.network_scope`)
costs a tab: the fixture pages opened and read as web pages (named by a
public-looking host that Chromium counts as public), with the scope and
without it, in alternating rounds in one browser so both see the same
machine. Pages the user names on loopback (every other benchmark's) are not
scoped at all, so pay nothing.

    .venv/bin/python -m benchmarks.network_scope [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

from chatagent.browser import playwright as pw_backend
from chatagent.browser.base import TabFailure
from chatagent.browser.playwright import PlaywrightBrowser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
PAGES = ("product.html", "article.html", "table.html", "listing.html", "forum_thread.html", "js_rendered.html",
         "fetched.html", "frames.html")
HOST = "fixtures.example"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


async def _one(browser: PlaywrightBrowser, url: str, scoped: bool) -> float:
    """Seconds to open `url` as a tab and read it (as pass 1 does), scoped or not."""
    with contextlib.ExitStack() as stack:
        if not scoped:
            stack.enter_context(mock.patch.object(pw_backend, "is_local_url", lambda url: True))
        started = time.perf_counter()
        (tab,) = await browser.open_tabs([url])
        assert not isinstance(tab, TabFailure), tab
        await tab.snapshot()
        elapsed = time.perf_counter() - started
    await tab.close()
    return elapsed


async def main(rounds: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(FIXTURES)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    urls = [f"http://{HOST}:{port}/{p}" for p in PAGES]
    browser = await PlaywrightBrowser.launch(extra_args=[
        f"--host-resolver-rules=MAP {HOST} 127.0.0.1", f"--ip-address-space-overrides=127.0.0.1:{port}=public"])
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for url in urls:  # warm: a context's first tabs cost more
            await _one(browser, url, True)
        for i in range(rounds):
            for j, url in enumerate(urls):
                first = (i + j) % 2 == 0  # each page half the time scoped first
                for scoped in (first, not first):
                    times[scoped].append(await _one(browser, url, scoped))
    finally:
        await browser.close()
        server.shutdown()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"one tab opened and read at a time, {len(PAGES)} fixture pages x {rounds} rounds each way, alternating:")
    for scoped, label in ((False, "unscoped"), (True, "scoped")):
        print(f"  {label:9} median {med[scoped] * 1000:6.1f} ms   mean {statistics.mean(times[scoped]) * 1000:6.1f} ms")
    extra = med[True] - med[False]
    print(f"  the scope {extra * 1000:+6.1f} ms a tab ({extra / med[False]:+.1%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args().rounds))
