"""Shared test infrastructure: the fixture pages served on 127.0.0.1 and one
real headless Chromium for the whole session.

Tests that use `chromium` (or `open_tabs`) must run in the session's event
loop, because Playwright objects are bound to the loop that created them:
mark them `pytest.mark.asyncio(loop_scope="session")` (a module- or class-level
`pytestmark` is simplest).
"""

from __future__ import annotations

import os
import signal
import struct
import threading
import zlib
from bisect import bisect_left
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
from urllib.request import urlopen

import pytest
import pytest_asyncio
from hypothesis import settings as hypothesis_settings

from chatagent.browser.base import Tab, TabFailure
from chatagent.browser import playwright as pw_backend
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.testing.gemini_server import GeminiServer
from chatagent.testing.ports import free_port
from warm_start import WARM_SOCKET_ENV, WarmServer

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "fixtures" / "pages"
# The evaluation data: ../shared/data from the project root (as the benchmarks read it); from a
# git worktree kept a level further down (wt/<name>), ../../shared/data. Tests that need it skip without it.
DATA = next((d for d in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if d.is_dir()),
            ROOT.parent / "shared" / "data")

NOT_FOUND_BODY = b"""<!DOCTYPE html><html><head><title>Page not found</title></head>
<body><h1>Page not found</h1><p>The page you asked for does not exist. Check the address.</p></body></html>"""
SLOW_HEAD = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Slow report</title></head>
<body><h1>Quarterly report</h1><p>The first part of this report arrived; the rest never will.</p>
"""
PDF_BODY = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)


def _png(width: int = 8, height: int = 8) -> bytes:
    """A valid solid-colour PNG, built by hand so no imaging library is needed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x20\x60\xc0" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


PNG_BODY = _png()
# What /api/late answers, after LATE_S, to fetched.html's two fetches (?part=1, ?part=2).
LATE_S = 0.6
LATE_TEXT = {
    "1": "The last boat to Kalvøya tonight leaves at 23:15 from pier 6.",
    "2": "From 1 November the first boat leaves at 06:40 instead of 06:10.",
}
HUGE_FACT = "The reserve for lot 77777 is 1,250 EUR."


# The pages too big for trafilatura (extraction.MAX_HTML_ELEMENTS, 20,000) are
# over that limit by a fifth, and no bigger: every extra megabyte is seconds of
# Chromium and of the budgeter (the 5 MB limit on characters is tested in process).
HUGE_ROWS = 6_000


@cache
def huge_page() -> bytes:
    """About 1.1 MB of HTML, 24k elements: an auction archive with one fact near the top."""
    cell = "Oak sideboard, restored, with brass fittings and its original key " * 2
    rows = "".join(f"<tr><td>Lot {i}</td><td>{cell}</td><td>{i * 7 % 1000} EUR</td></tr>\n" for i in range(HUGE_ROWS))
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Auction archive</title></head><body>'
        f"<h1>Auction archive</h1><p>{HUGE_FACT}</p><table><tr><th>Lot</th><th>Description</th><th>Price</th></tr>"
        f"{rows}</table></body></html>"
    ).encode()


HUGE_DEEP_FACT = "The spare key to the harbour master's boathouse is kept in locker 4471."
HUGE_DEEP_QUESTION = "Where is the spare key to the harbour master's boathouse kept?"
_SHIPS = ("Aldebaran", "Brisk Tern", "Calloway", "Dunmore Star", "Eastwind", "Fairhaven", "Gull Rock")
_CARGO = ("timber", "grain", "salt", "machine parts", "wool bales", "cement", "citrus fruit", "coal")
HUGE_DEEP_ENTRIES = 6_000


def _log_entry(i: int) -> str:
    """Four elements (a heading, a paragraph, two inline), ~215 characters of visible text."""
    ship, cargo = _SHIPS[i % len(_SHIPS)], _CARGO[i * 3 % len(_CARGO)]
    return (
        f"<h2>Entry {i}: {ship}</h2><p>The <b>{ship}</b> berthed at quay {i % 41} at {i % 24:02d}:{i * 7 % 60:02d} "
        f"carrying {100 + i * 13 % 900} tonnes of <i>{cargo}</i>. Crew {i % 17} unloaded it by "
        f"{(i + 5) % 24:02d}:{i * 11 % 60:02d}; tide gauge {i * 31 % 500} cm, wind {i % 9} Beaufort "
        f"from the {('north', 'east', 'south', 'west')[i % 4]}. Pilot fee {i * 29 % 700} EUR paid.</p>\n"
    )


