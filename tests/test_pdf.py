"""PDF tabs: read as text with page numbers, over HTTP and as local files;
a scan has no text but can be seen; the browser tools move page by page.
The fixtures are printed by headless Chromium (`fixtures/make_pdfs.py`)."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from chatagent import pdf, pdf_worker
from chatagent.pdf_worker import PdfLimits
from chatagent.agent import ChatAgent
from chatagent.browser.base import PageSnapshot, Tab
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.context import ContextBuilder
from chatagent.events import Done, Screenshot, ToolCall
from chatagent.extraction import Extractor, extract_snapshot
from chatagent.models import load_model

from conftest import Site
from test_context_cli import running_chrome  # noqa: F401 - a fixture

in_session = pytest.mark.asyncio(loop_scope="session")  # Playwright objects live on the session loop

LAST_PAGE_FACT = "The night ferry to Skarvik will be withdrawn on 14 March 2027."
QUESTION = "When will the night ferry to Skarvik be withdrawn?"


async def _tab(open_tabs, target: str) -> Tab:
    (tab,) = await open_tabs([target])
    assert isinstance(tab, Tab), f"the PDF did not open: {tab!r}"
    return tab


@in_session
@pytest.mark.parametrize("where", ["http", "local file"])
async def test_a_pdf_is_read_with_page_numbers_and_its_last_page_answers(where: str, site: Site, open_tabs) -> None:
    target = site.url("report.pdf") if where == "http" else str(site.path("report.pdf"))
    tab = await _tab(open_tabs, target)
    ctx = await ContextBuilder(Extractor(), budget_per_tab=400).build([tab], QUESTION)
    (tc,) = ctx.tabs
    assert tc.ok and tc.method == "pdf"
    assert tc.title == "Nordvik Ferries annual report 2026"
    assert tc.url == (target if where == "http" else site.path("report.pdf").as_uri())
    assert tc.original_tokens > 400 and tc.selected, "the budget and the question's selection apply to PDFs too"
    assert f"[p. 4] {LAST_PAGE_FACT}" in tc.text


@in_session
async def test_a_pdf_table_is_in_the_text_on_its_page(site: Site, open_tabs) -> None:
    tab = await _tab(open_tabs, site.url("report.pdf"))
    ex = await Extractor().extract(await tab.snapshot())
    page2 = ex.text[ex.text.index("[p. 2]"): ex.text.index("[p. 3]")]
    assert "Passengers carried per route, 2026" in page2
    assert "Nordvik – Skarvik" in page2 and "96,040" in page2


@in_session
async def test_an_answer_cites_the_pdf_page(site: Site, open_tabs) -> None:
    agent = ChatAgent(load_model("extractive"), [await _tab(open_tabs, site.url("report.pdf"))])
    events = [e async for e in agent.ask(QUESTION)]
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 1
    assert "14 March 2027" in done.answer and "[Tab 1, p. 4]" in done.answer
    assert {c.tab_id for c in done.citations} == {"1"}
    assert any("14 March 2027" in c.quote for c in done.citations), "and the passage, quoted"


@in_session
async def test_a_scanned_pdf_says_it_has_no_text_and_can_be_seen(site: Site, open_tabs) -> None:
    tab = await _tab(open_tabs, site.url("scanned.pdf"))
    ctx = await ContextBuilder(Extractor()).build([tab], "What is the total due?")
    (tc,) = ctx.tabs
    assert tc.text.strip("# ") == "Scanned invoice"  # the title, and no text
    assert any("no text layer" in n for n in tc.notes)
    agent = ChatAgent(load_model("extractive"), [tab])
    events = [e async for e in agent.ask("What total is shown in the scanned image?")]
    assert isinstance(events[-1], Done) and events[-1].pass_ == 2
    assert any(isinstance(e, ToolCall) and e.name == "screenshot_tool" for e in events)
    (shot,) = [e for e in events if isinstance(e, Screenshot)]
    image = Image.open(io.BytesIO(base64.b64decode(shot.png_base64))).convert("L")
    # The page itself (A4, portrait, white with print on it), not the viewer's dark landscape viewport.
    assert image.height > image.width > 800, "the page, rendered large enough to read"
    shades = image.histogram()
    assert sum(shades[200:]) > 0.5 * image.width * image.height and sum(shades[:100]) > 1000
    assert "2,940" not in events[-1].answer


@in_session
async def test_scrolling_a_pdf_moves_page_by_page(site: Site, open_tabs) -> None:
    tab = await _tab(open_tabs, site.url("report.pdf"))
    await tab.snapshot()
    down = await tab.scroll("down")
    assert (down.pdf_page, down.pdf_pages) == (2, 4) and "96,040" in down.text
    assert down.describe().startswith("[page 2 of 4]")
    bottom = await tab.scroll("bottom")
    assert bottom.at_bottom and LAST_PAGE_FACT in bottom.text
    found = await tab.scroll(to_text="Passengers carried per route")
    assert found.pdf_page == 2
    top = await tab.scroll("top")
    assert top.pdf_page == 1 and "Nordvik Ferries operates five routes" in top.text


def test_a_pdf_that_is_not_one_is_reported() -> None:
    ex = extract_snapshot(PageSnapshot(tab_id="1", url="http://x/broken.pdf", pdf=b"%PDF-1.4 not really"))
    assert ex.text == "" and any("could not be read" in n for n in ex.notes)


def test_a_long_pdf_is_read_within_its_bound_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    data = Site.path("report.pdf").read_bytes()
    whole = extract_snapshot(PageSnapshot(tab_id="1", url="http://x/r.pdf", pdf=data))
    assert "[p. 4]" in whole.text and not any("pages;" in n for n in whole.notes)
    monkeypatch.setattr(pdf_worker, "PdfLimits", lambda: PdfLimits(max_chars=100))  # the first page is over it
    cut = extract_snapshot(PageSnapshot(tab_id="1", url="http://x/r.pdf", pdf=data))
    assert "[p. 1]" in cut.text and "[p. 2]" not in cut.text
    assert any("has 4 pages; the text of its first 1 was read (the reading stops at 100 characters)" in n
               for n in cut.notes)


def test_passages_end_at_sentence_ends_or_at_twice_their_size_and_headings_stand_alone() -> None:
    sentence = " ".join(["word"] * 50) + " ends here."
    run_on = [" ".join(["word"] * 40)] * 4  # no sentence end: cut at the line end past 90 words
    lines = [sentence, "A short line", "Results of the", "year", *run_on]
    doc = pdf.PdfText(lines=[[pdf.Line(t, 14.0 if t in lines[2:4] else 10.0) for t in lines]], page_count=1)
    assert pdf.passages(doc, doc.lines[0]) == [
        (False, f"{sentence}"), (False, "A short line"), (True, "Results of the year"),
        (False, "\n".join(run_on[:3])), (False, run_on[3]),
    ]
    assert pdf.as_text(doc).split("\n\n")[1:3] == ["[p. 1] A short line", "## Results of the year"]


def test_a_line_ending_in_a_dash_goes_on_with_the_next() -> None:
    lines = [pdf.Line("Season 2001–", 10.0), pdf.Line("02 was the best", 10.0), pdf.Line("well-", 10.0), pdf.Line("- a list", 10.0)]
    assert [line.text for line in pdf._joined(lines)] == ["Season 2001–02 was the best", "well-", "- a list"]


@in_session
@pytest.mark.parametrize("where", ["http", "local file"])
async def test_a_pdf_open_in_the_users_own_browser_is_read(where: str, site: Site, running_chrome: str) -> None:
    # Over --cdp the tab was not opened by chatagent: it is seen to be a PDF when read.
    users_chrome = await PlaywrightBrowser.connect_cdp(running_chrome)
    try:
        page = users_chrome.context.pages[0]
        await page.goto(site.url("report.pdf") if where == "http" else site.path("report.pdf").as_uri())
        (tab,) = await users_chrome.existing_tabs()
        ex = await Extractor().extract(await tab.snapshot())
    finally:
        await users_chrome.close()
    assert ex.method == "pdf" and f"[p. 4] {LAST_PAGE_FACT}" in ex.text
