"""The companion extension in a real Chromium, talking to a real host process
(with a fake `answer` in place of the agent) over native messaging.

Skipped when no Chromium is available. Note for tests of extension pages:
their CSP forbids eval, so use `wait_for_selector`, not `wait_for_function`.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from extension_bridge.harness import open_panel as open_panel_at
from extension_bridge.install import EXTENSION_DIR, EXTENSION_ID, HOST_NAME, manifest_for

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHATAGENT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    not CHROMIUM, reason="needs a Chromium build (extensions cannot load in branded Chrome)"
)]

FAKE_HOST = textwrap.dedent(
    """
    import asyncio, base64, os, sys
    sys.path.insert(0, {root!r})
    from chatagent.events import Citation, Done, PassStart, Screenshot, Token, ToolCall, ToolResult
    from extension_bridge.host import main

    async def answer(ask, tabs):
        yield PassStart(pass_=1)
        for t in tabs:
            s = await t.snapshot()
            yield Token(text=f"[{{t.title}}|{{'Beta text' in s.html}}|{{s.visible_text.splitlines()[0]}}]")
        if ask.question == "slow":
            await asyncio.sleep(60)
        if ask.question == "crash":
            os._exit(1)  # the host dies in the middle of the answer
        if ask.question == "tools":
            t = tabs[0]
            yield ToolCall(id="1", name="scroll", args={{"tab_id": t.tab_id, "to_text": "Pricing"}})
            r = await t.scroll("down", to_text="Pricing")
            yield ToolResult(id="1", name="scroll", text="ok")
            tall = r.page_height > r.viewport_height
            yield Token(text=f"[scroll:{{'Costs $5' in r.text}}:{{r.scroll_y > 0}}:{{tall}}]")
            for tab in tabs:
                png = await tab.screenshot()
                yield Screenshot(tab_id=tab.tab_id, png_base64=base64.b64encode(png).decode())
            try:
                await t.scroll(to_text="no such text anywhere")
            except Exception as exc:
                yield Token(text=f"[missing:{{exc}}]")
        if ask.question == "big":
            yield Token(text="y" * 2_500_000)
        if ask.question == "recipe":
            yield Done(answer="3. Preheat the oven\\n4. Bake for 20 minutes\\n\\n| Item | Price |\\n|:---|---:|\\n"
                              "| Flour | 1.20 |\\n| Sugar | 10.50 |\\n\\n[shop](https://shop.example/flour) "
                              "[bad](javascript:alert(1)) <a href='data:text/html,hi' align='right'>data</a>",
                       pass_=1)
            return
        yield Done(answer="<b>final</b> " + ask.question, pass_=1,
                   citations=[Citation(tab_id=t.tab_id, url=t.url, title=t.title) for t in tabs])

    raise SystemExit(main(answer))
    """
)


def _host_loop(on_ask: str) -> str:
    """Not the real host loop: a fake host's script that answers pings and hands each
    other message to `on_ask` (the body of `async def on(msg, writer, state)`, indented by 4)."""
    return textwrap.dedent(
        """
        import asyncio, json, sys
        sys.path.insert(0, {root!r})
        from chatagent.events import Done, Token
        from extension_bridge.messages import EventMessage
        from extension_bridge.protocol import open_stdio, protect_stdout

        async def on(msg, writer, state):
        {body}

        async def main():
            reader, writer = await open_stdio(sys.stdin.buffer, protect_stdout())
            state = {{}}
            while True:
                try:
                    msg = await reader.read_json()
                except EOFError:
                    return
                if msg["type"] == "ping":
                    await writer.send({{"type": "pong", "version": 1}})
                else:
                    await on(msg, writer, state)

        asyncio.run(main())
        """
    ).replace("{body}", textwrap.indent(textwrap.dedent(on_ask).strip(), "    "))


# Sends two scrolls of one tab at once (as a host without its per-tab lock
# would), then reports where each left the page.
OVERLAPPING_HOST = _host_loop(
    """
    if msg["type"] == "ask":
        tab = msg["tabs"][0]["tabId"]
        for call in ("c1", "c2"):
            await writer.send({{"type": "tool_request", "id": msg["id"], "callId": call, "name": "scroll",
                               "args": {{"direction": "down"}}, "tabId": tab}})
    elif msg["type"] == "tool_result":
        state[msg["callId"]] = msg
        if len(state) == 2:
            ys = [(state[c].get("scroll") or {{}}).get("scrollY") for c in ("c1", "c2")]
            await writer.send(EventMessage.wrap(msg["id"], Token(text=json.dumps(ys))))
            await writer.send(EventMessage.wrap(msg["id"], Done(answer="scrolled", pass_=1)))
            state.clear()
    """
)


# One that never answers a `cancel` (as a host stuck in a call it cannot
# interrupt would); "stuck" gets a token and nothing more.
IGNORES_CANCEL_HOST = _host_loop(
    """
    if msg["type"] == "ask":
        await writer.send(EventMessage.wrap(msg["id"], Token(text="Working on it")))
        if msg["question"] != "stuck":
            await writer.send(EventMessage.wrap(msg["id"], Done(answer="answered " + msg["question"], pass_=1)))
    """
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("site")
    (d / "a.html").write_text(
        "<html><head><title>Alpha page</title></head><body><h1>Alpha</h1>"
        + "<p>filler line</p>" * 200
        + "<h2>Pricing</h2><p>Costs $5</p>"
        + "<p>more</p>" * 200
        + "</body></html>"
    )
    (d / "b.html").write_text(
        "<html><head><title>Beta page</title></head><body><h1>Beta</h1><p>Beta text</p></body></html>"
    )
    # Freezes its own main thread just after loading: scripts in it never run again.
    (d / "busy.html").write_text(
        "<html><head><title>Busy page</title></head><body><h1>Busy</h1>"
        "<script>setTimeout(() => { while (true) {} }, 200)</script></body></html>"
    )
    (d / "report.pdf").write_bytes((ROOT / "fixtures" / "pages" / "report.pdf").read_bytes())
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(d))

    class Quiet(handler.func):  # type: ignore[name-defined,misc]
        def log_message(self, *a: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(d)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


async def _launch(profile: Path) -> tuple[Any, Any]:
    from playwright.async_api import async_playwright

    pw = await async_playwright().start()
    ctx = await pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=CHROMIUM,
        headless=True,
        args=[f"--disable-extensions-except={EXTENSION_DIR}", f"--load-extension={EXTENSION_DIR}", "--no-sandbox"],
    )
    return pw, ctx


@contextlib.asynccontextmanager
async def _with_host(tmp_path: Path, host_script: str) -> AsyncIterator[Any]:
    """Chromium with the extension, whose native host runs `host_script`."""
    profile = tmp_path / "profile"
    hosts = profile / "NativeMessagingHosts"
    hosts.mkdir(parents=True)
    script = tmp_path / "fake_host.py"
    script.write_text(host_script.format(root=str(ROOT)))
    launcher = hosts / "launcher.sh"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@" 2>>{tmp_path}/host.log\n')
    launcher.chmod(0o755)
    (hosts / f"{HOST_NAME}.json").write_text(json.dumps(manifest_for("chromium", launcher)))
    pw, ctx = await _launch(profile)
    try:
        yield ctx
    finally:
        await ctx.close()
        await pw.stop()


@pytest.fixture
async def ext_ctx(tmp_path: Path) -> AsyncIterator[Any]:
    async with _with_host(tmp_path, FAKE_HOST) as ctx:
        yield ctx


async def open_panel(ctx: Any, site: str, pages: list[str]) -> Any:
    for name in pages:
        page = await ctx.new_page()
        await page.goto(f"{site}/{name}")
    panel = await ctx.new_page()
    await panel.goto(f"chrome-extension://{EXTENSION_ID}/sidepanel.html")
    ids = await panel.evaluate(
        "async (site) => (await chrome.tabs.query({})).filter(t => t.url.startsWith(site)).map(t => t.id)", site
    )
    assert len(ids) == len(pages)
    await panel.goto(f"chrome-extension://{EXTENSION_ID}/sidepanel.html?tabs={','.join(map(str, ids))}")
    return panel


async def test_extension_id_is_the_derived_one(ext_ctx: Any) -> None:
    sw = ext_ctx.service_workers[0] if ext_ctx.service_workers else await ext_ctx.wait_for_event("serviceworker")
    assert sw.url == f"chrome-extension://{EXTENSION_ID}/background.js"


async def test_ask_two_tabs_with_tools_and_safe_rendering(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["a.html", "b.html"])
    errors: list[str] = []
    panel.on("pageerror", lambda e: errors.append(str(e)))
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    assert len(await panel.evaluate("window.chatagentTest.selectedTabIds()")) == 2
    res = await panel.evaluate("window.chatagentTest.ask('tools')")
    assert res["ok"], res["error"]
    tokens = "".join(e["text"] for e in res["events"] if e["type"] == "token")
    assert "[Alpha page|False|Alpha]" in tokens and "[Beta page|True|Beta]" in tokens
    assert "[scroll:True:True:True]" in tokens
    assert "not found" in tokens
    assert await panel.locator(".turn .shots img").count() == 2
    # A thumbnail opens the screenshot full size.
    await panel.locator(".turn .shot").first.click()
    await panel.wait_for_selector("#viewer[open]")
    shown = await panel.eval_on_selector("#viewer-image", "i => [i.naturalWidth, i.getBoundingClientRect().width]")
    thumb = await panel.eval_on_selector(".turn .shot img", "i => i.getBoundingClientRect().width")
    assert shown[0] > 300 and shown[1] > thumb
    await panel.click("#viewer .close")
    # Model text is rendered as sanitised markdown (tests/test_bridge_e2e.py tries hostile answers).
    assert await panel.inner_text(".turn .answer") == "final tools"
    chips = panel.locator(".turn .sources .chip")
    assert await chips.count() == 2 and await chips.nth(1).inner_text() == "Beta page"
    assert await panel.get_attribute("body", "data-state") == "done"
    assert errors == []


async def test_a_list_keeps_its_first_number_and_a_table_its_column_alignment(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["b.html"])
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    res = await panel.evaluate("window.chatagentTest.ask('recipe')")
    assert res["ok"], res["error"]
    answer = panel.locator(".turn .answer")
    # "3. Preheat" is step 3, not 1.
    assert await answer.locator("ol").get_attribute("start") == "3"
    assert await answer.locator("ol li").all_inner_texts() == ["Preheat the oven", "Bake for 20 minutes"]
    # `|:---|---:|`: prices right-aligned, items left-aligned, as written.
    align = "cells => cells.map(c => getComputedStyle(c).textAlign.replace('-webkit-', ''))"
    assert await answer.locator("th").evaluate_all(align) == ["left", "right"]
    assert await answer.locator("td").evaluate_all(align) == ["left", "right", "left", "right"]
    # Links are restricted as before: only the https one keeps its href.
    hrefs = await answer.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://shop.example/flour"]
    assert "bad" in await answer.inner_text() and "data" in await answer.inner_text()


async def test_the_no_tab_banner_goes_once_a_tab_is_ticked(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["b.html"])
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    box = panel.locator("#tab-list input[type=checkbox]")
    await box.uncheck()
    await panel.fill("#question", "hello")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("#error:not([hidden])")
    assert await panel.inner_text("#error-text") == "Tick at least one tab to ask about."
    await box.check()
    await panel.wait_for_selector("#error", state="hidden", timeout=2_000)
    # The question is still there: Enter now asks it.
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=done]", timeout=10_000)
    assert await panel.inner_text(".turn .answer") == "final hello"


async def test_big_events_are_reassembled(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["b.html"])
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    res = await panel.evaluate("window.chatagentTest.ask('big')")
    assert res["ok"]
    assert any(e["type"] == "token" and len(e["text"]) == 2_500_000 for e in res["events"])


async def test_stop_cancels(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["b.html"])
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    await panel.fill("#question", "slow")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=running]")
    await panel.wait_for_selector("#stop-button:not([hidden])")
    await panel.locator(".turn .answer").filter(has_text="Beta page").wait_for()
    await panel.click("#stop-button")
    await panel.wait_for_selector("body[data-state=stopped]")
    assert await panel.inner_text(".turn .turn-status") == "Stopped."
    assert await panel.locator(".turn-error").count() == 0 and await panel.is_hidden("#error")


def busy_url(site: str) -> str:
    """The frozen page, from another site than the others: a renderer of its own,
    so the pages beside it keep running."""
    return site.replace("127.0.0.1", "localhost") + "/busy.html"


async def open_busy_and_beta(ctx: Any, site: str) -> tuple[Any, int, int]:
    urls = [busy_url(site), f"{site}/b.html"]
    for url in urls:
        page = await ctx.new_page()
        await page.goto(url)
    panel = await open_panel_at(ctx, urls)
    busy, beta = await panel.evaluate("window.chatagentTest.selectedTabIds()")
    return panel, busy, beta


async def test_stop_while_a_frozen_tab_is_read_ends_at_once_and_the_next_question_runs(
    ext_ctx: Any, site: str,
) -> None:
    panel, busy, beta = await open_busy_and_beta(ext_ctx, site)
    await panel.uncheck(f"#tab-list input[value='{beta}']")
    await panel.fill("#question", "hello")
    await panel.press("#question", "Enter")
    await panel.locator(".turn .turn-status").filter(has_text="Reading the “Busy page” tab…").wait_for()
    await panel.click("#stop-button")
    # At once, not after a time limit: nothing was asked of the host yet.
    await panel.wait_for_selector("body[data-state=stopped]", timeout=2_000)
    assert await panel.inner_text(".turn .turn-status") == "Stopped."
    assert await panel.is_hidden("#stop-button")
    # The next question (about the other tab) is accepted and answered.
    await panel.check(f"#tab-list input[value='{beta}']")
    await panel.uncheck(f"#tab-list input[value='{busy}']")
    await panel.fill("#question", "again")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=done]", timeout=10_000)
    assert await panel.inner_text(".turn .answer") == "final again"
    assert await panel.is_hidden("#error")


async def note_on_a_skipped_tab(panel: Any) -> str:
    """Asks about the ticked tabs, of which "Beta page" alone can be read: the
    answer comes from it alone, and the note that says why the other was skipped."""
    await panel.fill("#question", "hello")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=done]", timeout=25_000)
    turn = panel.locator(".turn").last
    assert await turn.locator(".answer").inner_text() == "final hello"
    chips = turn.locator(".sources .chip")
    assert await chips.count() == 1 and await chips.first.inner_text() == "Beta page"
    return await turn.locator(".notes").inner_text()


async def test_a_frozen_tab_is_skipped_after_a_time_limit_and_the_others_answer(ext_ctx: Any, site: str) -> None:
    panel, _busy, _beta = await open_busy_and_beta(ext_ctx, site)
    note = await note_on_a_skipped_tab(panel)
    assert "Busy page" in note and "did not respond" in note, note


async def test_a_pdf_tab_is_skipped_with_a_note_saying_so(ext_ctx: Any, site: str) -> None:
    """Chrome's PDF viewer lets the extension script its outer page, which holds
    none of the PDF's text: read, it would be an empty tab the model answers from."""
    panel = await open_panel(ext_ctx, site, ["report.pdf", "b.html"])
    note = await note_on_a_skipped_tab(panel)
    assert "is a PDF" in note and "cannot read" in note, note


