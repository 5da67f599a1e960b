"""The whole product path: the companion extension in real Chromium, the real
host process (`python -m extension_bridge`) over native messaging, fixture
tabs served on 127.0.0.1, answered offline or by the real Gemini client
against the local server. What is checked is what a person sees in the panel."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, Reply, TextReply
from extension_bridge.harness import PANEL_URL, choose_gemini, chromium_with_extension, open_panel

from conftest import Site
from warm_start import command

pytestmark = pytest.mark.e2e

DEBIAN_WRAPPER = Path("/usr/bin/chromium")  # a shell script exporting Chromium's own GOOGLE_API_KEY


def _launchers() -> list[Any]:
    wrapper = DEBIAN_WRAPPER.is_file() and DEBIAN_WRAPPER.read_bytes()[:2] == b"#!"
    return [
        pytest.param("binary", id="chromium-binary"),
        pytest.param("wrapper", id="debian-wrapper", marks=pytest.mark.skipif(
            not wrapper, reason="no Debian/Ubuntu chromium launcher script here")),
    ]


def _env_without_keys() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}


@pytest.fixture(params=_launchers())
async def browser_with_host(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """Chromium with the extension and the real host; launched as the binary
    (no API key in its environment) and through Debian's launcher script,
    which gives the browser, and so the host, Chromium's own GOOGLE_API_KEY."""
    wrapper = request.param == "wrapper"
    async with chromium_with_extension(
        tmp_path, executable=str(DEBIAN_WRAPPER) if wrapper else None,
        env=dict(os.environ) if wrapper else _env_without_keys(), host=command(module="extension_bridge"),
    ) as ctx:
        yield ctx
    _show_host_log(tmp_path)


@pytest.fixture
async def panel_browser(tmp_path: Path) -> AsyncIterator[Any]:
    async with chromium_with_extension(tmp_path, env=_env_without_keys(), host=command(module="extension_bridge")) as ctx:
        yield ctx
    _show_host_log(tmp_path)


def _show_host_log(tmp_path: Path) -> None:
    log = tmp_path / "host.log"
    if log.exists():
        print(log.read_text()[-3000:])  # shown by pytest when the test fails


async def _tabs(ctx: Any, urls: list[str]) -> None:
    for url in urls:
        page = await ctx.new_page()
        await page.goto(url)


async def _select(panel: Any, tab_ids: list[int]) -> None:
    """Tick exactly `tab_ids` in the panel's tab list, as a user does."""
    for box in await panel.locator("#tab-list input[type=checkbox]").all():
        wanted = int(await box.get_attribute("value")) in tab_ids
        if await box.is_checked() != wanted:
            await box.click()


async def ask(panel: Any, question: str) -> dict[str, Any]:
    result: dict[str, Any] = await panel.evaluate("(q) => window.chatagentTest.ask(q)", question)
    return result


async def test_question_through_the_extension_and_real_host(browser_with_host: Any, site: Site) -> None:
    """Offline model; the answer needs pass 2, whose scrolls the extension carries out."""
    await _tabs(browser_with_host, [site.url("lazy")])
    panel = await open_panel(browser_with_host, [site.url("lazy")])
    [tab_id] = await panel.evaluate("window.chatagentTest.selectedTabIds()")
    result = await ask(panel, "What is the warehouse code?")
    assert result["ok"], result.get("error")
    events = result["events"]
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert "ZX-4471" in tokens and "ZX-4471" in result["answer"]
    assert [e["pass"] for e in events if e["type"] == "pass_start"] == [1, 2]
    scrolls = [e for e in events if e["type"] == "tool_call" and e["name"] == "scroll_tool"]
    assert scrolls and all(str(e["args"]["tab_id"]) == str(tab_id) for e in scrolls)
    done = events[-1]
    assert done["type"] == "done" and done["citations"][0]["tab_id"] == str(tab_id)
    # What the person sees: the answer, its source (the tab, or the passage quoted from it), the model.
    turn = panel.locator(".turn").last
    assert "ZX-4471" in await turn.locator(".answer").inner_text()
    sources = turn.locator(".sources .chip, .sources .passage-source")
    assert await sources.count() >= 1
    assert {await s.get_attribute("data-tab-id") for s in await sources.all()} == {str(tab_id)}
    assert await panel.inner_text("#model-chip") == "Offline"


