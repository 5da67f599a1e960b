"""A PDF costs what its bounds allow, whatever it holds (issue 54, rows 3-5):
a page whose content stream inflates without bound is given up at the
reader's memory or time limit, with a note, and the pages after it and the
other tabs are still read; a page of any size in points is shown as a bounded
raster; a search for a text in a PDF of 200,000 page references stops within
its bounds and is stopped when the call is given up. The PDFs are written here
(`chatagent.testing.hostile_pdfs`); the bombs through `chatagent ask`, MCP `read_pages`, and the
screenshot and scroll tools as pass 2 runs them."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from chatagent import pdf, pdf_worker
from chatagent.agent import ChatAgent
from chatagent.events import Done, Screenshot, ToolResult
from chatagent.limits import MAX_RENDER_PIXELS, MAX_RENDER_SIDE, PDF_MEMORY_MB
from chatagent.pdf_worker import PdfLimits
from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.hostile_pdfs import bomb_then_fact, huge_page, many_page_references, pages, stream, text_ops
from chatagent.testing.scripted_model import Calls, ScriptedChatModel, Text

from conftest import ROOT, Site
from test_mcp import server as stdio_server

in_session = pytest.mark.asyncio(loop_scope="session")  # Playwright objects live on the session loop

FACT = "The harbour opens at dawn."
NEED = f"{ESCALATION_MARKER} the answer is not in the page text"
MEMORY_NOTE = f"Page 1 of this PDF needs more than {PDF_MEMORY_MB} MB of memory to read"
# Inflates to 600 MB of blank space: unbounded, PDFium holds ~1.3 GB for it; a 1.2 MB file.
BLANK_BOMB_MB = 600


def test_a_page_that_reads_too_long_is_left_out_and_the_next_page_is_read() -> None:
    # 30 MB of text objects: ~9 s and 430 MB unbounded, given up at its 1 s.
    doc = pdf_worker.read_text(bomb_then_fact(30, FACT), PdfLimits(page_s=1, memory_mb=1000))
    assert doc.notes == ["Page 1 of this PDF took longer than 1 s to read, so its text is left out; "
                         "the other pages are used."]
    assert pdf.as_text(doc) == f"[p. 2] {FACT}" and doc.page_count == 2
    assert not doc.scanned, "a page given up is not a page without text"


def test_a_page_that_inflates_past_the_memory_bound_is_left_out() -> None:
    doc = pdf_worker.read_text(bomb_then_fact(BLANK_BOMB_MB, FACT, objects=False))
    assert len(doc.notes) == 1 and doc.notes[0].startswith(MEMORY_NOTE)
    assert pdf.as_text(doc) == f"[p. 2] {FACT}"


def test_the_whole_pdf_has_a_time_bound_as_well() -> None:
    """6,000 pages, each quick to read but together longer than the PDF's 2 s (its reader's own
    start counts too): the pages read by then are kept, and a note says how far it got."""
    many = pages([stream(text_ops(" ".join(f"entry{i}x{j}" for j in range(150)))) for i in range(6000)])
    # Time, not size or the page count, ends it: a fast machine reads 2,600 of these pages in 2 s.
    doc = pdf_worker.read_text(many, PdfLimits(read_s=2, max_pages=10_000, max_chars=10**9))
    [note] = doc.notes
    read = len(doc.lines)
    assert read < 6000 and note == (f"This PDF has 6,000 pages; the text of its first {read:,} was read "
                                    "(the reading stops after 2 s).")
    assert all(line.text.startswith(f"entry{i}x0 ") for i, [line] in enumerate(doc.lines))


_PEAK_RSS = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(proc.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stderr.write(proc.stdout + "\\n----\\n" + proc.stderr)
"""


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_ask_over_a_pdf_bomb_says_so_answers_from_the_other_tab_and_stays_small(tmp_path: Path, site: Site) -> None:
    """`chatagent ask` as a subprocess, under a parent that reads the largest
    resident size any process of its tree reached (the browser's included)."""
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(bomb_then_fact(BLANK_BOMB_MB, "Nothing to see on page two."))
    ask = [sys.executable, "-m", "chatagent", "ask", str(bomb), str(site.path("report.pdf")),
           "-q", "When will the night ferry to Skarvik be withdrawn?"]
    proc = subprocess.run([sys.executable, "-c", _PEAK_RSS, *ask], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=180)
    code, peak_kb = map(int, proc.stdout.split())
    out = proc.stderr
    assert code == 0, out
    assert "Traceback" not in out
    assert f"note tab 1: {MEMORY_NOTE}" in out and "no text layer" not in out
    assert "14 March 2027" in out.split("----")[0], "the other tab answers"
    assert peak_kb < 1_000_000, f"a process of the tree reached {peak_kb / 1000:.0f} MB"