async def test_stop_ends_the_answer_even_when_the_host_never_confirms(tmp_path: Path, site: str) -> None:
    async with _with_host(tmp_path, IGNORES_CANCEL_HOST) as ctx:
        panel = await open_panel(ctx, site, ["b.html"])
        await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
        await panel.fill("#question", "stuck")
        await panel.press("#question", "Enter")
        await panel.locator(".turn .answer").filter(has_text="Working on it").wait_for()
        await panel.click("#stop-button")
        assert await panel.inner_text(".turn .turn-status") == "Stopping…"
        await panel.wait_for_selector("body[data-state=stopped]", timeout=10_000)
        assert await panel.inner_text(".turn .turn-status") == "Stopped."
        assert await panel.inner_text(".turn .answer") == "Working on it"
        await panel.fill("#question", "next")
        await panel.press("#question", "Enter")
        await panel.wait_for_selector("body[data-state=done]", timeout=10_000)
        assert await panel.inner_text(".turn >> nth=1 >> .answer") == "answered next"
        assert await panel.is_hidden("#error")


async def test_a_host_that_dies_while_answering_is_explained_and_comes_back_by_itself(ext_ctx: Any, site: str) -> None:
    panel = await open_panel(ext_ctx, site, ["b.html"])
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
    await panel.fill("#question", "crash")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=error]", timeout=10_000)
    turn = panel.locator(".turn").last
    assert await turn.locator(".turn-error").inner_text() == "The chatagent host stopped while answering; ask again."
    assert await turn.locator(".answer").inner_text() == "[Beta page|True|Beta]", "the answer so far stays"
    # No Retry to press: the extension starts the host again by itself.
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=15_000)
    assert await panel.is_hidden("#error") and await panel.is_hidden("#retry-button")
    await panel.fill("#question", "again")
    await panel.press("#question", "Enter")
    await panel.wait_for_selector("body[data-state=done]", timeout=10_000)
    assert await panel.locator(".turn").last.locator(".answer").inner_text() == "final again"


