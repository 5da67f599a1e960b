"""Chromium with the companion extension loaded and the real host registered
in its profile, as a user has it after `chatagent bridge install`: for the
end-to-end tests and the script that draws the panel's screenshots.

The host is registered per profile (`<profile>/NativeMessagingHosts`, which
Chromium reads), so nothing is installed for the machine's own browsers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .install import EXTENSION_DIR, EXTENSION_ID, HOST_NAME, manifest_for
from .spawn import HOST_COMMAND, ROOT

PANEL_URL = f"chrome-extension://{EXTENSION_ID}/sidepanel.html"


@contextlib.asynccontextmanager
async def chromium_with_extension(
    workdir: Path, *, executable: str | None = None, env: Mapping[str, str] | None = None,
    viewport: dict[str, int] | None = None, host: Sequence[str] | None = None,
) -> AsyncIterator[Any]:
    """A persistent Playwright context (profile under `workdir`) with the
    extension and the host; the host's stderr goes to `workdir/host.log`.
    `env`: the browser's environment, which the host inherits (default: ours).
    `host`: the command that starts the host (default: `python -m extension_bridge`)."""
    from playwright.async_api import async_playwright

    from chatagent.browser.discovery import find_browser
    from chatagent.browser.playwright import DISABLE_FEATURES

    profile = workdir / "profile"
    hosts = profile / "NativeMessagingHosts"
    hosts.mkdir(parents=True, exist_ok=True)
    launcher = hosts / "chatagent-host.sh"
    launcher.write_text(
        f'#!/bin/sh\nPYTHONPATH={ROOT} exec {shlex.join(host or HOST_COMMAND)} "$@"'
        f' 2>>{workdir}/host.log\n'
    )
    launcher.chmod(0o755)
    (hosts / f"{HOST_NAME}.json").write_text(json.dumps(manifest_for("chromium", launcher)))
    pw = await async_playwright().start()
    try:
        ctx = await pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable or find_browser(),
            headless=True,
            viewport=viewport or {"width": 1100, "height": 800},
            args=[
                f"--disable-extensions-except={EXTENSION_DIR}",
                f"--load-extension={EXTENSION_DIR}",
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                DISABLE_FEATURES,  # no address-bar pop-up made ready in each window: no one types there
            ],
            env=dict(env if env is not None else os.environ),
        )
        try:
            yield ctx
        finally:
            await ctx.close()
    finally:
        await pw.stop()


async def open_panel(ctx: Any, tab_urls: list[str], *, width: int = 400, height: int = 720) -> Any:
    """The side panel as a page, showing the tabs at `tab_urls` (all ticked), once the host is connected."""
    panel = await ctx.new_page()
    await panel.set_viewport_size({"width": width, "height": height})
    await panel.goto(PANEL_URL)
    ids = await panel.evaluate(
        "async (urls) => { const tabs = await chrome.tabs.query({});"
        " return urls.map(u => tabs.find(t => t.url === u)?.id); }",
        tab_urls,
    )
    if None in ids:
        raise RuntimeError(f"no tab shows {tab_urls[ids.index(None)]}")
    await panel.goto(f"{PANEL_URL}?tabs={','.join(map(str, ids))}")
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
    return panel


async def choose_gemini(panel: Any, *, endpoint: str, key: str, model: str = "gemini-2.5-flash") -> None:
    """In the panel's settings, as a user does: Gemini, its key and endpoint, saved by the host."""
    await panel.click("#settings-button")
    await panel.check("input[name=provider][value=gemini]")
    await panel.fill("#gemini-model", model)
    await panel.fill("#google-api-key", key)
    await panel.fill("#gemini-base-url", endpoint)
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=ok]", timeout=30_000)
