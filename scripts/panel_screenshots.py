"""Draw the side panel's screenshots in docs/: an answer with a table, a
thread with a follow-up, the settings, an error, and Summarize in one click
(the suggestion on an empty thread, then an answer drawn from an overview of
the page, side by side). Real Chromium with the
extension and the real host; the model is the Gemini client against the
project's local Gemini-compatible server, with scripted replies (no network
here), so the pictures show the panel, not a model's skill.

One more, panel-summary-offline.png, is the model's own work: Summarize this
page on the orchard handbook with the offline model (`extractive`, no key), its
summary in the page's own sentences, each cited, and (scrolled to) the Sources.

    .venv/bin/python scripts/panel_screenshots.py [--out docs] [--only offline-summary]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.server import PageServer  # noqa: E402
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, Reply, TextReply  # noqa: E402
from extension_bridge.harness import choose_gemini, chromium_with_extension, open_panel  # noqa: E402

PAGES = ROOT / "fixtures" / "pages"

COMPARISON = """Port Averly is the bigger and older of the two [Tab 1]; Lindqvist Harbor is wetter and has no trams [Tab 2].

| | Port Averly | Lindqvist Harbor |
|---|---|---|
| Population (2024) | 182,400 | 96,750 |
| Founded | 1648 | 1791 |
| Tram lines | 6 | none (buses and ferries) |
| Annual rainfall | 640 mm | 1,120 mm |
"""

FOLLOW_UP = """A 24-hour ticket costs:

- **€7.50** in Port Averly (trams and buses) [Tab 1]
- **€6.20** in Lindqvist Harbor, covering buses *and* ferries [Tab 2]
"""


# A summary of fixtures/pages/orchard_guide.html, citing the passages of its overview that it draws on.
SUMMARY = """The handbook is the Marren Valley Orchard Society's guide to keeping heritage apples [Tab 1]:

