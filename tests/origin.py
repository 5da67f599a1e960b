"""A loopback origin for tests of tabs' lifetimes and bounds: pages that stall,
pages that come late, bodies far larger than a tab may load (streamed without
a Content-Length, or announced with one), and a record of what it was asked
and what it sent. Plus the DevTools endpoint's view of an attached Chrome's
tabs."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HEAD = b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Stalled</title></head><body><h1>A report</h1>\n"
FILLER = b"<p>" + b"Row of an endless ledger, line after line after line. " * 60 + b"</p>\n"
BIG_MB = 200
BIG_MB_PER_S = 40  # paced: whether the browser hung up before the end does not depend on how fast it reacts
# Sent at once, before the pacing: a tab bounded at 5 MB is past its bound as soon as the browser reads,
# however late a busy machine wakes the pacing thread.
UNPACED_MB = 10
# Its file says its length, so the bound trips on the headers: counting a streamed 5 MB within the
# settle cap is a race a busy machine can lose (the page is then read before the file is closed).
FETCHES_BIG = b"""<!DOCTYPE html><html><head><meta charset='utf-8'><title>Dashboard</title></head><body>
<h1>Dashboard</h1><p>The figures load below.</p><pre id=out></pre><script>
fetch('/big?mode=length&for=fetch').then(r => r.text()).then(t => { out.textContent = t.length; });
</script></body></html>"""


@dataclass
class Record:
    """What the origin was asked (paths, in order) and, per big body, how many bytes it sent."""

    asked: list[str] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)
    finished: dict[str, bool] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(p.startswith(prefix) for p in self.asked)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stopping: threading.Event
    record: Record


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        record = self.server.record
        with record.lock:
            record.asked.append(self.path)
        route = urlsplit(self.path).path
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        if route == "/stall":
            self._stall()
        elif route == "/late":
            self.server.stopping.wait(float(query.get("s", "1")))
            self._page(f"<title>Late {query.get('n', '')}</title><h1>Late page</h1><p>It came late, but whole.</p>")
        elif route == "/big":
            self._big(query.get("mode", "chunked"))
        elif route == "/fetches-big":
            self._send(FETCHES_BIG)
        else:
            self.send_error(404)

    def _page(self, html: str) -> None:
        self._send(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>".encode())

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stall(self) -> None:
        """The head of a page, then nothing until the origin stops: it never loads."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            self.wfile.write(HEAD)
            self.wfile.flush()
            self.server.stopping.wait(600)
        except OSError:
            pass

    def _big(self, mode: str) -> None:
        """BIG_MB of HTML, UNPACED_MB at once then BIG_MB_PER_S: chunked with no length said, or with a Content-Length."""
        total = BIG_MB * 1_000_000
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if mode == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(total))
        self.end_headers()
        sent, finished = 0, False
        try:
            while sent < total:
                block = (HEAD if sent == 0 else b"") + FILLER * 64
                block = block[: total - sent]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block) if mode == "chunked" else block)
                sent += len(block)
                if sent > UNPACED_MB * 1_000_000 and self.server.stopping.wait(len(block) / (BIG_MB_PER_S * 1_000_000)):
                    break
            finished = sent >= total
            if finished and mode == "chunked":
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass  # the browser closed the connection
        with self.server.record.lock:
            self.server.record.sent[self.path] = sent
            self.server.record.finished[self.path] = finished


@dataclass(frozen=True)
class Origin:
    base: str
    record: Record

    def url(self, path: str) -> str:
        return self.base + path

    async def asked(self, prefix: str, n: int = 1) -> None:
        """Until the origin has been asked for `n` paths starting with `prefix`."""
        while self.record.count(prefix) < n:
            await asyncio.sleep(0.05)

    def sent(self, path: str) -> tuple[int, bool]:
        """Bytes sent for `path` and whether all of it went, once its answer has ended."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self.record.lock:
                if path in self.record.sent:
                    return self.record.sent[path], self.record.finished[path]
            time.sleep(0.05)
        raise AssertionError(f"{path}: still sending after 60 s")


@contextmanager
def serving() -> Iterator[Origin]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.stopping = threading.Event()
    server.record = Record()
    thread = threading.Thread(target=server.serve_forever, name="origin", daemon=True)
    thread.start()
    try:
        yield Origin(f"http://127.0.0.1:{server.server_address[1]}", server.record)
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


async def listening(port: int, within_s: float) -> None:
    """Until something accepts connections on 127.0.0.1:`port` (a server
    starting), or `within_s` has passed: the caller's requests then say why."""
    for _ in range(int(within_s * 10)):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return


def page_targets(endpoint: str) -> list[str]:
    """The URLs of the attached Chrome's tabs (page targets), from its DevTools endpoint."""
    with urllib.request.urlopen(f"{endpoint}/json/list", timeout=10) as r:  # noqa: S310 - loopback
        return [t["url"] for t in json.loads(r.read()) if t["type"] == "page"]


async def tabs_settle_to(endpoint: str, users: list[str], within_s: float = 30) -> list[str]:
    """The attached Chrome's tabs once they are the user's own again, or
    as they are after `within_s` (closing tabs takes a moment; a tab left
    behind stays for good)."""
    deadline = time.monotonic() + within_s
    while True:
        now = await asyncio.to_thread(page_targets, endpoint)
        if sorted(now) == sorted(users) or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.2)
