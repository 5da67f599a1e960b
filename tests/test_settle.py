"""When a tab is read after it opens or scrolls (`chatagent.browser.playwright`,
the rule at `SETTLE_CAP_S`): as soon as its text is there, waiting only for
what can still change the text, and never for what cannot.

No test times anything: each page shows, by what it says when read, whether
it was read too early (a fact missing) or too late (a line the page writes
after the wait should have ended)."""

from __future__ import annotations

import pytest

import chatagent.browser.playwright as pw_backend
from chatagent.browser.base import PageSnapshot, Tab
from chatagent.browser.playwright import PlaywrightTab

from conftest import LATE_TEXT, Site

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _open(open_tabs, url: str) -> tuple[PlaywrightTab, PageSnapshot]:
    (tab,) = await open_tabs([url], timeout_s=10)
    assert isinstance(tab, Tab) and isinstance(tab, PlaywrightTab), tab
    return tab, await tab.snapshot()


async def test_images_that_never_arrive_are_not_waited_for(site: Site, open_tabs) -> None:
    tab, snap = await _open(open_tabs, site.url("stalled_images"))
    assert "The north ferry terminal reopens on 9 September 2025" in snap.visible_text
    # Read with its images still loading, and not as a page that failed to load.
    assert await tab.page.evaluate("document.readyState") == "interactive"
    assert not snap.notes


async def test_text_fetched_after_the_page_loads_is_waited_for(site: Site, open_tabs) -> None:
    _, snap = await _open(open_tabs, site.url("fetched"))
    assert LATE_TEXT["1"] in snap.visible_text
    assert "Loading tonight's departures" not in snap.visible_text


async def test_text_fetched_when_scrolled_to_is_waited_for(site: Site, open_tabs) -> None:
    tab, snap = await _open(open_tabs, site.url("fetched"))
    assert LATE_TEXT["2"] not in snap.visible_text  # fetched only near the bottom
    bottom = await tab.scroll("bottom")
    assert LATE_TEXT["2"] in bottom.text


async def test_requests_that_never_end_are_not_waited_for_past_the_cap(site: Site, open_tabs) -> None:
    # A long poll and a tag manager, both held open forever: the page is read
    # with them in flight, before its own 5-second "reconnecting" line.
    _, snap = await _open(open_tabs, site.url("long_poll"))
    assert "Berth 3 is reserved for the Skarvik ferry" in snap.visible_text
    assert "Waiting for live updates" in snap.visible_text and "reconnecting" not in snap.visible_text
    assert not snap.notes


async def test_a_page_rendered_in_steps_is_read_after_its_last_step(site: Site, open_tabs) -> None:
    _, snap = await _open(open_tabs, site.url("steps"))
    assert "Notices for travellers at Lindqvist Central" in snap.visible_text  # an early step
    assert "Platform 4 closes for resurfacing from 12 to 16 May" in snap.visible_text  # the last one


async def test_a_page_caught_mid_render_is_followed_to_its_last_step(
    site: Site, open_tabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a loaded machine the page may be two steps in (text enough not to
    # look empty) when chatagent first looks: the changes it made meanwhile
    # still count, so it is read after its last step.
    settle = pw_backend._settle

    async def late_settle(page, *args):
        await page.wait_for_function("document.querySelectorAll('#app > *').length >= 2")
        await settle(page, *args)

    monkeypatch.setattr(pw_backend, "_settle", late_settle)
    _, snap = await _open(open_tabs, site.url("steps"))
    assert "Platform 4 closes for resurfacing from 12 to 16 May" in snap.visible_text