- **History**: the valley's first orchard dates from 1712 {first orchard in the Marren}.
- **Where to plant**: south-facing slopes, out of the frost pocket on the valley floor {south-facing slopes}.
- **Varieties**: start with Dunmore Russet, Helm Pippin and Marren Queen {Start with three varieties}.
- **Care**: prune in the dormant season, at most a fifth of the canopy a winter {Prune in the dormant}.
- **Harvest and storage**: pick with a lift and twist {An apple is ready}; store wrapped, at 2–6 °C {Keep only sound fruit}.
"""


def _cited(request: RecordedRequest, text: str) -> str:
    """`text` with each {words} replaced by the id the page context gives the passage holding them."""
    def block(m: re.Match[str]) -> str:
        found = re.search(rf"\[(\d+\.\d+)\] [^\n]*{re.escape(m.group(1))}", request.text())
        return f"[{found.group(1)}]" if found else ""

    return re.sub(r"\{([^}]+)\}", block, text)


def reply(request: RecordedRequest) -> Reply:
    question = request.last_user_text()
    if "ticket" in question:
        return TextReply(text=FOLLOW_UP)
    if "Summarize" in question:
        return TextReply(text=_cited(request, SUMMARY))
    return TextReply(text=COMPARISON)


def side_by_side(shots: list[bytes], path: Path) -> None:
    """Screenshots of the panel, left to right, a thin rule between them."""
    from PIL import Image

    images = [Image.open(io.BytesIO(s)) for s in shots]
    picture = Image.new("RGB", (sum(i.width for i in images) + len(images) - 1, max(i.height for i in images)), "#d0d7de")
    x = 0
    for image in images:
        picture.paste(image, (x, 0))
        x += image.width + 1
    picture.save(path, optimize=True)


async def offline_summary(out: Path) -> Path:
    """Summarize this page, clicked on the orchard handbook with the panel's default model, the
    offline one: a fresh profile and settings, no key in the environment. The answer as it
    opens, then scrolled to its end and the Sources, side by side."""
    path = out / "panel-summary-offline.png"
    with tempfile.TemporaryDirectory() as work, PageServer() as pages:
        os.environ["CHATAGENT_CONFIG"] = str(Path(work) / "config.toml")
        env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "CHATAGENT_MODEL")}
        guide = pages.file_url(PAGES / "orchard_guide.html")
        async with chromium_with_extension(Path(work), env=env) as ctx:
            await (await ctx.new_page()).goto(guide)
            panel = await open_panel(ctx, [guide], width=400, height=760)
            model = await (await panel.wait_for_selector("#model-chip:not([hidden])")).text_content()
            if model != "Offline":
                raise RuntimeError(f"the panel's model is {model!r}, not the offline one")
            await panel.click(".suggestion:text-is('Summarize this page')")
            await panel.wait_for_selector("body[data-state=done]")
            await panel.wait_for_selector(".source-quote")
            await panel.mouse.move(0, 0)  # not hovering a source, where the click left the pointer
            scroll = ("(to) => { const box = document.getElementById('thread-box');"
                      " box.scrollTop = to ? box.scrollTop + box.querySelector(to).getBoundingClientRect().top"
                      " - box.getBoundingClientRect().top - 4 : 0; }")
            await panel.evaluate(scroll, None)  # the question and the summary's first lines
            top = await panel.screenshot()
            await panel.evaluate(scroll, ".answer > :last-child")  # the summary's last line, then its sources
            side_by_side([top, await panel.screenshot()], path)
    return path


async def main(out: Path, only: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if only == "offline-summary":
        print(await offline_summary(out))
        return
    with tempfile.TemporaryDirectory() as work, PageServer() as pages, \
            GeminiServer(responder=reply, ttft_s=0.2, tokens_per_s=400, api_key="docs-key") as gemini:
        os.environ["CHATAGENT_CONFIG"] = str(Path(work) / "config.toml")  # not the user's own settings
        env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "CHATAGENT_MODEL")}
        urls = [pages.file_url(PAGES / "two_a.html"), pages.file_url(PAGES / "two_b.html")]
        async with chromium_with_extension(Path(work), env=env) as ctx:
            for url in urls:
                await (await ctx.new_page()).goto(url)
            panel = await open_panel(ctx, urls, width=400, height=760)

            # Settings: Gemini with a key and the local endpoint.
            await choose_gemini(panel, endpoint=gemini.url, key="wrong-key")
            await panel.screenshot(path=str(out / "panel-settings.png"))
            await panel.click("#settings-cancel")

            # An error: the key is refused; the panel says what to do, in the panel.
            await panel.evaluate("window.chatagentTest.ask('Compare the two towns.')")
            await panel.screenshot(path=str(out / "panel-error.png"))

            await panel.click("#settings-button")
            await panel.fill("#google-api-key", "docs-key")
            await panel.click("#settings-save")
            await panel.wait_for_selector("#settings-message[data-kind=ok]")
            await panel.click("#settings-cancel")
            await panel.click("#new-button")

            await panel.fill("#question", "Compare the two towns.")
            await panel.press("#question", "Enter")
            await panel.wait_for_selector("body[data-state=done]")
            await panel.screenshot(path=str(out / "panel-answer.png"))

            await panel.fill("#question", "What does a day ticket cost in each?")
            await panel.press("#question", "Enter")
            await panel.wait_for_selector(".turn:nth-child(2)[data-state=done]")
            await panel.screenshot(path=str(out / "panel-thread.png"))

            # Summarize in one click: the suggestion on an empty thread, then the answer, whose
            # source says the model was given an overview of the page, not all of it.
            guide = pages.file_url(PAGES / "orchard_guide.html")
            await (await ctx.new_page()).goto(guide)
            panel = await open_panel(ctx, [guide], width=400, height=760)
            await panel.wait_for_selector(".suggestion")
            empty = await panel.screenshot()
            await panel.click(".suggestion:text-is('Summarize this page')")
            await panel.wait_for_selector("body[data-state=done]")
            await panel.wait_for_selector(".source-overview")
            side_by_side([empty, await panel.screenshot()], out / "panel-summarize.png")
    for name in ("panel-answer", "panel-thread", "panel-settings", "panel-error", "panel-summarize"):
        print(out / f"{name}.png")
    print(await offline_summary(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--only", choices=["offline-summary"], help="draw only this screenshot")
    args = parser.parse_args()
    asyncio.run(main(args.out, args.only))