async def test_a_comparison_names_each_tab_once(private_settings: Path, panel_browser: Any, site: Site) -> None:
    """The offline model heads each tab's part "From [Tab 1] (its title):"; the
    panel's chip names the tab, so the title does not follow it again."""
    urls = [site.url("laptop_aurora"), site.url("laptop_orion")]
    await _tabs(panel_browser, urls)
    panel = await open_panel(panel_browser, urls)
    result = await ask(panel, "Compare the price of the two laptops.")
    assert result["ok"], result["error"]
    aurora = "Aurora X14 Pro — specifications and price — Kestrel Electronics"
    assert f"From [Tab 1] ({aurora}):" in result["answer"], "the answer's own text is as the CLI prints it"
    answer = panel.locator(".turn .answer")
    text = await answer.inner_text()
    assert text.startswith("From Aurora X14 Pro:\n"), text
    assert "From Orion 14 review: a quiet wo…:" in text, text
    assert aurora not in text and "Bitfield Reviews" not in text, text
    chips = answer.locator(".chip:not(.passage)")  # the tabs' chips; the passages quoted have numbered ones
    assert [await chips.nth(i).get_attribute("title") for i in range(await chips.count())] == [
        f"[Tab 1]: {aurora} (go to the tab)", "[Tab 2]: Orion 14 review: a quiet workhorse | Bitfield Reviews (go to the tab)",
    ]


async def test_a_broken_settings_file_is_named_in_the_panel_and_retry_works_once_fixed(
    panel_browser: Any, site: Site, private_settings: Path,
) -> None:
    """The host cannot start with a settings file it cannot read: it says so
    (a `config_error` frame) and exits; the panel shows that, not a crash."""
    private_settings.write_text('model = "gemini-2.5-flash\n')  # an unterminated string
    await _tabs(panel_browser, [site.url("product")])
    panel = await panel_browser.new_page()
    await panel.set_viewport_size({"width": 400, "height": 720})
    await panel.goto(PANEL_URL)
    # The state and its title at once: the worker tries again (with backoff), and a read of the
    # title after the others could meet that try ("Starting the chatagent host…").
    await panel.wait_for_selector('#host-status[data-state=error][title*="cannot be read"]', timeout=60_000)
    await panel.wait_for_selector("#error:not([hidden])")
    text = await panel.inner_text("#error-text")
    assert f"The settings file {private_settings} cannot be read" in text and "Fix it, or remove it" in text, text
    assert "stopped unexpectedly" not in text and "chatagent config" not in text, "in the panel's words"
    # The worker keeps trying (with backoff): the banner stays the same.
    await panel.wait_for_timeout(2_500)
    assert await panel.inner_text("#error-text") == text
    # Fixed, then Retry: connected, the banner gone.
    private_settings.unlink()
    assert await panel.is_visible("#retry-button")
    # Retry, unless the worker's own next try, now that the file is fixed, connected first (then the
    # button is gone): either way the panel is connected and its banner gone.
    await panel.evaluate("document.querySelector('#retry-button:not([hidden])')?.click()")
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
    assert await panel.is_hidden("#error")


