"""The side panel's reading aids, end to end: the extension in headless
Chromium, the real host (`python -m extension_bridge`) over native messaging,
answers scripted by the Gemini-compatible stand-in, pages of the test's own
served on 127.0.0.1. One browser for the file (a restart test launches its
own); what is checked is what a person sees in the panel and in the page."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import expect

from chatagent.settings import set_values
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, Reply, TextReply
from extension_bridge.harness import PANEL_URL, chromium_with_extension, open_panel
from warm_start import command

# One worker for the file: its tests share one Chromium with the extension and its panel.
pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module"), pytest.mark.xdist_group("panel")]

DOCS = Path(__file__).resolve().parent.parent / "docs"

# Two pages of the test's own: the passages cited sit far down the first, split
# across elements and spaced unlike the text extraction gives the model.
def _filler(start: int) -> str:  # ~4,000 tokens: more than a tab's budget
    return "".join(
        f"<p>Section {i} of the harbour notes lists the tide tables, berth numbers and the pilot rota.</p>"
        for i in range(start, start + 220)
    )


PAGES = {
    "harbour.html": (
        "<html><head><meta charset='utf-8'><title>Harbour notes — Lindqvist Bay</title></head><body><h1>Harbour notes</h1>"
        f"{_filler(1)}<h2>Ferries</h2><p>The early   <b>ferry to Skerholm</b> leaves\n  the north quay at"
        " <em>06:40</em> on weekdays.</p><p>Tickets are sold on board.</p>" + _filler(300) + "</body></html>"
    ),
    "museum.html": (
        "<html><head><meta charset='utf-8'><title>Maritime museum — visitor guide</title></head><body><h1>Visitor guide</h1>"
        "<p>The museum shows the bay's boats from three centuries.</p>"
        "<p>Opening hours: the galleries open at ten and close at five, every day but Monday.</p>"
        "</body></html>"
    ),
}
SELECTED = "The early ferry to Skerholm leaves the north quay at 06:40 on weekdays."


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("pages")
    for name, html in PAGES.items():
        (root / name).write_text(html)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class Script:
    """What the model stand-in answers: the test sets `respond` for its question."""

    def __init__(self) -> None:
        self.respond: Callable[[RecordedRequest], Reply] = lambda _: TextReply(text="OK")

    def __call__(self, request: RecordedRequest) -> Reply:
        return self.respond(request)


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[GeminiServer, Script]]:
    script = Script()
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=script, api_key="panel-key-1234") as server:
        yield server, script


def _settings(path: Path, gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini, at the stand-in, with its key: as the panel's Settings save them."""
    monkeypatch.setenv("CHATAGENT_CONFIG", str(path))
    set_values({"model": "gemini-2.5-flash", "gemini_base_url": gemini.url, "google_api_key": "panel-key-1234"})