@cache
def huge_deep_page() -> bytes:
    """1.4 MB of HTML (1.2M characters of visible text, 24k elements): a harbour
    log of 6,000 entries, with one fact 90% of the way down: over the element
    limit, so the visible text is read, and over budget.LONG_TEXT_CHARS (500,000,
    the old cut of a page's text), so it is analysed line by line and the fact
    is past any head-of-page cut."""
    entries = [_log_entry(i) for i in range(HUGE_DEEP_ENTRIES)]
    sizes = list(accumulate(map(len, entries)))
    entries.insert(bisect_left(sizes, 0.9 * sizes[-1]), f"<h2>Notice</h2><p>{HUGE_DEEP_FACT}</p>\n")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Harbour log</title></head><body>'
        "<h1>Harbour log</h1>" + "".join(entries) + "</body></html>"
    ).encode()


class _FixtureServer(ThreadingHTTPServer):
    daemon_threads = True
    stopping: threading.Event
    gates: "defaultdict[str, tuple[threading.Event, threading.Event]]"  # name -> (opened, passed)


class _Handler(SimpleHTTPRequestHandler):
    server: _FixtureServer

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, directory=str(PAGES), **kwargs)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean

    def _send(self, status: int, ctype: str, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        route = urlsplit(self.path).path
        if route == "/slow":
            self._slow()
        elif route == "/404":
            self._send(404, "text/html; charset=utf-8", NOT_FOUND_BODY)
        elif route == "/file.bin":
            self._send(200, "application/octet-stream", bytes(range(256)) * 8,
                       {"Content-Disposition": 'attachment; filename="file.bin"'})
        elif route == "/data.pdf":
            self._send(200, "application/pdf", PDF_BODY)
        elif route == "/image.png":
            self._send(200, "image/png", PNG_BODY)
        elif route == "/huge.html":
            self._send(200, "text/html; charset=utf-8", huge_page())
        elif route == "/huge_deep.html":
            self._send(200, "text/html; charset=utf-8", huge_deep_page())
        elif route in ("/stalled.png", "/poll"):
            self._hold()
        elif route == "/api/late":
            self.server.stopping.wait(timeout=LATE_S)
            part = parse_qs(urlsplit(self.path).query).get("part", [""])[0]
            self._send(200, "text/plain; charset=utf-8", LATE_TEXT.get(part, "").encode())
        elif route == "/api/gate":
            self._gate(parse_qs(urlsplit(self.path).query))
        elif route == "/hangs.html":  # its script never ends: the page is never parsed to its end
            self._send(200, "text/html; charset=utf-8", b"<html><body><p>Started.</p><script>for (;;) {}</script>"
                       b"<p>Never shown.</p></body></html>")
        elif route == "/delayed":  # the product page, sent after ?s= seconds: a slow load
            self.server.stopping.wait(timeout=float(parse_qs(urlsplit(self.path).query).get("s", ["1"])[0]))
            self._send(200, "text/html; charset=utf-8", (PAGES / "product.html").read_bytes())
        elif route == "/latin1.html":
            # The header, not only the <meta>, declares the legacy charset.
            self._send(200, "text/html; charset=windows-1252", (PAGES / "latin1.html").read_bytes())
        else:
            super().do_GET()

    def _slow(self) -> None:
        """Headers and the start of the body, then nothing until the server stops:
        the load event never fires."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        try:
            self.wfile.write(SLOW_HEAD)
            self.wfile.flush()
            self.server.stopping.wait(timeout=300)
        except OSError:
            pass  # the browser gave up and closed the connection

    def _gate(self, query: dict[str, list[str]]) -> None:
        """A page waits at a gate (`?name=N`) until the test opens it
        (`&open=1`), then says it went through (`&passed=1`); the test's
        request returns once it has: see `Site.open_gate`."""
        opened, passed = self.server.gates[query.get("name", [""])[0]]
        if "open" in query:
            opened.set()
            went = passed.wait(timeout=60)
            self._send(200 if went else 504, "text/plain; charset=utf-8", b"passed" if went else b"nobody passed")
            return
        if "passed" in query:
            passed.set()
        else:
            opened.wait(timeout=300)
        self._send(200, "text/plain; charset=utf-8", b"")

    def _hold(self) -> None:
        """Read the request, answer nothing until the server stops: an image
        that never arrives, a long poll with no news, a tag manager that hangs."""
        self.server.stopping.wait(timeout=300)


# Property tests check what holds for every input, never how long one took:
# Hypothesis' default 200 ms deadline per example failed them on a loaded machine.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes tests start and interrupt. A suite started
    in the background by a shell without job control (`make test &`, a CI
    runner) inherits SIGINT ignored, and so would every child: the CLI, the
    daemon's client and the fake Gemini server would never see the tests'
    Ctrl-C. Python keeps an ignored SIGINT ignored, so give it its handler back
    (a child then starts with the default, as from a terminal)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class Site:
    """The served fixtures: `site.url("article")` → http://127.0.0.1:PORT/article.html."""

    base: str

    def url(self, name: str) -> str:
        if name.startswith("/"):
            return self.base + name  # an extra route such as /slow or /404
        return f"{self.base}/{name if '.' in name else name + '.html'}"

    @staticmethod
    def path(name: str) -> Path:
        return PAGES / (name if "." in name else name + ".html")

    def open_gate(self, name: str) -> None:
        """Let pages waiting at gate `name` go on (changing.html?gate=NAME
        changes itself); returns once one has gone through."""
        with urlopen(f"{self.base}/api/gate?name={name}&open=1", timeout=90) as reply:  # noqa: S310 - loopback
            assert reply.status == 200


@pytest.fixture(scope="session", autouse=True)
def _no_developer_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite never reads or writes the developer's settings file, nor
    inherits a model choice from their environment, nor asks their daemon;
    child processes (the CLI, the host) inherit the same. Session-wide, so
    session fixtures see it too."""
    path = tmp_path_factory.mktemp("settings") / "config.toml"
    saved = {k: os.environ.get(k) for k in ("CHATAGENT_CONFIG", "CHATAGENT_MODEL", "CHATAGENT_DAEMON",
                                            "CHATAGENT_DAEMON_DIR")}
    os.environ["CHATAGENT_CONFIG"] = str(path)
    os.environ["CHATAGENT_DAEMON_DIR"] = str(tmp_path_factory.mktemp("daemon"))
    os.environ.pop("CHATAGENT_MODEL", None)
    os.environ.pop("CHATAGENT_DAEMON", None)
    yield path
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session", autouse=True)
def _warm_start() -> Iterator[None]:
    """The CLI, MCP server and host the tests start are forked from a warm
    interpreter (tests/warm_start.py), unless CHATAGENT_TEST_COLD_START=1."""
    if os.environ.get("CHATAGENT_TEST_COLD_START") == "1":
        yield
        return
    server = WarmServer()
    os.environ[WARM_SOCKET_ENV] = server.path
    try:
        yield
    finally:
        os.environ.pop(WARM_SOCKET_ENV, None)
        server.close()


@pytest.fixture(autouse=True)
def private_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own settings file: what one saves (the panel's settings,
    `config set`) never changes the model another test answers with."""
    path = tmp_path_factory.mktemp("settings") / "config.toml"
    monkeypatch.setenv("CHATAGENT_CONFIG", str(path))
    return path


@pytest.fixture(autouse=True)
def _patient_with_busy_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page busy for 10 s is given up on; a suite's loaded machine can take
    that long to read a big page, which is then wrongly "not responding".
    The guard's own test sets it back down."""
    monkeypatch.setattr(pw_backend, "SNAPSHOT_TIMEOUT_S", 120.0)


@contextmanager
def _serving(name: str) -> Iterator[Site]:
    server = _FixtureServer(("127.0.0.1", 0), _Handler)
    server.stopping = threading.Event()
    server.gates = defaultdict(lambda: (threading.Event(), threading.Event()))
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    with _serving("fixture-server") as served:
        yield served


@pytest.fixture(scope="session")
def other_site() -> Iterator[Site]:
    """The same fixtures from a second loopback server: another origin, for cross-origin frames."""
    with _serving("fixture-server-2") as served:
        yield served


def record_evaluate(tab: Tab, replies: list[dict] | None = None) -> list[dict]:
    """Every reply the tab's page gives to `page.evaluate` from now on, added to `replies`."""
    page = tab.page  # type: ignore[attr-defined] - a PlaywrightTab
    replies = [] if replies is None else replies
    evaluate = page.evaluate

    async def recording(*args, **kwargs):
        reply = await evaluate(*args, **kwargs)
        replies.append(reply)
        return reply

    page.evaluate = recording
    return replies


@pytest.fixture(scope="session")
def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: connection refused, at once."""
    return f"http://127.0.0.1:{free_port()}/"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[PlaywrightBrowser]:
    """One headless Chromium for the session, found by the project's own discovery."""
    browser = await PlaywrightBrowser.launch()
    try:
        yield browser
    finally:
        await browser.close()


OpenTabs = Callable[..., Awaitable[list[Tab | TabFailure]]]


@pytest_asyncio.fixture(loop_scope="session")
async def open_tabs(chromium: PlaywrightBrowser) -> AsyncIterator[OpenTabs]:
    """`await open_tabs([url, ...], timeout_s=...)`; the tabs are closed after the test."""
    opened: list[Tab] = []

    async def _open(targets: list[str], *, timeout_s: float | None = None) -> list[Tab | TabFailure]:
        result = await chromium.open_tabs(targets, timeout_s=timeout_s)
        opened.extend(t for t in result if isinstance(t, Tab))
        return result

    yield _open
    for tab in opened:
        await tab.close()


@pytest.fixture
def gemini() -> Iterator[GeminiServer]:
    """The local Gemini-compatible server: instant replies, two words per chunk."""
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=2) as server:
        yield server