async def test_a_narrow_panel_with_a_long_model_name_keeps_its_heading_and_whole_tab_rows(
    panel_browser: Any, site: Site, private_settings: Path,
) -> None:
    """320 px wide (the side panel's narrowest): the heading stays one word on
    one line, the model's name gives way (ellipsis), and the tab list shows
    whole rows only, never half of one."""
    private_settings.write_text(
        'model = "gemini-2.5-flash-lite-preview-09-2025-extended"\ngemini_base_url = "http://127.0.0.1:9"\n'
    )
    urls = [site.url(name) for name in ("product", "two_a", "two_b", "article", "table")]
    await _tabs(panel_browser, urls)
    panel = await open_panel(panel_browser, urls, width=320)
    await panel.wait_for_selector("#model-chip:not([hidden])", timeout=30_000)
    heading = await panel.eval_on_selector(
        "h1", "h => { const r = document.createRange(); r.selectNodeContents(h);"
        " return {lines: r.getClientRects().length, text: h.innerText, cut: h.scrollWidth > h.clientWidth}; }",
    )
    assert heading == {"lines": 1, "text": "chatagent", "cut": False}
    chip = await panel.eval_on_selector(
        "#model-chip", "c => ({text: c.textContent, ellipsized: c.scrollWidth > c.clientWidth,"
        " right: c.getBoundingClientRect().right})",
    )
    assert chip["text"] == "gemini-2.5-flash-lite-preview-09-2025-extended" and chip["ellipsized"]
    assert await panel.evaluate("document.documentElement.scrollWidth") <= 320
    for button in ("#new-button", "#history-button", "#settings-button"):
        shown = await panel.eval_on_selector(
            button, "b => { const r = document.createRange(); r.selectNodeContents(b);"
            " return {lines: r.getClientRects().length, right: b.getBoundingClientRect().right}; }",
        )
        assert shown["lines"] == 1 and shown["right"] <= 320, (button, shown)
    # The list scrolls (five tabs) and no row is cut at its bottom edge.
    rows = await panel.eval_on_selector(
        "#tab-list",
        "l => { const top = l.getBoundingClientRect().top + l.clientTop, bottom = top + l.clientHeight;"
        " return {scrolls: l.scrollHeight > l.clientHeight, rows: [...l.children].map(li => {"
        " const r = li.getBoundingClientRect(); return [Math.round(r.top - top), Math.round(r.bottom - top),"
        " Math.round(bottom - top)]; })}; }",
    )
    assert rows["scrolls"], rows
    for row_top, row_bottom, list_bottom in rows["rows"]:
        assert row_bottom <= list_bottom or row_top >= list_bottom, rows
    assert sum(bottom <= height for _, bottom, height in rows["rows"]) >= 3, "at least three whole rows show"


# --- with a model that writes markdown: the local Gemini-compatible server ------------------


