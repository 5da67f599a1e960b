"""Every tab a `chatagent mcp` call opens is closed when the call ends, however
it ends: cancelled by its client (while its pages load, or once they are open),
its client killed or its pipe closed, the server stopped mid-call. Attached to
a Chrome of the user's (`--cdp`), counted as that Chrome's own DevTools
endpoint lists its tabs: only the user's stay. Launched, counted in the
server's own browser. Through the real MCP SDK client, stdio and HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from mcp import ClientSession

from benchmarks.server import debuggable_chromium, free_port
from chatagent.browser.playwright import SETTLE_CAP_S
from chatagent.testing.gemini_server import GeminiServer

from conftest import ROOT, Site
from origin import listening, page_targets, serving, tabs_settle_to
from warm_start import command
from test_mcp import server as stdio_server

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]

TOKEN = "token-of-the-test"
NEVER_S = "600"  # a load timeout and a model's first token far beyond any test: a tab they keep open stays


async def until(condition: Callable[[], object]) -> None:
    while not condition():
        await asyncio.sleep(0.05)


async def cancelled(call: "asyncio.Task[Any]") -> None:
    """Cancel a client's call (the SDK sends `notifications/cancelled`) and let it end."""
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def loaded(endpoint: str, url: str) -> None:
    """Until the attached Chrome shows `url` parsed (its title), and the most
    its tab takes to settle: its call holds it open, waiting for its other tabs."""
    def parsed() -> bool:
        with urllib.request.urlopen(f"{endpoint}/json/list", timeout=10) as r:  # noqa: S310 - loopback
            return any(t["url"] == url and t["title"] not in ("", url) for t in json.loads(r.read()))

    while not await asyncio.to_thread(parsed):
        await asyncio.sleep(0.1)
    await asyncio.sleep(SETTLE_CAP_S + 1)


def slow_model(gemini: GeminiServer) -> dict[str, str]:
    return {"GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": gemini.url, "CHATAGENT_MODEL": "gemini-2.5-flash"}


async def test_cancelled_calls_leave_only_the_users_tabs_in_an_attached_chrome(site: Site) -> None:
    """Cancelled once its pages are open (its question with the model), with
    one page open and one still loading, and while they load (pages that never
    finish, each call cancelled as its pages start to arrive, when Chromium may
    lose a close): none of the calls' tabs stays, while the server runs on."""
    with serving() as origin, GeminiServer(ttft_s=float(NEVER_S)) as gemini:
        async with debuggable_chromium(url=site.url("product")) as endpoint:
            users = page_targets(endpoint)
            env = {"CHATAGENT_CDP": endpoint, "CHATAGENT_TIMEOUT": NEVER_S, **slow_model(gemini)}
            async with stdio_server(**env) as s:
                asking = asyncio.create_task(s.call_tool("ask_pages", {
                    "urls": [site.url("article"), site.url("table"), site.url("long")], "question": "Who wrote it?"}))
                await until(lambda: gemini.generate_requests)  # its three tabs are open
                await cancelled(asking)
                half = asyncio.create_task(s.call_tool("read_pages", {"urls": [site.url("article"), origin.url("/stall?half")]}))
                await loaded(endpoint, site.url("article"))
                await cancelled(half)
                with contextlib.ExitStack() as stack:
                    for wave in range(3):
                        # An origin each: a tab left open keeps its connection, and Chrome's six a host would
                        # hold the next calls' requests back.
                        origins = [stack.enter_context(serving()) for _ in range(6)]
                        calls = [asyncio.create_task(s.call_tool("read_pages", {
                            "urls": [at.url(f"/stall?t={t}") for t in range(2)]})) for at in origins]
                        for at, call in zip(origins, calls):
                            await at.asked("/stall")  # its pages are arriving
                            await cancelled(call)
                    left = await tabs_settle_to(endpoint, users)
                read = await s.call_tool("read_pages", {"urls": [site.url("product")]})
    assert sorted(left) == sorted(users), f"tabs of cancelled calls left open: {sorted(set(left) - set(users))}"
    assert not read.is_error and "$1,349.00" in read.structured_content["pages"][0]["text"], "the server serves on"


