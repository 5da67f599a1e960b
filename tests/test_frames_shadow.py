"""Text inside frames and open shadow roots, on real Chromium: a page that
frames a same-origin and a cross-origin page (which frames another), trackers
and parked ads that must not be read, and web components with nested open
shadow roots; through extraction, the context the model sees and a whole
question. Pages without either are read exactly as before, and the stamp
shortcut still holds: nothing moves for an unchanged page and its frames."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from playwright.async_api import Error as PlaywrightError, Frame

from chatagent.agent import ChatAgent
from chatagent.browser.base import Tab
from chatagent.browser.frames import MAX_DEPTH, MAX_FRAMES, _origin
from chatagent.browser.playwright import PlaywrightBrowser, PlaywrightTab
from chatagent.context import ContextBuilder, TabContext
from chatagent.events import Done, ErrorEvent, Event
from chatagent.extraction import Extractor, extract_snapshot
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.testing.gemini_server import GeminiServer, TextReply

from conftest import Site, record_evaluate

pytestmark = pytest.mark.asyncio(loop_scope="session")

INNER = "The ferry to Skerryholm leaves from berth 4 at 07:40 and again at 16:15."
AFTER_INNER = "Tickets are sold at the kiosk beside berth 2"
CROSS = "wind south-west force 5"
AFTER_CROSS = "Sailings may be cancelled at short notice"
NESTED = "the Skerryholm lighthouse is under repair until 30 May"
HIDDEN = {  # frames.html's trackers and parked ads, by what hides them
    "display:none": "HIDDEN-DISPLAY-5521",
    "0×0": "HIDDEN-ZERO-7730",
    "1×1": "HIDDEN-PIXEL-1904",
    "off-screen": "HIDDEN-OFFSCREEN-3318",
    "visibility:hidden": "HIDDEN-VISIBILITY-6642",
}
SHADOW_FACTS = (
    "The Kestrel 9 battery stores 625 Wh",  # an open shadow root
    "rides 140 km in eco mode",  # one inside it
    "ten-year warranty against defects",  # a declarative shadow root
    "Registered owners also get free servicing",  # light DOM slotted into it
    "The nearest Kestrel dealer is Velo Nord",  # a frame inside a shadow root
)
EXTRACTOR = Extractor()


def frames_url(site: Site, other_site: Site) -> str:
    return f"{site.url('frames')}?cross={other_site.base}"


@pytest_asyncio.fixture(loop_scope="session")
async def web_open_tabs(site: Site, other_site: Site) -> AsyncIterator[object]:
    """`open_tabs` in a browser that counts the fixture sites as the web (public
    addresses, as Chromium's own tests do): a saved page may frame pages from the
    web, never from this machine (`chatagent.browser.network_scope`)."""
    ports = ",".join(f"127.0.0.1:{urlsplit(s.base).port}=public" for s in (site, other_site))
    browser = await PlaywrightBrowser.launch(extra_args=[f"--ip-address-space-overrides={ports}"])

    async def _open(targets: list[str], *, timeout_s: float | None = None) -> list[object]:
        return list(await browser.open_tabs(targets, timeout_s=timeout_s))

    try:
        yield _open
    finally:
        await browser.close()


async def _open(open_tabs, url: str) -> PlaywrightTab:
    (tab,) = await open_tabs([url], timeout_s=15)
    assert isinstance(tab, PlaywrightTab), tab
    return tab


async def _context(tab: Tab, question: str | None = None) -> TabContext:
    (tc,) = (await ContextBuilder(EXTRACTOR, budget_per_tab=2000).build([tab], question)).tabs
    assert tc.ok, tc.error
    return tc


def _frame(tab: PlaywrightTab, name: str) -> Frame:
    return next(f for f in tab.page.frames if f.url.endswith(name))


def _in_order(text: str, *parts: str) -> None:
    """Each of `parts` is in `text`, after the one before it."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} not after {text[:at][-80:]!r}"
        at = found + len(part)


async def ask(agent: ChatAgent, question: str) -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1
    return events


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every evaluate reply from any frame of any page (a page's own evaluate included)."""
    replies: list[dict] = []
    evaluate = Frame.evaluate

    async def recording(self: Frame, *args, **kwargs):
        reply = await evaluate(self, *args, **kwargs)
        replies.append(reply if isinstance(reply, dict) else {"reply": reply})
        return reply

    monkeypatch.setattr(Frame, "evaluate", recording)
    return replies



# --- frames -----------------------------------------------------------------------


async def test_frames_are_read_where_they_sit_and_marked_with_their_origin(
    site: Site, other_site: Site, open_tabs
) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    ours, theirs = f"Frame from {site.base}:", f"Frame from {other_site.base}:"
    tc = await _context(tab)
    # In the text the model sees: each frame's text under its origin, where the frame
    # sits (after the text before it, before the text after it), the nested one inside its parent's.
    _in_order(tc.text, "The harbour office publishes", ours, INNER, AFTER_INNER, theirs, CROSS, theirs, NESTED, AFTER_CROSS)
    assert tc.text.count(theirs) == 2  # the cross-origin frame and the one it frames
    # The rendered text has them too, after the page's own.
    snap = await tab.snapshot()
    _in_order(snap.visible_text, AFTER_CROSS, ours, INNER, theirs, CROSS, theirs, NESTED)
    assert f"<p>{html.escape(ours)}</p>" in snap.html and "__chatagent_" not in snap.html  # no placeholder left


async def test_hidden_tracking_and_parked_frames_are_not_read(site: Site, other_site: Site, open_tabs) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    assert len(tab.page.frames) == 1 + 2 + 1 + len(HIDDEN)  # they are there, and loaded
    snap = await tab.snapshot()
    extracted = extract_snapshot(snap).text
    assert INNER in extracted  # frames are read, just not these
    for why, fact in HIDDEN.items():
        assert fact not in snap.html and fact not in snap.visible_text and fact not in extracted, why


async def test_an_unchanged_page_and_its_frames_move_no_html(
    site: Site, other_site: Site, open_tabs, recorded: list[dict]
) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    record_evaluate(tab, recorded)
    first = await tab.snapshot()
    assert any("html" in r for r in recorded)
    recorded.clear()
    again = await tab.snapshot()
    snapshots = [r for r in recorded if "stamp" in r]
    assert len(snapshots) == 4  # the page and the three frames shown, each asked with its stamp
    assert all(r.get("same") and "html" not in r for r in snapshots), snapshots
    assert again.content_hash == first.content_hash


async def test_a_change_inside_a_frame_is_seen_on_the_next_snapshot(
    site: Site, other_site: Site, open_tabs
) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    first = await tab.snapshot()
    assert NESTED in first.visible_text
    # The deepest frame changes; neither the page nor the frame around it does.
    await _frame(tab, "frame_nested.html").evaluate(
        "document.querySelector('p').textContent = 'Notice to mariners: the Skerryholm light is working again.'"
    )
    second = await tab.snapshot()
    assert "the Skerryholm light is working again" in second.visible_text and NESTED not in second.visible_text
    assert "the Skerryholm light is working again" in second.html
    # And a frame that navigates is read anew: the timetable's frame now shows the notice.
    inner = _frame(tab, "frame_inner.html")
    await inner.evaluate("location.href = 'frame_nested.html?moved'")
    await inner.wait_for_url("**/frame_nested.html?moved")
    third = await tab.snapshot()
    assert INNER not in third.visible_text
    _in_order(third.visible_text, f"Frame from {site.base}:", NESTED)


async def test_a_frame_that_fails_mid_read_is_left_out_and_read_again_later(
    site: Site, other_site: Site, open_tabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    evaluate = Frame.evaluate

    async def detached(self: Frame, *args, **kwargs):
        if self.url.endswith("frame_cross.html"):
            raise PlaywrightError("Frame.evaluate: Frame was detached")
        return await evaluate(self, *args, **kwargs)

    monkeypatch.setattr(Frame, "evaluate", detached)
    snap = await tab.snapshot()
    assert INNER in snap.visible_text and AFTER_CROSS in snap.visible_text
    assert CROSS not in snap.visible_text and CROSS not in snap.html
    monkeypatch.undo()
    # Not taken for "unchanged": the frame's text is there on the next read.
    assert CROSS in (await tab.snapshot()).visible_text


async def test_a_frame_that_does_not_respond_is_skipped(
    site: Site, other_site: Site, web_open_tabs, tmp_path: Path
) -> None:
    # From another site (localhost, not 127.0.0.1): its own renderer, busy for ever.
    busy = other_site.base.replace("127.0.0.1", "localhost") + "/frame_busy.html"
    page = tmp_path / "board.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>Departures</title></head><body><p>Departures from Northport.</p>"
        f"<iframe src='{busy}'></iframe><iframe src='{site.url('frame_inner')}'></iframe>"
        "<p>Platform changes are announced on the board.</p></body></html>"
    )
    tab = await _open(web_open_tabs, str(page))
    snap = await tab.snapshot()
    assert "Platform changes are announced" in snap.visible_text and INNER in snap.visible_text
    assert "BUSY-BOARD" not in snap.visible_text


async def test_refused_and_error_frames_are_neither_read_nor_waited_for(
    site: Site, web_open_tabs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame of a local file Chromium refuses never answers, and a frame of a
    server's 404 is its error page: neither is content. With the waits for a
    frame made longer than this test may take, the snapshot must not wait."""
    import asyncio

    from chatagent.browser import frames

    monkeypatch.setattr(frames, "FRAME_TIMEOUT_S", 600.0)
    monkeypatch.setattr(frames, "FRAMES_TIMEOUT_S", 600.0)
    secret = tmp_path / "private.txt"
    secret.write_text("PRIVATE-NOTE-1177")
    page = tmp_path / "board.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>Departures</title></head><body><p>Departures from Northport.</p>"
        f"<iframe src='{secret.as_uri()}'></iframe><iframe src='{site.url('/404')}'></iframe>"
        f"<iframe src='missing.html'></iframe><iframe src='{site.url('frame_inner')}'></iframe></body></html>"
    )
    tab = await _open(web_open_tabs, str(page))
    snap = await asyncio.wait_for(tab.snapshot(), 60)
    assert "Departures from Northport" in snap.visible_text and INNER in snap.visible_text
    assert "PRIVATE-NOTE" not in snap.visible_text
    # "404" as a word: the loopback server's port may hold those digits ("127.0.0.1:40435").
    assert not re.search(r"\b404\b", snap.visible_text) and "Not a file the user named" not in snap.visible_text


async def test_frames_are_read_up_to_the_caps(open_tabs, tmp_path: Path) -> None:
    def framed(body: str) -> str:
        return f"<iframe style='width:300px;height:150px' srcdoc='{html.escape(body, quote=True)}'></iframe>"

    def page(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text(f"<!DOCTYPE html><html><head><title>{name}</title></head><body>{body}</body></html>")
        return str(path)

    nested = f"<p>Level {MAX_DEPTH + 1}.</p>"
    for level in range(MAX_DEPTH, 0, -1):
        nested = f"<p>Level {level}.</p>" + framed(nested)
    panels = "".join(framed(f"<p>Panel number {i}.</p>") for i in range(1, MAX_FRAMES + 3))
    tabs = await open_tabs([page("nested.html", framed(nested)), page("panels.html", panels)], timeout_s=15)
    assert all(isinstance(t, PlaywrightTab) for t in tabs), tabs
    text = (await tabs[0].snapshot()).visible_text
    assert all(f"Level {n}." in text for n in range(1, MAX_DEPTH + 1))
    assert f"Level {MAX_DEPTH + 1}." not in text
    # The first MAX_FRAMES in document order.
    text = (await tabs[1].snapshot()).visible_text
    assert [i for i in range(1, MAX_FRAMES + 3) if f"Panel number {i}." in text] == list(range(1, MAX_FRAMES + 1))


async def test_a_question_answered_from_a_cross_origin_frame(
    site: Site, other_site: Site, open_tabs, gemini: GeminiServer
) -> None:
    tab = await _open(open_tabs, frames_url(site, other_site))
    gemini.enqueue(TextReply(text="Wind south-west force 5, visibility good [Tab 1]."))
    agent = ChatAgent(load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url)), [tab])
    events = await ask(agent, "What is the coastguard's forecast for the crossing?")
    assert isinstance(events[-1], Done)
    sent = gemini.generate_requests[-1].text()
    _in_order(sent, AFTER_INNER, f"Frame from {other_site.base}:", CROSS, AFTER_CROSS)
    # The extractive model answers from the frame's text too.
    events = await ask(ChatAgent(load_model("extractive"), [tab]), "Which berth does the ferry to Skerryholm leave from?")
    done = events[-1]
    assert isinstance(done, Done) and "berth 4" in done.answer, done


async def test_a_frameset_page_is_read_from_its_frames(site: Site, web_open_tabs, tmp_path: Path) -> None:
    page = tmp_path / "frameset.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>Harbour</title></head><frameset cols='50%,50%'>"
        f"<frame src='{site.url('frame_inner')}'><frame src='{site.url('frame_nested')}'></frameset></html>"
    )
    tab = await _open(web_open_tabs, str(page))
    mark = f"Frame from {site.base}:"
    snap = await tab.snapshot()
    assert snap.visible_text.startswith(mark)
    _in_order(snap.visible_text, mark, INNER, mark, NESTED)
    _in_order((await _context(tab)).text, mark, INNER, mark, NESTED)


async def test_a_frames_mark_names_its_origin_and_nothing_else() -> None:
    page = "http://127.0.0.1:8000"
    assert _origin("https://user:secret@widgets.example:8443/w?id=7#top", page) == "https://widgets.example:8443"
    assert _origin("about:srcdoc", page) == _origin("about:blank", page) == page  # a parent's own document
    assert _origin("blob:https://widgets.example/5f1c", page) == "https://widgets.example"
    assert _origin("data:text/html,<p>hi</p>", page) == "data:"
    assert _origin("http://[::1", page) == page  # malformed: no error


# --- shadow roots -------------------------------------------------------------------


async def test_nested_open_shadow_roots_are_read(site: Site, open_tabs) -> None:
    tab = await _open(open_tabs, site.url("shadow"))
    snap = await tab.snapshot()
    tc = await _context(tab)
    for fact in SHADOW_FACTS:
        assert fact in snap.visible_text and fact in tc.text, fact
    # In place: the specifications between the introduction and the closing line.
    _in_order(tc.text, "delivered fully assembled", SHADOW_FACTS[0], SHADOW_FACTS[1], "Questions? Our shop")
    assert "HIDDEN-SHADOW" not in snap.visible_text  # the hidden host renders nothing
    assert "<template shadowrootmode" not in snap.html  # written as elements trafilatura reads
    done = (await ask(ChatAgent(load_model("extractive"), [tab]), "How far does the Kestrel 9 ride on a full charge?"))[-1]
    assert isinstance(done, Done) and "140 km" in done.answer, done


async def test_a_change_inside_a_shadow_root_is_seen_on_the_next_snapshot(site: Site, open_tabs) -> None:
    tab = await _open(open_tabs, site.url("shadow"))
    assert "625 Wh" in (await tab.snapshot()).visible_text
    await tab.page.evaluate(
        "document.querySelector('bike-specs').shadowRoot.getElementById('battery').textContent = "
        "'The Kestrel 9 battery stores 750 Wh.'"
    )
    snap = await tab.snapshot()
    assert "750 Wh" in snap.visible_text and "625 Wh" not in snap.visible_text and "750 Wh" in snap.html


# --- ordinary pages -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["article", "table", "changing"])
async def test_a_page_without_frames_or_shadow_roots_is_read_as_before(
    site: Site, open_tabs, recorded: list[dict], name: str
) -> None:
    tab = await _open(open_tabs, site.url(name))
    record_evaluate(tab, recorded)
    snap = await tab.snapshot()
    assert len(recorded) == 1  # one evaluate: the page's, no frame's
    assert snap.html == await tab.page.content()
    assert snap.visible_text == await tab.page.evaluate("document.body.innerText")