class _Attacker(ThreadingHTTPServer):
    """A loopback server an answer tries to make the panel fetch from."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                hits.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def attacker() -> Iterator[_Attacker]:
    server = _Attacker()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


MARKDOWN_ANSWER = (
    "## Prices\n\nThe **Aurora X14 Pro** costs $1,349.00 [Tab 1].\n\n"
    "- 32 GB memory\n- 1 TB storage\n\n| Part | Price |\n|---|---|\n| Laptop | $1,349.00 |\n| Sleeve | $39.00 |\n\n"
    "Spec sheet: https://volta.example/products/aurora-x14-pro/" + "specificationsanddownloads" * 8 + "\n"
)


def _hostile(attacker: str) -> str:
    return (
        f"Here it is ![chart]({attacker}/md-image.png) and <img src=\"{attacker}/html-img.png\" onerror=\"window.pwned=1\">"
        f" [click me](javascript:window.pwned=2) <script>window.pwned=3</script>"
        f"<a href=\"{attacker}/link\">a link</a> <iframe src=\"{attacker}/frame\"></iframe>"
        f"<svg><image href=\"{attacker}/svg.png\"/></svg><style>body{{background:url({attacker}/css.png)}}</style> done."
    )


async def _use_gemini(panel: Any, gemini: GeminiServer) -> None:
    await choose_gemini(panel, endpoint=gemini.url, key="panel-key-1234")
    await panel.click("#settings-cancel")


async def test_settings_saved_by_the_host_are_used_by_the_next_answer_and_markdown_renders(
    panel_browser: Any, site: Site, private_settings: Path,
) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, api_key="panel-key-1234") as gemini:
        gemini.enqueue(TextReply(text=MARKDOWN_ANSWER))
        await _tabs(panel_browser, [site.url("product")])
        panel = await open_panel(panel_browser, [site.url("product")])
        await _use_gemini(panel, gemini)
        assert await panel.inner_text("#model-chip") == "gemini-2.5-flash"
        result = await ask(panel, "What does it cost?")
        assert result["ok"], result["error"]
        assert gemini.generate_requests, "the answer came from the model the panel chose"
        # Saved in the user's settings file, private; nothing in the extension's storage.
        saved = private_settings.read_text()
        assert 'model = "gemini-2.5-flash"' in saved and "panel-key-1234" in saved and gemini.url in saved
        assert stat.S_IMODE(private_settings.stat().st_mode) == 0o600
        # The extension's storage keeps the panel's threads, and no setting or key.
        stored = await panel.evaluate("chrome.storage.local.get(null)")
        assert set(stored) == {"threads"} and "panel-key-1234" not in json.dumps(stored) and gemini.url not in json.dumps(stored)
        # The answer's markdown, rendered.
        answer = panel.locator(".turn .answer").last
        assert await answer.locator("h2").inner_text() == "Prices"
        assert await answer.locator("strong").first.inner_text() == "Aurora X14 Pro"
        assert await answer.locator("li").count() == 2
        assert await answer.locator("table td").count() == 4
        text = await answer.inner_text()
        assert "**" not in text and "##" not in text and "|---|" not in text
        overflow = await panel.eval_on_selector("#thread-box", "b => b.scrollWidth - b.clientWidth")
        assert overflow <= 0, "a long URL wraps instead of widening the panel"
        [chip] = await answer.locator(".chip").all()
        assert (await chip.inner_text()).startswith("Aurora X14 Pro")


async def test_an_error_names_the_panel_s_settings_not_the_command_line_s(
    private_settings: Path, panel_browser: Any, site: Site, tmp_path: Path,
) -> None:
    """A refused key: the error's details say where to fix it in the panel
    (Settings → Gemini API key), not GOOGLE_API_KEY or `chatagent config set`."""
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, api_key="the-right-key") as gemini:
        await _tabs(panel_browser, [site.url("product")])
        panel = await open_panel(panel_browser, [site.url("product")])
        await choose_gemini(panel, endpoint=gemini.url, key="a-wrong-key")
        await panel.click("#settings-cancel")
        result = await ask(panel, "What does it cost?")
    assert result["error"]["code"] == "model_auth", result
    error = panel.locator(".turn .turn-error")
    assert await error.locator("p").first.inner_text() == (
        "The model service refused the API key. Open Settings (⚙) and enter a valid key.")
    await error.locator("summary").click()
    details = await error.locator("details p").inner_text()
    assert details == ("The Gemini API refused the key (400 API key not valid. Please pass a valid API key.). "
                       "Check Settings (⚙) → Gemini API key."), details
    shown = await error.inner_text()
    assert not any(word in shown for word in ("GOOGLE_API_KEY", "chatagent config", "--model", "_api_key"))
    await panel.screenshot(path=str(tmp_path / "panel-error.png"))


async def test_saving_gemini_without_a_key_says_that_a_key_is_needed(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """Not a bare "Saved.": the first question would fail for want of a key,
    so the panel says so at once, and again when Settings is opened."""
    await _tabs(panel_browser, [site.url("product")])
    panel = await open_panel(panel_browser, [site.url("product")])
    await panel.click("#settings-button")
    await panel.check("input[name=provider][value=gemini]")
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=error]", timeout=30_000)
    needed = "gemini-2.5-flash needs a Gemini API key: enter one, or choose Offline."
    assert await panel.inner_text("#settings-message") == f"Saved, but {needed}"
    await panel.click("#settings-cancel")
    await panel.click("#settings-button")
    assert await panel.inner_text("#settings-message") == needed
    await panel.fill("#google-api-key", "panel-key-1234")
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=ok]", timeout=30_000)
    assert await panel.inner_text("#settings-message") == "Saved. gemini-2.5-flash answers the next question."


async def test_a_new_endpoint_without_its_key_asks_for_the_key_for_this_server(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """The key saved for one endpoint is not sent to another: moving the
    endpoint alone, the panel says so and asks for this server's key; the
    key field says which server the saved one is for."""
    await _tabs(panel_browser, [site.url("product")])
    panel = await open_panel(panel_browser, [site.url("product")])
    await choose_gemini(panel, endpoint="http://127.0.0.1:9", key="panel-key-1234")
    await panel.fill("#gemini-base-url", "http://127.0.0.1:10")
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=error]", timeout=30_000)
    needed = ("gemini-2.5-flash's Gemini API key is for http://127.0.0.1:9, not http://127.0.0.1:10: "
              "enter the key for this server, or choose Offline.")
    assert await panel.inner_text("#settings-message") == f"Saved, but {needed}"
    assert await panel.get_attribute("#google-api-key", "placeholder") == (
        "saved for http://127.0.0.1:9 — enter the key for this server")
    await panel.fill("#google-api-key", "panel-key-5678")
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=ok]", timeout=30_000)
    assert await panel.get_attribute("#google-api-key", "placeholder") == "saved (…5678) — type to replace"


async def test_a_saved_key_reads_cleanly_in_its_field_whatever_its_length(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """The host masks a key as "…1234 (set)", or "(set)" when it is 8 characters
    or fewer: the field says it is saved either way, in plain words."""
    await _tabs(panel_browser, [site.url("product")])
    panel = await open_panel(panel_browser, [site.url("product")])
    await choose_gemini(panel, endpoint="http://127.0.0.1:9", key="abc")
    assert await panel.get_attribute("#google-api-key", "placeholder") == "saved — type to replace"
    await panel.fill("#google-api-key", "panel-key-1234")
    await panel.click("#settings-save")
    await panel.wait_for_selector("#settings-message[data-kind=ok]", timeout=30_000)
    assert await panel.get_attribute("#google-api-key", "placeholder") == "saved (…1234) — type to replace"
    assert "panel-key-1234" in private_settings.read_text()


async def test_a_saved_key_can_be_removed_from_the_panel(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """By the host, which owns the settings file: the key goes from it, the
    rest stays (and the panel says the model now lacks a key)."""
    await _tabs(panel_browser, [site.url("product")])
    panel = await open_panel(panel_browser, [site.url("product")])
    await choose_gemini(panel, endpoint="http://127.0.0.1:9", key="panel-key-1234")
    assert "panel-key-1234" in private_settings.read_text()
    await panel.fill("#gemini-model", "gemini-2.5-flash-lite")  # typed, not saved: removing the key leaves it be
    await panel.click("#google-api-key-remove")
    await panel.wait_for_selector("#settings-message[data-kind=error]", timeout=30_000)
    assert await panel.inner_text("#settings-message") == (
        "Removed the saved Gemini API key, but gemini-2.5-flash needs a Gemini API key: enter one, or choose Offline."
    )
    saved = private_settings.read_text()
    assert "panel-key-1234" not in saved and "google_api_key" not in saved
    assert 'model = "gemini-2.5-flash"' in saved and "http://127.0.0.1:9" in saved
    assert await panel.get_attribute("#google-api-key", "placeholder") == "not set"
    assert await panel.is_hidden("#google-api-key-remove")
    assert await panel.input_value("#gemini-model") == "gemini-2.5-flash-lite"


async def test_a_hostile_answer_renders_inert_and_fetches_nothing(
    panel_browser: Any, site: Site, attacker: _Attacker,
) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None) as gemini:
        gemini.enqueue(TextReply(text=_hostile(attacker.url)))
        await _tabs(panel_browser, [site.url("product")])
        panel = await open_panel(panel_browser, [site.url("product")])
        await _use_gemini(panel, gemini)
        result = await ask(panel, "Show me the chart.")
        assert result["ok"], result["error"]
        await panel.wait_for_timeout(1000)  # time for any fetch the page might still make
        answer = panel.locator(".turn .answer").last
        assert await answer.locator("img, script, iframe, svg, style").count() == 0
        assert await panel.evaluate("window.pwned") is None
        hrefs = await answer.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
        assert hrefs == [f"{attacker.url}/link"], "the javascript: link lost its href; the http one opens in a new tab"
        assert "[chart]" in await answer.inner_text(), "an image shows as its alt text"
    assert attacker.hits == [], "the panel fetched from the answer's URLs"


async def test_a_chip_is_the_tab_the_answer_means_when_the_panel_skipped_one(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """The PDF ticked first is skipped (the panel cannot read it), so the host's
    [Tab 1] is the product page: the chip names and opens that tab while the
    answer streams and once it is stopped, not the panel's first tab."""
    def respond(request: RecordedRequest) -> Reply:
        words = " ".join(f"word{i}" for i in range(2000))
        return TextReply(text=f"It costs $1,349.00 [Tab 1]. {words}", tokens_per_s=20, tokens_per_chunk=1)

    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=respond, api_key="panel-key-1234") as gemini:
        urls = [site.url("report.pdf"), site.url("product")]
        await _tabs(panel_browser, urls)
        panel = await open_panel(panel_browser, urls)
        await _use_gemini(panel, gemini)
        pdf, product = await panel.evaluate("window.chatagentTest.selectedTabIds()")
        running = asyncio.create_task(ask(panel, "How much is it?"))
        answer = panel.locator(".turn .answer").last
        await answer.filter(has_text="word3").wait_for()
        chip = answer.locator(".chip")
        assert await chip.get_attribute("data-tab-id") == str(product)
        assert (await chip.inner_text()).startswith("Aurora X14 Pro")
        await panel.click("#stop-button")
        assert (await running)["stopped"]
        assert await chip.get_attribute("data-tab-id") == str(product)
        assert (await chip.inner_text()).startswith("Aurora X14 Pro")
        await chip.click()
        for _ in range(50):  # the panel asks Chrome to switch tabs, which it does a moment later
            active = await panel.evaluate("async () => (await chrome.tabs.query({active: true})).map(t => t.id)")
            if product in active or pdf in active:
                break
            await asyncio.sleep(0.1)
        assert product in active and pdf not in active