@contextlib.asynccontextmanager
async def http_server(**env: str) -> AsyncIterator[str]:
    """`chatagent mcp --http` on loopback, with a bearer token; yields its URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *command("mcp", "--http", f"127.0.0.1:{port}"), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_MCP_TOKEN": TOKEN, **env},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await listening(port, 60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        await proc.wait()


# A client in a process of its own, killed mid-call: its connection drops, it never says goodbye.
CLIENT = """
import asyncio, sys, httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url, token, tool, args):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600) as http, \\
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await s.call_tool(tool, eval(args))

asyncio.run(main(*sys.argv[1:]))
"""


async def killed_client(url: str, tool: str, args: dict[str, Any], started: Callable[[], Any]) -> None:
    """A client that calls `tool` over HTTP, killed once `started()` (awaitable) returns."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, url, TOKEN, tool, repr(args), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await started()
    finally:
        proc.kill()
        await proc.wait()


async def test_a_killed_client_or_a_closed_pipe_leaves_only_the_users_tabs(site: Site) -> None:
    """Its client killed mid-call, over HTTP (the connection drops, the
    session stays) or over stdio (the server's stdin closes), a call's tabs
    close now, not when the call would have ended (here: never)."""
    with serving() as origin:
        async with debuggable_chromium(url=site.url("product")) as endpoint:
            users = page_targets(endpoint)
            env = {"CHATAGENT_CDP": endpoint, "CHATAGENT_TIMEOUT": NEVER_S}
            async with http_server(**env) as url:
                await killed_client(url, "read_pages", {"urls": [origin.url("/stall?http=1"), site.url("article")]},
                                    lambda: asyncio.gather(origin.asked("/stall?http=1"), loaded(endpoint, site.url("article"))))
                over_http = await tabs_settle_to(endpoint, users)
            proc = await raw_stdio_server(env)
            try:
                await send(proc, 2, "tools/call", {"name": "read_pages", "arguments": {
                    "urls": [origin.url("/stall?stdio=1"), site.url("article")]}})
                await origin.asked("/stall?stdio=1")
                assert proc.stdin is not None
                proc.stdin.close()  # the client goes: its end of the pipe closes
                await asyncio.wait_for(proc.wait(), 60)
            finally:
                if proc.returncode is None:
                    proc.kill()
            over_stdio = await tabs_settle_to(endpoint, users)
    assert sorted(over_http) == sorted(users), f"left open by a killed HTTP client's call: {over_http}"
    assert sorted(over_stdio) == sorted(users), f"left open by a call whose stdio client went: {over_stdio}"