async def test_host_not_installed_is_explained(tmp_path: Path, site: str) -> None:
    pw, ctx = await _launch(tmp_path / "bare-profile")
    try:
        panel = await open_panel(ctx, site, ["b.html"])
        await panel.wait_for_selector("#host-status[data-state=error]", timeout=30_000)
        text = await panel.inner_text("#error-text")
        assert "chatagent bridge install" in text and "not installed" in text
        assert await panel.is_visible("#retry-button")
        res = await panel.evaluate("window.chatagentTest.ask('hello').catch(e => ({ok: false, thrown: e.message}))")
        assert res == {"ok": False, "thrown": "no host"}
        # No turn with notes about tabs for an answer that cannot come: the banner says why.
        assert await panel.locator(".turn").count() == 0
        assert "chatagent bridge install" in await panel.inner_text("#error-text")
    finally:
        await ctx.close()
        await pw.stop()


async def test_tools_on_one_tab_run_one_at_a_time_in_the_extension(tmp_path: Path, site: str) -> None:
    async with _with_host(tmp_path, OVERLAPPING_HOST) as ctx:
        panel = await open_panel(ctx, site, ["a.html"])
        await panel.wait_for_selector("#host-status[data-state=ready]", timeout=30_000)
        res = await panel.evaluate("window.chatagentTest.ask('scroll twice')")
        assert res["ok"], res.get("error")
        [first, second] = json.loads("".join(e["text"] for e in res["events"] if e["type"] == "token"))
        # One after the other, the second scroll starts where the first ended;
        # run together, both would report the page after both had scrolled.
        assert 0 < first < second, (first, second)


