"""Replicas of `chatagent mcp --http`: stateless, so a load balancer (a real
HAProxy) may send any request to any of them; and drained on SIGTERM, so a
replica being stopped answers the calls it holds and takes no new ones."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet import NO_HAPROXY, accepts, haproxy, haproxy_path, replica
from conftest import Site

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]

TOKEN = "replica-test-token-0123456789abcdef"


@contextlib.asynccontextmanager
async def client(url: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # as an agent does first; the client checks results against these schemas
        yield session


@pytest.mark.skipif(haproxy_path() is None, reason=NO_HAPROXY)
async def test_two_replicas_behind_haproxy_answer_two_clients(site: Site) -> None:
    """Two replicas sharing one Playwright browser server, HAProxy spreading
    each request over them: two clients' calls are all answered, by both."""
    from benchmarks.server import playwright_browser_server

    async with playwright_browser_server() as browsers, replica(TOKEN, browser_ws=browsers.ws) as a, \
            replica(TOKEN, browser_ws=browsers.ws) as b, haproxy([a.port, b.port]) as lb:

        async def reads(pages: list[str]) -> list[Any]:
            async with client(lb.url) as session:
                return [await session.call_tool("read_pages", {"urls": [site.url(p)]}) for p in pages]

        first, second = await asyncio.gather(reads(["product", "article", "product"]),
                                             reads(["article", "product", "article"]))
        served = await lb.served()
    for result in first + second:
        assert not result.is_error, result.content
    assert "$1,349.00" in first[0].structured_content["pages"][0]["text"]
    assert all(n > 0 for n in served.values()) and len(served) == 2, f"both replicas answered: {served}"


class _HeldPage:
    """A page whose response waits until the test lets it go: a call reading it is in progress till then."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        held = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                held.asked.set()
                held.release.wait(timeout=120)
                body = b"<title>Held</title><p>The held page arrived whole.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/held.html"

    @classmethod
    @contextlib.contextmanager
    def serving(cls) -> Iterator["_HeldPage"]:
        page = cls()
        thread = threading.Thread(target=page.httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield page
        finally:
            page.release.set()
            page.httpd.shutdown()
            page.httpd.server_close()


async def test_a_replica_stopped_mid_call_answers_it_and_takes_no_new_call() -> None:
    """SIGTERM while a call is in progress: the replica stops listening at
    once, yet the call is answered in full however long its page takes (here
    longer than uvicorn's few seconds of grace), and it exits 143 after."""
    with _HeldPage.serving() as held:
        async with replica(TOKEN, env={"CHATAGENT_TIMEOUT": "60"}) as r, client(r.url) as session:
            call = asyncio.ensure_future(session.call_tool("read_pages", {"urls": [held.url]}))
            while not held.asked.is_set():  # the replica's browser is loading the page: the call is in progress
                assert not call.done(), call.result().content
                await asyncio.sleep(0.05)
            r.stop()
            while accepts(r.port):  # takes no new connection: a balancer sends new calls elsewhere
                await asyncio.sleep(0.05)
            await asyncio.sleep(6)  # a page slower than a few seconds: beyond the grace uvicorn gives by default
            held.release.set()
            result = await asyncio.wait_for(call, 60)
            status = await asyncio.wait_for(r.proc.wait(), 60)
    assert not result.is_error, result.content
    assert "arrived whole" in result.structured_content["pages"][0]["text"]
    assert status == 143


def _placed(pid: int) -> tuple[bytes, dict[int, set[int]]]:
    """A process's command line and the CPUs each of its threads may run on; what is gone meanwhile is left out."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return b"", {}
    cpus: dict[int, set[int]] = {}
    for tid in tids:
        with contextlib.suppress(OSError):
            cpus[tid] = os.sched_getaffinity(tid)
    return cmdline, cpus


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs: one for the browser server, one for the rest")
async def test_a_browser_server_given_a_cpu_runs_every_process_of_its_browser_there(site: Site) -> None:
    """The load benchmark's deployment layout (`--browser-cpus`): the browser server, its
    browser and the renderer of a page opened through it all run on the CPU it was given."""
    from playwright.async_api import async_playwright

    from benchmarks.scale import process_tree
    from benchmarks.server import playwright_browser_server

    cpu = min(os.sched_getaffinity(0))
    async with playwright_browser_server(cpus=frozenset({cpu})) as server, async_playwright() as pw:
        browser = await pw.chromium.connect(server.ws)
        page = await browser.new_page()
        await page.goto(site.url("product"))
        seen = [_placed(pid) for pid in process_tree([server.pid])]
        await browser.close()
    cmdlines = [cmdline for cmdline, _ in seen]
    placed = {tid: cpus for _, threads in seen for tid, cpus in threads.items()}
    assert any(b"--type=renderer" in c for c in cmdlines), "the page's renderer is in the server's tree"
    assert placed and all(cpus == {cpu} for cpus in placed.values()), placed
    assert os.sched_getaffinity(0) != {cpu}, "the test's own process stays where it was"
