"""The whole product path: the companion extension in real Chromium, the real
host process (`python -m extension_bridge`, the ChatAgent with the offline
model) over native messaging, fixture tabs served on 127.0.0.1. The answer
needs pass 2, and its scrolls are carried out by the extension."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chatagent.browser.discovery import find_browser
from extension_bridge.install import EXTENSION_DIR, EXTENSION_ID, HOST_NAME, manifest_for

from conftest import Site

ROOT = Path(__file__).resolve().parent.parent
# Set to a path to refresh the README's screenshot of the side panel.
SCREENSHOT_ENV = "CHATAGENT_PANEL_SCREENSHOT"


DEBIAN_WRAPPER = Path("/usr/bin/chromium")  # a shell script exporting Chromium's own GOOGLE_API_KEY


def _launchers() -> list[Any]:
    wrapper = DEBIAN_WRAPPER.is_file() and DEBIAN_WRAPPER.read_bytes()[:2] == b"#!"
    return [
        pytest.param("binary", id="chromium-binary"),
        pytest.param("wrapper", id="debian-wrapper", marks=pytest.mark.skipif(
            not wrapper, reason="no Debian/Ubuntu chromium launcher script here")),
    ]


@pytest.fixture(params=_launchers())
async def browser_with_host(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """Chromium with the extension and the real host; launched as the binary
    (no API key in its environment) and through Debian's launcher script,
    which gives the browser, and so the host, Chromium's own GOOGLE_API_KEY."""
    from playwright.async_api import async_playwright

    wrapper = request.param == "wrapper"

    profile = tmp_path / "profile"
    hosts = profile / "NativeMessagingHosts"  # Chromium reads per-profile host manifests here
    hosts.mkdir(parents=True)
    launcher = hosts / "chatagent-host.sh"
    launcher.write_text(
        f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m extension_bridge "$@" 2>>{tmp_path}/host.log\n'
    )
    launcher.chmod(0o755)
    (hosts / f"{HOST_NAME}.json").write_text(json.dumps(manifest_for("chromium", launcher)))
    pw = await async_playwright().start()
    ctx = await pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(DEBIAN_WRAPPER) if wrapper else find_browser(),
        headless=True,
        viewport={"width": 1100, "height": 800},
        args=[
            f"--disable-extensions-except={EXTENSION_DIR}",
            f"--load-extension={EXTENSION_DIR}",
            "--no-sandbox",
            "--disable-background-networking",
            "--disable-component-update",
        ],
        env=dict(os.environ) if wrapper else {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")},
    )
    try:
        yield ctx
    finally:
        await ctx.close()
        await pw.stop()
        log = tmp_path / "host.log"
        if log.exists():
            print(log.read_text()[-3000:])  # shown by pytest when the test fails


async def test_question_through_the_extension_and_real_host(browser_with_host: Any, site: Site) -> None:
    ctx = browser_with_host
    page = await ctx.new_page()
    await page.goto(site.url("lazy"))
    panel = await ctx.new_page()
    await panel.set_viewport_size({"width": 420, "height": 760})
    await panel.goto(f"chrome-extension://{EXTENSION_ID}/sidepanel.html")
    [tab_id] = await panel.evaluate(
        "async (u) => (await chrome.tabs.query({})).filter(t => t.url === u).map(t => t.id)", site.url("lazy")
    )
    await panel.goto(f"chrome-extension://{EXTENSION_ID}/sidepanel.html?tabs={tab_id}")
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
    await panel.fill("#question", "What is the warehouse code?")
    result = await panel.evaluate("window.chatagentTest.ask('What is the warehouse code?')")
    assert result["ok"], result.get("error")
    events = result["events"]
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert "ZX-4471" in tokens and "ZX-4471" in result["answer"]
    assert [e["pass"] for e in events if e["type"] == "pass_start"] == [1, 2]
    scrolls = [e for e in events if e["type"] == "tool_call" and e["name"] == "scroll_tool"]
    assert scrolls and all(str(e["args"]["tab_id"]) == str(tab_id) for e in scrolls)
    done = events[-1]
    assert done["type"] == "done" and done["citations"][0]["tab_id"] == str(tab_id)
    # What the person sees: the answer and its source in the panel.
    assert "ZX-4471" in await panel.inner_text("#answer")
    assert await panel.locator("#citation-list a").count() == 1
    if os.environ.get(SCREENSHOT_ENV):
        await panel.screenshot(path=os.environ[SCREENSHOT_ENV], full_page=True)
