"""Pages for the benchmarks' headless browser: a local HTTP server and the browser that reads it.

`PageServer` serves only what it was given, on 127.0.0.1, from a background
thread (so serving never competes with the event loop being timed):

    with PageServer() as site:
        url = site.file_url(Path("../shared/data/aeb/html/0001.html.gz"))  # gunzipped on the fly
        url = site.page_url("hotpot/q1/0.html", "<!doctype html>...")       # a page held in memory

A page's URL with `?fresh=N` (`fresh_url`) serves it with " (read N)" added
to its title: the same page, but content no cache has seen (the extraction
cache, token counts and page analysis are all keyed by it), for benchmarks
that time a first read.

`launch_browser()` starts headless Chromium with every host but 127.0.0.1
unresolvable, so the saved pages' third-party assets fail at once instead of
waiting on a network that is not there. `bench_settings()` is what the
benchmarks' runtimes run with.
"""

from __future__ import annotations

import gzip
import re
import sys
import threading
from collections.abc import Sequence
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, AsyncIterator, NamedTuple
from urllib.parse import parse_qs, quote, unquote, urlsplit

from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.settings import Settings
from chatagent.testing.ports import free_port

OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
# A page's own <meta charset> wins, as it would on the web where the header usually
# matches it (the windows-1252 fixture); everything else is UTF-8.
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_-]+)""", re.I)


_TITLE_END = re.compile(rb"</title\s*>", re.I)
_HEAD_START = re.compile(rb"<head(?:\s[^>]*)?>|<!doctype[^>]*>", re.I)
# Settings that change what a benchmark measures: their defaults, whatever the user's settings say.
PINNED_SETTINGS = ("budget", "timeout", "deadline", "input_budget")


def _charset(body: bytes) -> str:
    m = _META_CHARSET.search(body[:4096])
    return m.group(1).decode("ascii").lower() if m else "utf-8"


def _retitle(body: bytes, n: str) -> bytes:
    """`body` with " (read n)" at the end of its title (a title added if it has none).
    ASCII only, so it fits any encoding a page declares."""
    mark = f" (read {n})".encode("ascii")
    if m := _TITLE_END.search(body):
        return body[: m.start()] + mark + body[m.start():]
    at = m.end() if (m := _HEAD_START.search(body)) else 0
    return body[:at] + b"<title>" + mark.strip() + b"</title>" + body[at:]


class _QuietServer(ThreadingHTTPServer):
    """A browser hangs up on a page it no longer wants (a navigation, a closed tab): that
    is no error, and its traceback would bury the bench's own output on stderr."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class PageServer:
    """Serves registered files (gunzipped when .gz) and in-memory pages; anything else is a 404."""

    def __init__(self) -> None:
        self._routes: dict[str, Path | bytes] = {}
        self._files: dict[Path, str] = {}
        self._lock = threading.Lock()
        routes, lock = self._routes, self._lock

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                url = urlsplit(self.path)
                with lock:
                    source = routes.get(unquote(url.path))
                if source is None:
                    body, status, ctype = b"not found", 404, "text/plain"
                else:
                    body = source if isinstance(source, bytes) else source.read_bytes()
                    if isinstance(source, Path) and source.suffix == ".gz":
                        body = gzip.decompress(body)
                    if (fresh := parse_qs(url.query).get("fresh", [""])[0]).isdigit():
                        body = _retitle(body, fresh)
                    status, ctype = 200, f"text/html; charset={_charset(body)}"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="bench-pages", daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def file_url(self, path: Path) -> str:
        """The URL of a local .html or .html.gz file (registered on first use)."""
        path = Path(path).resolve()
        with self._lock:
            route = self._files.get(path)
            if route is None:
                route = f"/f/{len(self._files)}/{path.name.removesuffix('.gz')}"
                self._files[path] = route
                self._routes[route] = path
        return self.base + quote(route)

    def page_url(self, name: str, html: str) -> str:
        """Serve `html` at /p/<name>; registering the same name again replaces the page."""
        route = f"/p/{name.lstrip('/')}"
        with self._lock:
            self._routes[route] = html.encode("utf-8")
        return self.base + quote(route)

    def __enter__(self) -> "PageServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def fresh_url(url: str, n: int) -> str:
    """`url` as read `n` of a page no cache has seen. A `PageServer` page changes
    its title; any other server sees only a new URL (so its page's extraction is
    new, but its text is the same)."""
    return f"{url}{'&' if '?' in url else '?'}fresh={n}"