def _env(settings: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["CHATAGENT_CONFIG"] = str(settings)
    return env


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser(
    tmp_path_factory: pytest.TempPathFactory, model: tuple[GeminiServer, Script]
) -> AsyncIterator[Any]:
    workdir = tmp_path_factory.mktemp("panel")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _settings(workdir / "config.toml", model[0], monkeypatch)
    async with chromium_with_extension(workdir, env=_env(workdir / "config.toml"), host=command(module="extension_bridge")) as ctx:
        yield ctx
    log = workdir / "host.log"
    if log.exists():
        print(log.read_text()[-3000:])


async def _open(ctx: Any, urls: list[str]) -> tuple[list[Any], Any]:
    tabs = []
    for url in urls:
        tab = await ctx.new_page()
        await tab.goto(url)
        tabs.append(tab)
    return tabs, await open_panel(ctx, urls)


@pytest_asyncio.fixture(loop_scope="module")
async def ctx(browser: Any) -> AsyncIterator[Any]:
    """The file's browser for one test: the pages it opens are closed after it,
    however it ends, and the threads it saved forgotten."""
    first = browser.pages[:1]
    yield browser
    for page in browser.pages:
        if page not in first:
            await page.close()
    await browser.service_workers[0].evaluate("chrome.storage.local.clear()")


def _tab_body(request: RecordedRequest, tab: str = "1") -> str:
    """The text the model was given for tab `tab`, after its <tab …> line and notes."""
    text = request.text()
    start = re.search(rf'<tab id="{tab}"[^>]*>\n', text)
    assert start, text[:2000]
    body = text[start.end():text.index("</tab>", start.end())]
    return re.sub(r"\A(?:\(Note: [^\n]*\)\n)*", "", body)


async def test_asking_about_the_selection_leads_the_context_with_it(
    ctx: Any, pages: str, model: tuple[GeminiServer, Script],
) -> None:
    """Text selected in a tab is offered in the panel (its start shown); the
    shortcut's and the context menu's path attaches it; the question's
    context then starts with the selected text, the page around it after."""
    gemini, script = model
    script.respond = lambda _: TextReply(text="At 06:40 [Tab 1].")
    (harbour, museum), panel = await _open(ctx, [f"{pages}/harbour.html", f"{pages}/museum.html"])
    harbour_id, museum_id = await panel.evaluate("window.chatagentTest.selectedTabIds()")
    await harbour.evaluate(
        "() => { const p = [...document.querySelectorAll('p')].find(p => p.textContent.includes('Skerholm'));"
        " getSelection().selectAllChildren(p); }"
    )
    offered = await panel.evaluate("window.chatagentTest.refreshSelection()")
    assert offered == {"tabId": harbour_id, "text": SELECTED.replace("early ferry", "early   ferry"), "attached": False} \
        or offered["text"].split() == SELECTED.split(), offered
    box = panel.locator("#selection")
    assert await box.is_visible() and (await box.locator("#selection-text").inner_text()).startswith("The early")
    assert "Harbour notes" in await box.locator("#selection-where").inner_text()
    assert await box.locator("#selection-use").is_visible()

    # The keyboard shortcut and the context menu's entry run this in the worker.
    worker = ctx.service_workers[0]
    await worker.evaluate("async (id) => chatagentAskAboutSelection(await chrome.tabs.get(id), '')", harbour_id)
    await panel.wait_for_selector("#selection[data-attached=true]")
    assert await box.locator("#selection-use").is_hidden()

    before = len(gemini.generate_requests)
    result = await panel.evaluate("(q) => window.chatagentTest.ask(q)", "When does it leave?")
    assert result["ok"], result["error"]
    [request] = gemini.generate_requests[before:]
    body = _tab_body(request)
    lead = re.sub(r"\A\[\d+\.\d+\] ", "", body)  # a block id the context may give it
    assert " ".join(lead.split()).startswith(SELECTED), body[:500]
    # Then the page around it (the paragraph after it), not all of it: within the budget.
    rest = lead[len(lead.split("\n", 1)[0]):]
    assert "Tickets are sold on board." in rest and "left out" in rest, rest[:3000]
    assert await box.is_hidden(), "the selection went with the question"
    assert (await panel.locator(".turn .asked-selection").inner_text()).startswith("The early")


def _block(request: RecordedRequest, words: str) -> str:
    """The id the context gives the block holding `words` ("[1.4] The early ferry…")."""
    found = re.search(rf"\[(\d+\.\d+)\] [^\n]*{re.escape(words)}", request.text())
    assert found, request.text()[:3000]
    return found.group(1)


HIGHLIGHTED = """() => {
    const h = CSS.highlights.get('chatagent-passage');
    const [range] = h ? [...h] : [];
    if (!range) return null;
    const box = range.getBoundingClientRect();
    return {text: range.toString().replace(/\\s+/g, ' '), top: box.top, bottom: box.bottom,
            viewport: innerHeight, scrolled: scrollY};
}"""


async def _active(panel: Any) -> list[int]:
    return await panel.evaluate("async () => (await chrome.tabs.query({active: true})).map(t => t.id)")


async def _shown(panel: Any, chip: Any, tab: Any) -> dict[str, Any]:
    """Click `chip`; once the panel says the passage is shown, where it is in `tab`."""
    await chip.click()
    await panel.wait_for_selector(f"[data-shown=found][data-tab-id='{await chip.get_attribute('data-tab-id')}']")
    return await tab.evaluate(HIGHLIGHTED)


async def test_a_passage_chip_shows_its_quote_and_scrolls_its_tab_to_it_highlighted(
    ctx: Any, pages: str, model: tuple[GeminiServer, Script], tmp_path: Path,
) -> None:
    """The answer cites a block of each tab and one id that names nothing:
    two numbered chips (the quote on hover), none for the unknown id; a
    chip, clicked, brings its tab to the front scrolled to the quoted words,
    which are highlighted, although the page splits them across elements."""
    _, script = model

    def respond(request: RecordedRequest) -> Reply:
        ferry, hours = _block(request, "Skerholm"), _block(request, "galleries open at ten")
        return TextReply(text=f"The first ferry leaves at 06:40 [{ferry}]; the museum opens at ten [{hours}]. "
                              "Tickets are sold on board [7.99].")

    script.respond = respond
    (harbour, museum), panel = await _open(ctx, [f"{pages}/harbour.html", f"{pages}/museum.html"])
    harbour_id, museum_id = await panel.evaluate("window.chatagentTest.selectedTabIds()")
    result = await panel.evaluate("(q) => window.chatagentTest.ask(q)", "When can I take the ferry and see the museum?")
    assert result["ok"], result["error"]
    assert result["done"]["dropped_citations"] == 1
    answer = panel.locator(".turn .answer")
    assert await answer.inner_text() == "The first ferry leaves at 06:40 1; the museum opens at ten 2. Tickets are sold on board."
    chips = answer.locator(".chip.passage")
    assert await chips.count() == 2
    ferry, hours = chips.nth(0), chips.nth(1)
    assert await ferry.get_attribute("data-tab-id") == str(harbour_id)
    assert await hours.get_attribute("data-tab-id") == str(museum_id)
    title = await ferry.get_attribute("title")
    assert "ferry to Skerholm leaves the north quay at 06:40" in title and "Harbour notes" in title, title
    sources = panel.locator(".turn .sources .passage-source")
    assert await sources.count() == 2
    assert "galleries open at ten" in await sources.nth(1).inner_text()

    await harbour.set_viewport_size({"width": 760, "height": 720})  # for the picture below
    shown = await _shown(panel, hours, museum)
    assert museum_id in await _active(panel)
    assert shown and "galleries open at ten" in shown["text"], shown
    shown = await _shown(panel, ferry, harbour)
    assert harbour_id in await _active(panel) and museum_id not in await _active(panel)
    assert shown and shown["text"].startswith("The early ferry to Skerholm leaves the north quay at 06:40"), shown
    assert shown["scrolled"] > 0 and 0 <= shown["top"] and shown["bottom"] <= shown["viewport"], shown
    # Only highlighted: the page's own DOM is as it was (no element added around the words).
    assert await harbour.evaluate("document.querySelectorAll('mark, [data-chatagent]').length") == 0

    out = DOCS if os.environ.get("CHATAGENT_DOCS_SCREENSHOTS") else tmp_path
    await _side_by_side(harbour, panel, out / "panel-citation.png")


async def _side_by_side(page: Any, panel: Any, path: Path) -> None:
    """The page (left) and the panel (right), as a person sees them, in one picture."""
    import io

    from PIL import Image

    shots = [Image.open(io.BytesIO(await p.screenshot())) for p in (page, panel)]
    picture = Image.new("RGB", (sum(s.width for s in shots) + 1, max(s.height for s in shots)), "#d0d7de")
    picture.paste(shots[0], (0, 0))
    picture.paste(shots[1], (shots[0].width + 1, 0))
    picture.save(path, optimize=True)


async def _reopen(ctx: Any, panel: Any) -> Any:
    """The panel closed and opened again, on the tabs it showed."""
    url = panel.url
    await panel.close()
    again = await ctx.new_page()
    await again.set_viewport_size({"width": 400, "height": 720})
    await again.goto(url)
    await again.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
    return again


async def test_a_thread_outlasts_the_panel_and_says_when_its_page_changed(
    ctx: Any, pages: str, model: tuple[GeminiServer, Script],
) -> None:
    _, script = model
    script.respond = lambda r: TextReply(text=f"Answer to: {r.last_user_text().splitlines()[-1]} [Tab 2]")
    (harbour, museum), panel = await _open(ctx, [f"{pages}/harbour.html", f"{pages}/museum.html"])
    await panel.evaluate("window.chatagentTest.clearHistory()")
    for question in ("When does the museum open?", "And on Mondays?"):
        assert (await panel.evaluate("(q) => window.chatagentTest.ask(q)", question))["ok"]

    panel = await _reopen(ctx, panel)
    turns = panel.locator(".thread .turn")
    await turns.nth(1).wait_for()
    assert await turns.locator(".question").all_inner_texts() == ["When does the museum open?", "And on Mondays?"]
    assert await turns.nth(1).locator(".answer").inner_text() == "Answer to: And on Mondays? Maritime museum"
    assert await turns.nth(1).locator(".sources .chip").inner_text() == "Maritime museum"
    assert await panel.locator(".thread-changes").count() == 0, "nothing changed"

    # A page that changed since: the reopened thread says so; a follow-up goes on in it.
    await museum.evaluate("() => document.body.insertAdjacentHTML('beforeend', '<p>Closed for repairs in May.</p>')")
    panel = await _reopen(ctx, panel)
    note = panel.locator(".thread-changes")
    await note.wait_for()
    assert await note.inner_text() == "Since this conversation: “Maritime museum — visitor guide” has changed."
    assert (await panel.evaluate("(q) => window.chatagentTest.ask(q)", "Is it open in May?"))["ok"]
    assert await panel.locator(".thread .turn").count() == 3

    # Bounded: the oldest threads go first.
    for i in range(40):
        await panel.evaluate(
            "(i) => window.chatagentTest.saveThread({id: `t${i}`, tabs: [], labels: [], turns: [{question: `q${i}`,"
            " answer: 'a', citations: [], state: 'done', meta: ''}]})", i)
    saved = await panel.evaluate("window.chatagentTest.savedThreads()")
    assert len(saved) == 30 and saved[-1]["id"] == "t39" and saved[0]["id"] == "t10"

    # Clear history: gone from the panel and from the browser's storage.
    await panel.click("#history-button")
    await panel.click("#history-clear")
    # Clearing awaits the browser's storage before the panel empties: wait for it, as a user's eyes would.
    await panel.locator(".thread .turn").first.wait_for(state="detached")
    assert await panel.evaluate("chrome.storage.local.get(null)") == {}
    panel = await _reopen(ctx, panel)
    assert await panel.locator(".thread .turn").count() == 0


async def test_a_thread_outlasts_a_browser_restart_goes_on_with_its_history_and_says_which_tab_closed(
    tmp_path: Path, pages: str, model: tuple[GeminiServer, Script],
) -> None:
    gemini, script = model
    script.respond = lambda _: TextReply(text="Weekdays at 06:40 [Tab 1].")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _settings(tmp_path / "config.toml", gemini, monkeypatch)
    urls = [f"{pages}/harbour.html", f"{pages}/museum.html"]
    async with chromium_with_extension(tmp_path, env=_env(tmp_path / "config.toml"), host=command(module="extension_bridge")) as browser:
        _, panel = await _open(browser, urls)
        assert (await panel.evaluate("(q) => window.chatagentTest.ask(q)", "When is the first ferry?"))["ok"]
    # The same profile and pages (under new tab ids): the thread goes on, its history with it.
    async with chromium_with_extension(tmp_path, env=_env(tmp_path / "config.toml"), host=command(module="extension_bridge")) as browser:
        _, panel = await _open(browser, urls)
        await panel.click("#history-button")
        await panel.locator("#history-list button").click()
        assert (await panel.evaluate("(q) => window.chatagentTest.ask(q)", "And on Sundays?"))["ok"]
        assert await panel.locator(".thread .turn").count() == 2
        history = gemini.last_request.text()
        assert "When is the first ferry?" in history and "Weekdays at 06:40" in history
    # Again, with the harbour page open and the museum's not.
    async with chromium_with_extension(tmp_path, env=_env(tmp_path / "config.toml"), host=command(module="extension_bridge")) as browser:
        _, panel = await _open(browser, urls[:1])
        await panel.click("#history-button")
        entry = panel.locator("#history-list button")
        assert await entry.count() == 1
        assert (await entry.inner_text()).startswith("When is the first ferry?\nHarbour notes — Lindqvist Bay · Maritime")
        await entry.click()
        turn = panel.locator(".thread .turn").first
        await turn.wait_for()
        assert await turn.locator(".answer").inner_text() == "Weekdays at 06:40 Harbour notes."
        note = panel.locator(".thread-changes")
        await note.wait_for()
        assert await note.inner_text() == "Since this conversation: “Maritime museum — visitor guide” was closed."
        await panel.screenshot(path=str(tmp_path / "restored.png"))


async def _tested(panel: Any) -> tuple[str, str]:
    """Press Test connection; what it then says, and whether it is good news."""
    await panel.click("#model-test")
    result = panel.locator("#model-test-result:not([data-kind=''])")
    await result.wait_for(timeout=30_000)
    return await result.get_attribute("data-kind") or "", await result.inner_text()


async def test_settings_offer_the_servers_models_and_a_connection_test_says_what_is_wrong(
    ctx: Any, pages: str, model: tuple[GeminiServer, Script], tmp_path: Path,
) -> None:
    """The form as typed, nothing saved: Settings offers what the chosen
    server serves (a click fills the model's name), and Test connection says
    in words that it serves the model, or that it has no such model, that
    nothing listens at that URL, or that the URL is not a model server's."""
    from chatagent.testing.ports import free_port
    from test_models_catalog import openai_models_server

    gemini, _ = model
    _, panel = await _open(ctx, [f"{pages}/museum.html"])
    await panel.click("#settings-button")
    # Gemini, as saved: its models, as the stand-in lists them.
    served = panel.locator("#gemini-served button")
    await served.first.wait_for(timeout=30_000)
    assert await served.all_inner_texts() == ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert await _tested(panel) == ("ok", f"✓ {gemini.url} — connected; it serves gemini-2.5-flash.")
    settings_file = Path((await panel.evaluate("window.chatagentTest.settings()"))["path"])
    before = settings_file.read_text()

    with openai_models_server("qwen2.5-0.5b", "smollm2") as url:
        await panel.check("input[name=provider][value=openai]")
        assert await panel.inner_text("#model-test-result") == "", "Gemini's answer is not this server's"
        await panel.fill("#openai-base-url", url)
        await panel.press("#openai-base-url", "Tab")
        served = panel.locator("#openai-served button")
        await served.nth(1).wait_for(timeout=30_000)
        assert await served.all_inner_texts() == ["qwen2.5-0.5b", "smollm2"]
        assert await panel.eval_on_selector_all("#openai-models option", "os => os.map(o => o.value)") == \
            ["qwen2.5-0.5b", "smollm2"]

        await panel.fill("#openai-model", "llama3.2")
        assert await _tested(panel) == ("error", f"✗ {url} — It has no model “llama3.2”; it serves: qwen2.5-0.5b, "
                                                 "smollm2. Choose one of those.")
        out = DOCS if os.environ.get("CHATAGENT_DOCS_SCREENSHOTS") else tmp_path
        await panel.screenshot(path=str(out / "panel-settings-models.png"))

        await served.nth(1).click()
        assert await panel.input_value("#openai-model") == "smollm2"
        assert await panel.inner_text("#model-test-result") == "", "the answer was about another name"
        assert await _tested(panel) == ("ok", f"✓ {url} — connected; it serves openai:smollm2.")

        not_models = url.removesuffix("/v1")  # a server, but its model list is not there
        await panel.fill("#openai-base-url", not_models)
        assert await _tested(panel) == (
            "error", f"✗ {not_models} — It has no /models (404): is it the model server's URL? Check the Server URL.")

    dead = f"http://127.0.0.1:{free_port()}/v1"
    await panel.fill("#openai-base-url", dead)
    await panel.press("#openai-base-url", "Tab")
    assert await _tested(panel) == (
        "error", f"✗ {dead} — Nothing is listening there: is the server running? Check the Server URL.")
    assert await panel.locator("#openai-served").is_hidden(), "no list from a server that is not there"
    assert settings_file.read_text() == before, "a test saves nothing"

    # A model named by its local server (`chatagent config set model ollama:llama3.2`): the form
    # shows it where an OpenAI-compatible server's model is chosen, at the address the name stands for.
    await panel.evaluate("window.chatagentTest.saveSettings({model: 'ollama:llama3.2'})")
    assert await panel.is_checked("input[name=provider][value=openai]")
    assert await panel.input_value("#openai-model") == "llama3.2"
    assert await panel.input_value("#openai-base-url") == "http://127.0.0.1:11434/v1"
    settings_file.write_text(before)
    await panel.click("#settings-cancel")


async def test_the_context_window_is_set_in_settings_and_emptied_back_to_the_servers(
    ctx: Any, pages: str,
) -> None:
    """Settings → Context window: empty (the model's server says), saved as
    typed, shown again from the settings file, emptied back to the server's;
    the offline model, which has none, does not show it."""
    _, panel = await _open(ctx, [f"{pages}/museum.html"])
    await panel.click("#settings-button")
    await expect(panel.locator("#settings-message")).to_have_text("", timeout=30_000)  # the host's settings, shown
    field = panel.locator("#context-window")
    assert await field.input_value() == ""
    settings_file = Path((await panel.evaluate("window.chatagentTest.settings()"))["path"])
    before = settings_file.read_text()
    try:
        await panel.check("input[name=provider][value=gemini]")
        await panel.fill("#gemini-model", "gemini-2.5-flash")
        await expect(field).to_be_visible()
        await field.fill("8192")
        await panel.click("#settings-save")
        await expect(panel.locator("#settings-message")).to_have_text(
            "Saved. gemini-2.5-flash answers the next question.", timeout=30_000)
        assert "context_window = 8192" in settings_file.read_text()
        shown = await panel.evaluate("window.chatagentTest.settings()")
        assert shown["settings"]["contextWindow"]["value"] == "8192"
        await panel.check("input[name=provider][value=extractive]")
        await expect(field).to_be_hidden()
        await panel.check("input[name=provider][value=gemini]")
        await field.fill("")
        await panel.click("#settings-save")
        await expect(panel.locator("#settings-message")).to_have_text(
            "Saved. gemini-2.5-flash answers the next question.", timeout=30_000)
        assert "context_window" not in settings_file.read_text()
    finally:
        settings_file.write_text(before)
        await panel.click("#settings-cancel")


async def test_what_is_chosen_in_settings_before_they_come_from_the_host_stays_when_they_do(tmp_path: Path) -> None:
    """Settings opened while the host is still starting: the provider chosen and
    the model typed meanwhile are still there once the host's settings arrive,
    and "Loading the settings…" goes."""
    # The host starts once the test has made its choices (the gate file appears), however long they take.
    gate = tmp_path / "host-may-start"
    slow_host = ["sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$@"', str(gate),
                 *command(module="extension_bridge")]
    async with chromium_with_extension(tmp_path, env=_env(tmp_path / "config.toml"), host=slow_host) as browser:
        panel = await browser.new_page()
        await panel.goto(PANEL_URL)
        await panel.click("#settings-button")
        assert await panel.inner_text("#settings-message") == "Loading the settings…"
        await panel.check("input[name=provider][value=gemini]")
        await panel.fill("#gemini-model", "gemini-2.5-pro")
        assert await panel.get_attribute("#host-status", "data-state") != "ready", "chosen before the host answered"
        gate.touch()
        await panel.wait_for_selector("#host-status[data-state=ready]", timeout=60_000)
        await expect(panel.locator("#settings-message")).to_have_text("", timeout=60_000)
        assert await panel.is_checked("input[name=provider][value=gemini]")
        assert await panel.is_visible("#gemini-model") and await panel.input_value("#gemini-model") == "gemini-2.5-pro"