async def test_a_thread_with_a_follow_up_then_stop_then_another_selection(panel_browser: Any, site: Site) -> None:
    def respond(request: RecordedRequest) -> Reply:
        question = request.last_user_text()
        if "stop" in question:
            return TextReply(text=" ".join(f"word{i}" for i in range(2000)), tokens_per_s=20, tokens_per_chunk=1)
        if "sleeve" in question:
            return TextReply(text="The Volta Sleeve costs $39.00 [Tab 1].")
        if "Which town" in question:
            return TextReply(text="Port Averly [Tab 1].")
        return TextReply(text="It costs $1,349.00 [Tab 1].")

    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=respond) as gemini:
        urls = [site.url("product"), site.url("two_a")]
        await _tabs(panel_browser, urls)
        panel = await open_panel(panel_browser, urls)
        await _use_gemini(panel, gemini)
        first, second = await panel.evaluate("window.chatagentTest.selectedTabIds()")
        await _select(panel, [first])
        one = await ask(panel, "How much is the laptop?")
        two = await ask(panel, "And the sleeve?")
        assert one["ok"] and two["ok"]
        follow_up = gemini.generate_requests[-1].text()
        assert "How much is the laptop?" in follow_up and "$1,349.00" in follow_up, "the follow-up carries the thread"
        assert await panel.locator(".thread .turn").count() == 2

        # Stop: shown as stopped, not as an error.
        running = asyncio.create_task(ask(panel, "Please stop me"))
        await panel.locator(".turn .answer").last.filter(has_text="word3").wait_for()
        await panel.click("#stop-button")
        stopped = await running
        assert stopped["stopped"] and not stopped["ok"]
        last = panel.locator(".thread .turn").last
        assert await last.get_attribute("data-state") == "stopped"
        assert await last.locator(".turn-status").inner_text() == "Stopped."
        assert await panel.locator(".turn-error, #error:not([hidden])").count() == 0

        # Another selection: a conversation of its own, read afresh, no "now at" note.
        await _select(panel, [second])
        assert await panel.locator(".thread .turn").count() == 0
        other = await ask(panel, "Which town is this?")
        assert other["ok"], other["error"]
        notes = [e["text"] for e in other["events"] if e["type"] == "note"]
        assert not any("now at" in n for n in notes), notes
        assert "How much is the laptop?" not in gemini.generate_requests[-1].text()
        # Back to the first selection: its thread is still there.
        await _select(panel, [first])
        assert await panel.locator(".thread .turn").count() == 3