async def raw_stdio_server(env: dict[str, str]) -> asyncio.subprocess.Process:
    """`chatagent mcp` on stdio, initialized, spoken to in JSON-RPC lines (its pid is needed to signal it)."""
    proc = await asyncio.create_subprocess_exec(
        *command("mcp"), cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    await send(proc, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
    assert proc.stdout is not None
    assert b'"id":1' in (await asyncio.wait_for(proc.stdout.readline(), 120)).replace(b" ", b"")
    await send(proc, None, "notifications/initialized", None)
    return proc


async def send(proc: asyncio.subprocess.Process, id_: int | None, method: str, params: dict[str, Any] | None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    await proc.stdin.drain()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_server_stopped_mid_call_leaves_only_the_users_tabs(site: Site, sig: signal.Signals) -> None:
    """Stopped (SIGTERM, as a service manager stops it; Ctrl-C) while one call's
    page loads and another's pages are open: the server closes them before it exits."""
    with serving() as origin, GeminiServer(ttft_s=float(NEVER_S)) as gemini:
        async with debuggable_chromium(url=site.url("product")) as endpoint:
            users = page_targets(endpoint)
            proc = await raw_stdio_server({"CHATAGENT_CDP": endpoint, "CHATAGENT_TIMEOUT": NEVER_S, **slow_model(gemini)})
            try:
                await send(proc, 2, "tools/call", {"name": "ask_pages", "arguments": {
                    "urls": [site.url("article"), site.url("table")], "question": "Who wrote it?"}})
                await send(proc, 3, "tools/call", {"name": "read_pages", "arguments": {"urls": [origin.url("/stall?stop=1")]}})
                await origin.asked("/stall?stop=1")
                await until(lambda: gemini.generate_requests)
                proc.send_signal(sig)
                status = await asyncio.wait_for(proc.wait(), 120)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            left = await tabs_settle_to(endpoint, users)
    assert status == {signal.SIGTERM: 143, signal.SIGINT: 130}[sig]
    assert sorted(left) == sorted(users), f"left open by a server stopped mid-call: {left}"


def watch_browsers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The browsers the runtime opens from now on, as it opens them, to be watched."""
    from chatagent import runtime as runtime_module
    from chatagent.settings import Settings

    browsers: list[Any] = []
    open_browser = runtime_module.open_browser

    async def watched(settings: Settings) -> Any:
        browsers.append(await open_browser(settings))
        return browsers[-1]

    monkeypatch.setattr(runtime_module, "open_browser", watched)
    return browsers


async def test_launched_the_tabs_of_cancelled_calls_and_killed_clients_close_at_once(
    site: Site, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server's own browser: a call cancelled once its pages are open, and a
    killed client's call (one page open, one loading), leave no page open in it
    (not until the server stops: now). The server runs in this process so its
    browser can be watched."""
    from chatagent.mcp_server import serve_http
    from chatagent.settings import Settings

    browsers = watch_browsers(monkeypatch)

    def pages() -> int:
        return len(browsers[0].context.pages) if browsers else 0

    async def article_loaded() -> None:  # as `loaded`, in the server's own browser
        while True:
            titles = [await p.title() for p in browsers[0].context.pages if p.url == site.url("article")]
            if any(titles):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(SETTLE_CAP_S + 1)

    async def settled() -> int:  # within 30 s: closing takes a moment; a page left behind stays
        for _ in range(150):
            if pages() == 0:
                break
            await asyncio.sleep(0.2)
        return pages()

    with serving() as origin, GeminiServer(ttft_s=float(NEVER_S)) as gemini:
        port = free_port()
        settings = Settings(model="gemini-2.5-flash", google_api_key="test", gemini_base_url=gemini.url,
                            timeout=float(NEVER_S), mcp_token=TOKEN)
        serving_http = asyncio.create_task(serve_http(settings, "127.0.0.1", port))
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            await listening(port, 60)
            async with http_client(url) as s:
                asking = asyncio.create_task(s.call_tool("ask_pages", {
                    "urls": [site.url("article"), site.url("table"), site.url("long")], "question": "Who wrote it?"}))
                await until(lambda: gemini.generate_requests)
                opened = pages()
                await cancelled(asking)
                after_cancel = await settled()
                await killed_client(url, "read_pages", {"urls": [origin.url("/stall?launched=1"), site.url("article")]},
                                    lambda: asyncio.gather(origin.asked("/stall?launched=1"), article_loaded()))
                after_kill = await settled()
        finally:
            serving_http.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving_http
    assert opened == 3, "the call's pages were open when it was cancelled"
    assert after_cancel == 0, f"{after_cancel} page(s) of a cancelled call left open"
    assert after_kill == 0, f"{after_kill} page(s) of a killed client's call left open"


@contextlib.asynccontextmanager
async def http_client(url: str) -> AsyncIterator[ClientSession]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session



async def test_read_pages_closes_each_page_it_opened_once_read_before_extracting_its_text(
    site: Site, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page left open goes on using the browser's CPU (Chromium lays it out and
    paints it after it loads) and holds a tab slot: read_pages closes each page it
    opened as soon as its snapshot is taken, so none is open while its text is
    extracted. In this process, so the browser can be watched as extraction starts."""
    from chatagent.extraction import Extractor
    from chatagent.mcp_server import PageTools
    from chatagent.runtime import Runtime
    from chatagent.settings import Settings

    browsers = watch_browsers(monkeypatch)
    open_while_extracted: list[bool] = []

    class Watching(Extractor):
        async def extract(self, snapshot: Any) -> Any:
            def shown() -> bool:
                return any(p.url == snapshot.url for p in browsers[0].context.pages)

            for _ in range(50):  # within 10 s: a close takes a moment; a page kept open stays
                if not shown():
                    break
                await asyncio.sleep(0.2)
            open_while_extracted.append(shown())
            return await super().extract(snapshot)

    async with Runtime(Settings(model="extractive")) as runtime:
        await runtime.load()
        runtime.builder.extractor = Watching()
        read = await PageTools(runtime).read_pages([site.url("article"), site.url("table")], None, 2000)
        left = len(browsers[0].context.pages)
    assert [p.error for p in read.pages] == [None, None] and all(p.text for p in read.pages)
    assert open_while_extracted == [False, False], "a page was still open while its text was extracted"
    assert left == 0