@asynccontextmanager
async def launch_browser() -> AsyncIterator[PlaywrightBrowser]:
    browser = await PlaywrightBrowser.launch(extra_args=OFFLINE_ARGS)
    try:
        yield browser
    finally:
        await browser.close()


def browser_version(browser: PlaywrightBrowser) -> str:
    return browser._browser.version  # noqa: SLF001 - report what rendered the pages


def bench_settings(**given: Any) -> Settings:
    """The settings a benchmark's runtime runs with: `given` (None: not given),
    the defaults of the settings that change what is measured (`PINNED_SETTINGS`)
    and no answer cache, whatever the user's settings file says; anything else
    (API keys, endpoints) from the environment and the file, as usual."""
    pinned = {k: Settings.model_fields[k].default for k in PINNED_SETTINGS}
    return Settings.load(**{**pinned, "cache": False, **given})


@asynccontextmanager
async def debuggable_chromium(extra_args: Sequence[str] = (), url: str = "about:blank") -> AsyncIterator[str]:
    """A headless Chromium started as a user starts one for `--cdp`: with a
    remote-debugging port, showing `url`. Yields its CDP endpoint once `url` is open."""
    import asyncio
    import json
    import tempfile
    import urllib.request

    from chatagent.browser.discovery import find_browser

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    # Chromium may still be writing its profile as it exits.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = await asyncio.create_subprocess_exec(
            find_browser(), "--headless=new", "--no-sandbox", f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}", "--no-first-run", *extra_args, url,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                try:
                    with urllib.request.urlopen(f"{endpoint}/json/list", timeout=2) as r:  # noqa: S310 - loopback
                        if any(t.get("url") == url for t in json.loads(r.read())):
                            break
                except (OSError, ValueError):
                    pass
                await asyncio.sleep(0.1)
            yield endpoint
        finally:
            proc.terminate()
            await proc.wait()


class BrowserServer(NamedTuple):
    ws: str  # the endpoint, for `browser_ws`
    pid: int  # its process (the Python launcher; the Node server and the browser below it)


@asynccontextmanager
async def playwright_browser_server(
    extra_args: Sequence[str] = (), cpus: frozenset[int] | None = None,
) -> AsyncIterator[BrowserServer]:
    """A Playwright browser server started as the README says, on a machine
    whose only browser is the system Chromium: `python -m playwright
    launch-server --browser chromium --config FILE`, FILE naming the
    executable. Yields the endpoint it prints (ws://127.0.0.1:PORT/RANDOM,
    for `browser_ws`) and its process; stops it, and its browser, afterwards.
    `cpus`: the only CPUs it and its browser run on (every process it starts inherits them)."""
    import asyncio
    import json
    import os
    import signal
    import tempfile

    from chatagent.browser.discovery import find_browser

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "browser-server.json"
        config.write_text(json.dumps({"executablePath": find_browser(), "host": "127.0.0.1", "port": free_port(),
                                      "args": list(extra_args)}))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "playwright", "launch-server", "--browser", "chromium", "--config", str(config),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the Python launcher, the Node server, the browser
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        try:
            assert proc.stdout
            line = await asyncio.wait_for(proc.stdout.readline(), 120)  # "ws://127.0.0.1:PORT/RANDOM": after its browser started
            if not line.startswith(b"ws://"):
                raise RuntimeError(f"playwright launch-server did not start: {line!r}")
            yield BrowserServer(line.decode().strip(), proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