def test_the_panel_loads_nothing_remote_and_its_libraries_are_the_pinned_ones() -> None:
    """The CSP is what stops an answer that slips past the sanitiser from
    fetching a URL; the vendored files are byte-identical to the versions the
    vendor README names."""
    import hashlib
    import re

    manifest = json.loads((EXTENSION_DIR / "manifest.json").read_text())
    csp = dict(
        (d.split()[0], d.split()[1:]) for d in manifest["content_security_policy"]["extension_pages"].split(";") if d.strip()
    )
    assert csp["default-src"] == ["'none'"] and csp["script-src"] == ["'self'"]
    assert csp["img-src"] == ["'self'", "data:"] and "connect-src" not in csp  # falls back to 'none'
    vendor = EXTENSION_DIR / "vendor"
    rows = re.findall(r"^\| `([^`]+)` \|.*\| ([\d.]+) \|.*\| `([0-9a-f]{64})` \|$", (vendor / "README.md").read_text(), re.M)
    assert {name for name, _, _ in rows} == {"marked.esm.js", "purify.es.mjs"}
    for name, version, digest in rows:
        body = (vendor / name).read_bytes()
        assert hashlib.sha256(body).hexdigest() == digest, name
        assert version.encode() in body[:400], f"{name} is not version {version}"
    assert (vendor / "marked.LICENSE").exists() and (vendor / "dompurify.LICENSE").exists()