async def test_summarize_is_one_click_on_an_empty_thread_and_the_answer_says_the_page_was_an_overview(
    private_settings: Path, panel_browser: Any, site: Site,
) -> None:
    """Offline model, a 57,000-token page: the empty thread offers "Summarize this page"; a
    click asks it as if typed; the answer cites the page, and its sources say the tab was
    given as an overview of the whole page, also once the panel is opened again. A question
    about a fact there after it is given the parts it needs: its sources say how much."""
    url = site.url("long")
    await _tabs(panel_browser, [url])
    panel = await open_panel(panel_browser, [url])
    [tab_id] = await panel.evaluate("window.chatagentTest.selectedTabIds()")
    suggestions = panel.locator(".thread .empty .suggestion")
    assert await suggestions.all_inner_texts() == ["Summarize this page", "What are the main points?"]
    await suggestions.first.click()
    turn = panel.locator(".thread .turn")
    await turn.locator(".question").wait_for()
    assert await turn.locator(".question").inner_text() == "Summarize this page", "asked as if typed"
    assert await panel.locator(".suggestion").count() == 0, "the thread is no longer empty"
    await panel.wait_for_selector(".turn[data-state=done]", timeout=120_000)
    assert await panel.input_value("#question") == ""

    # The answer cites the page (the tab, or passages of it: the chips are the tab's).
    chips = turn.locator(".answer .chip")
    assert await chips.count() >= 1
    assert {await c.get_attribute("data-tab-id") for c in await chips.all()} == {str(tab_id)}
    # What the done event said, as the panel kept it: the tab was given as an overview.
    [saved] = await panel.evaluate("window.chatagentTest.savedThreads()")
    [overview] = saved["turns"][0]["overviews"]
    assert overview["tab_id"] == str(tab_id) and overview["scope"] == "whole" and overview["url"] == url
    parts, shown = overview["parts"], overview["parts_shown"]
    words = "overview of the whole page" + (
        "" if parts <= 1 else f": all {parts} parts" if shown >= parts else f": {shown} of {parts} parts")

    async def says_overview(page: Any) -> None:
        line = page.locator(".turn .sources .source-overview")
        await line.wait_for()
        assert await line.locator(".chip").get_attribute("data-tab-id") == str(tab_id)
        assert (await line.locator(".chip").inner_text()).startswith("Bergholm Harbour Board")
        assert await line.locator(".overview-tag").inner_text() == words

    await says_overview(panel)

    # A question about a fact on the same long page: the parts it needs, and the sources say how much that was.
    fact = await ask(panel, "Where is the emergency generator for the east pier kept?")
    assert fact["ok"], fact.get("error")
    [share] = [e for e in fact["events"] if e["type"] == "done"][0]["shares"]
    assert share["tab_id"] == str(tab_id) and 0 < share["tokens"] < share["page_tokens"] // 2
    pct = round(100 * share["tokens"] / share["page_tokens"])
    given = "under 1% of its text" if pct < 1 else f"{pct}% of its text"

    async def says_share(page: Any) -> None:
        line = page.locator(".turn").nth(1).locator(".sources .source-share")
        await line.wait_for()
        assert await line.locator(".chip").get_attribute("data-tab-id") == str(tab_id)
        assert await line.locator(".share-tag").inner_text() == given

    await says_share(panel)
    await panel.reload()
    await panel.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
    await says_overview(panel)  # the thread, restored from the browser's storage
    await says_share(panel)
