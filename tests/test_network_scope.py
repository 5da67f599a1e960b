"""No page chatagent opens reaches a service on the user's machine: a hostile
saved page (served by chatagent from loopback) and a hostile web page try
every way a page has (fetches with and without CORS, a DELETE, images,
frames, WebSockets, a worker's fetch, a form post, navigating itself there, a
redirect) against a stand-in local service that records every byte it is
sent; it is sent nothing, the tab is still read, and it says what was blocked.

A web page is modelled as one on a public address: the test names it by a
public-looking host (Chromium's --host-resolver-rules maps it to the test's
loopback server) that Chromium counts as public (--ip-address-space-overrides,
the switch Chromium's own tests use), so the page gets no help from the test.
A page the user names at a local address is theirs, and reads its own origin."""

from __future__ import annotations

import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chatagent.browser.base import TabFailure
from chatagent.browser.network_scope import is_local_host
from chatagent.browser.playwright import PlaywrightBrowser, PlaywrightTab

ROOT = Path(__file__).resolve().parent.parent
FACT = "Bake the bread at 220 degrees for 35 minutes."
SECRET = "llama3.2:latest model list"
BLOCKED = "chatagent blocked it (a page it opens may not reach local services)"


class _Recorder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    received: list[bytes]


class _Record(socketserver.BaseRequestHandler):
    """Whatever arrives is recorded; an HTTP request is answered as Ollama would, open to any origin."""

    server: _Recorder

    def handle(self) -> None:
        self.request.settimeout(2)
        try:
            data = self.request.recv(65536)
        except OSError:
            return
        if data:
            self.server.received.append(data)
            body = f"<p>{SECRET}</p>".encode()
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nAccess-Control-Allow-Origin: *\r\n"
                                 b"Access-Control-Allow-Methods: *\r\nAccess-Control-Allow-Private-Network: true\r\n"
                                 b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


class _Recorder6(_Recorder):
    address_family = socket.AF_INET6


@contextmanager
def local_service() -> Iterator[tuple[int, list[bytes]]]:
    """A stand-in local service (as Ollama: it trusts any page) on 127.0.0.1 and ::1, one port."""
    received: list[bytes] = []
    v4 = _Recorder(("127.0.0.1", 0), _Record)
    port = v4.server_address[1]
    servers = [v4]
    try:
        servers.append(_Recorder6(("::1", port), _Record))
    except OSError:
        pass  # no IPv6 loopback here
    for s in servers:
        s.received = received
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield port, received
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def _lines(received: list[bytes]) -> list[bytes]:
    return [r.split(b"\r\n", 1)[0] for r in received[:6]]


def hostile_page(port: int) -> str:
    """A recipe page whose script tries the local service every way it can, then navigates itself there."""
    attacks = "".join(f"""
  {{ const u = 'http://{host}:{port}';
     fetch(u + '/api/tags').then(r => r.text()).then(t => document.body.append(t)).catch(() => {{}});
     fetch(u + '/api/delete', {{method: 'DELETE', body: '{{"model": "llama3.2"}}'}}).catch(() => {{}});
     fetch(u + '/api/pull', {{method: 'POST', mode: 'no-cors', body: 'x'}}).catch(() => {{}});
     new Image().src = u + '/img';
     try {{ new WebSocket('ws://{host}:{port}/ws'); }} catch (e) {{}}
     try {{ new Worker(URL.createObjectURL(new Blob(["fetch('" + u + "/worker')"]))); }} catch (e) {{}}
     const f = document.createElement('iframe'); f.src = u + '/frame'; document.body.appendChild(f); }}"""
        for host in ("127.0.0.1", "localhost", "[::1]", "127.0.0.2", "sub.localhost"))
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Recipes</title></head><body>
<h1>Recipes</h1><p>{FACT}</p>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="http://127.0.0.1:{port}/api/delete" target="sink"><input name="model" value="llama3.2"></form>
<script>{attacks}
document.getElementById('f').submit();
setTimeout(() => {{ location.href = 'http://127.0.0.1:{port}/api/tags'; }}, 50);
</script></body></html>"""


@pytest.mark.e2e
def test_a_hostile_saved_page_reaches_no_local_service_and_is_still_read(tmp_path: Path) -> None:
    """`chatagent ask` on a saved page: served from loopback, but no more local for that."""
    with local_service() as (port, received):
        page = tmp_path / "recipes.html"
        page.write_text(hostile_page(port))
        proc = subprocess.run(
            [sys.executable, "-m", "chatagent", "ask", str(page), "-q", "How long is the bread baked?"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
        )
    assert proc.returncode == 0, proc.stderr
    assert received == [], f"the local service was sent {_lines(received)}"
    assert "35 minutes" in proc.stdout and SECRET not in proc.stdout + proc.stderr
    assert BLOCKED in proc.stderr and f"127.0.0.1:{port}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


class _Site(BaseHTTPRequestHandler):
    """The web page's server: the hostile page, a redirect to the local service, and a page of its own origin."""

    port = 0

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{self.port}/api/tags")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/data":
            body = b"Opening hours: nine to five."
        elif self.path == "/own":
            body = (b"<title>Mine</title><h1>My dev server</h1><p id=out>loading</p>"
                    b"<script>fetch('/data').then(r => r.text()).then(t => { out.textContent = t; });</script>")
        else:
            body = hostile_page(self.port).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextmanager
def site(port: int) -> Iterator[int]:
    handler = type("Site", (_Site,), {"port": port})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.asyncio(loop_scope="session")
async def test_a_hostile_web_page_reaches_no_local_service_and_a_named_local_page_reads_its_own() -> None:
    with local_service() as (port, received), site(port) as web, site(port) as mine:
        browser = await PlaywrightBrowser.launch(extra_args=[
            "--host-resolver-rules=MAP recipes.example 127.0.0.1",
            f"--ip-address-space-overrides=127.0.0.1:{web}=public",
        ])
        try:
            tabs = await browser.open_tabs([
                f"http://recipes.example:{web}/", f"http://recipes.example:{web}/redirect",
                f"http://127.0.0.1:{mine}/own"])
            page, redirect, own = tabs
            assert isinstance(page, PlaywrightTab) and isinstance(own, PlaywrightTab), tabs
            snap = await page.snapshot()
            own_snap = await own.snapshot()
        finally:
            await browser.close()
    assert received == [], f"the local service was sent {_lines(received)}"
    assert FACT in snap.visible_text and SECRET not in snap.visible_text, "the page stays where it was"
    assert any(BLOCKED in n and f"127.0.0.1:{port}" in n for n in snap.notes), snap.notes
    assert isinstance(redirect, TabFailure) and redirect.code == "local_address", redirect
    assert f"led to 127.0.0.1:{port}, on this machine" in redirect.message
    assert "nine to five" in own_snap.visible_text and not own_snap.notes, "a page the user named reads its own origin"


@pytest.mark.parametrize("host, local", [
    ("127.0.0.1", True), ("127.9.9.9", True), ("[::1]", True), ("::ffff:127.0.0.1", True), ("0.0.0.0", True),
    ("10.1.2.3", True), ("172.16.0.1", True), ("192.168.1.1", True), ("169.254.169.254", True), ("fd00::1", True),
    ("fe80::1", True), ("100.64.0.1", True), ("localhost", True), ("LocalHost.", True), ("api.localhost", True),
    ("printer.local", True), ("router.home.arpa", True),
    ("8.8.8.8", False), ("2606:4700::1111", False), ("example.com", False), ("localhost.example.com", False),
    ("172.32.0.1", False),
])
def test_what_counts_as_this_machine_or_its_network(host: str, local: bool) -> None:
    assert is_local_host(host) is local


@pytest.mark.asyncio(loop_scope="session")
async def test_a_saved_page_reloaded_after_a_crash_is_kept_off_local_services(tmp_path: Path) -> None:
    """Its renderer crashed, the tab opens its page again in a new one: the same scope holds there."""
    import asyncio

    from test_faults import _crash

    with local_service() as (port, received):
        page = tmp_path / "recipes.html"
        page.write_text(hostile_page(port))
        browser = await PlaywrightBrowser.launch()
        try:
            (tab,) = await browser.open_tabs([str(page)])
            assert isinstance(tab, PlaywrightTab), tab
            await tab.snapshot()
            await _crash(tab)
            snap = await tab.snapshot()
            await asyncio.sleep(1.0)  # the page navigates itself 50 ms after it runs: give it the time
            again = await tab.snapshot()
        finally:
            await browser.close()
    assert received == [], f"the local service was sent {_lines(received)}"
    assert "had crashed; reloaded it" in " ".join(snap.notes)
    assert FACT in again.visible_text and SECRET not in again.visible_text