@pytest.mark.e2e
@in_session
async def test_mcp_read_pages_gives_up_a_pdf_bomb_and_reads_the_rest(tmp_path: Path, site: Site) -> None:
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(bomb_then_fact(BLANK_BOMB_MB, FACT, objects=False))
    async with stdio_server() as s:
        read = await s.call_tool("read_pages", {"urls": [str(bomb), str(site.path("report.pdf"))]})
        again = await s.call_tool("read_pages", {"urls": [str(site.path("report.pdf"))]})
    assert not read.is_error, read.content
    bombed, report = read.structured_content["pages"]
    assert any(n.startswith(MEMORY_NOTE) for n in bombed["notes"]), bombed
    assert FACT in bombed["text"], "the page after the bomb is read"
    assert "14 March 2027" in report["text"]
    assert not again.is_error and "14 March 2027" in again.structured_content["pages"][0]["text"]


@in_session
@pytest.mark.parametrize("points", [14_400, 200_000])
async def test_a_screenshot_of_a_huge_pdf_page_is_a_bounded_raster(points: int, tmp_path: Path, open_tabs) -> None:
    path = tmp_path / "huge.pdf"
    path.write_bytes(huge_page(points))  # unbounded: 21,600 px square (3.2 GB) at 14,400 points
    (tab,) = await open_tabs([str(path)])
    model = ScriptedChatModel(replies=[Text(NEED), Calls.one("screenshot_tool", tab_id="1"),
                                       Text("A large, empty page [Tab 1].")])
    events = [e async for e in ChatAgent(model, [tab]).ask("What does the page show?")]
    assert isinstance(events[-1], Done)
    assert [r.ok for r in events if isinstance(r, ToolResult)] == [True]
    (shot,) = [e for e in events if isinstance(e, Screenshot)]
    image = Image.open(io.BytesIO(base64.b64decode(shot.png_base64)))
    assert image.width == image.height <= MAX_RENDER_SIDE and image.width * image.height <= MAX_RENDER_PIXELS


@in_session
async def test_scrolling_to_a_text_in_200000_pages_stops_at_its_bound(tmp_path: Path, open_tabs) -> None:
    path = tmp_path / "many.pdf"
    path.write_bytes(many_page_references(200_000))  # unbounded: ~50 s of search, past the tool's timeout
    (tab,) = await open_tabs([str(path)])
    model = ScriptedChatModel(replies=[Text(NEED), Calls.one("scroll_tool", tab_id="1", to_text="words on no page"),
                                       Text("It is not there [Tab 1].")])
    events = [e async for e in ChatAgent(model, [tab]).ask("Where are the words on no page?")]
    assert isinstance(events[-1], Done) and events[-1].answer == "It is not there [Tab 1]."
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert not result.ok and "not found in the first 5,000 pages of the PDF" in str(model.requests[-1].tool_results()[-1].content)


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids |= {int(p) for p in (task / "children").read_text().split()}
    return pids


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads its children from /proc")
@pytest.mark.asyncio
async def test_a_search_given_up_stops_its_reader_and_a_slow_one_says_so() -> None:
    data = many_page_references(200_000)
    before = _children()
    search = asyncio.create_task(pdf_worker.find_page(data, "words on no page", PdfLimits(find_s=300, find_pages=10**6)))
    for _ in range(200):
        if started := _children() - before:
            break
        await asyncio.sleep(0.05)
    assert started, "the search runs in a process of its own"
    search.cancel()
    with pytest.raises(asyncio.CancelledError):
        await search
    for _ in range(200):
        if not any(_alive(p) for p in started):
            break
        await asyncio.sleep(0.05)
    assert not any(_alive(p) for p in started), "the search's process is killed when the call is given up"
    with pytest.raises(pdf_worker.PdfLimitError, match="searching it took longer than 1 s"):
        await pdf_worker.find_page(data, "words on no page", PdfLimits(find_s=1, find_pages=10**6))


def test_a_reader_that_answers_out_of_turn_is_not_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the child says is checked: a reply that is not its protocol is a damaged read, not a crash."""
    monkeypatch.setattr(pdf_worker._Worker, "next", lambda self, timeout: {"pages": "many"})
    with pytest.raises(pdf.PdfError, match="answered wrongly"):
        pdf_worker.read_text(json.dumps({}).encode())


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads its children from /proc")
@pytest.mark.asyncio
async def test_a_slow_pdf_does_not_hold_a_page_extracted_beside_it_in_this_process() -> None:
    """Extraction in this process takes turns (trafilatura is not thread-safe),
    but a PDF waits on its own reader, not in that line."""
    from chatagent.browser.base import PageSnapshot
    from chatagent.extraction import Extractor

    extractor = Extractor()  # no pool: this process's threads
    before = _children()
    slow = asyncio.create_task(extractor.extract(PageSnapshot(tab_id="1", url="http://x/slow.pdf",
                                                              pdf=bomb_then_fact(30, FACT))))
    for _ in range(200):
        if _children() - before:
            break
        await asyncio.sleep(0.05)
    page = asyncio.create_task(extractor.extract(PageSnapshot(
        tab_id="2", url="http://x/page", html="<html><body><p>The ferry leaves at noon.</p></body></html>",
        visible_text="The ferry leaves at noon.")))
    done, _ = await asyncio.wait({slow, page}, return_when=asyncio.FIRST_COMPLETED)
    assert done == {page} and "noon" in page.result().text
    assert FACT in (await slow).text
