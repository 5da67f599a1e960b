"""The Playwright backend against real Chromium and the served fixtures:
opening good and bad targets, scrolling lazy pages, live changes, discovery."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from playwright.async_api import Error as PlaywrightError

from chatagent.browser import discovery
from chatagent.browser.base import Tab, TabFailure
from chatagent.browser.playwright import PlaywrightBrowser, PlaywrightTab
from chatagent.context import ContextBuilder
from chatagent.errors import BrowserNotFoundError, TabError, ToolError
from chatagent.extraction import extract_snapshot

from conftest import ROOT, Site, record_evaluate
from test_context_cli import running_chrome  # noqa: F401 - a fixture

LAZY_FACT = "The warehouse code is ZX-4471"


def _tab(result: Tab | TabFailure) -> Tab:
    assert isinstance(result, Tab), f"expected an open tab, got {result!r}"
    return result


def _failure(result: Tab | TabFailure) -> TabFailure:
    assert isinstance(result, TabFailure), f"expected a TabFailure, got an open tab {result!r}"
    return result


class TestOpenTabs:
    pytestmark = pytest.mark.asyncio(loop_scope="session")

    async def test_http_url_local_path_and_file_url_all_open(self, site: Site, open_tabs) -> None:
        path = Site.path("article")
        tabs = await open_tabs([site.url("article"), str(path), path.as_uri()])
        for result in tabs:
            snap = await _tab(result).snapshot()
            assert "14.2-kilometre tram route" in snap.visible_text
            assert snap.title.startswith("Northport opens its first tram line")
        # The local path was turned into a file:// URL, not mistaken for a domain.
        assert (await _tab(tabs[1]).snapshot()).url == path.as_uri()

    async def test_a_session_is_a_browser_of_its_own_and_closes_alone(
        self, chromium: PlaywrightBrowser, site: Site, open_tabs,
    ) -> None:
        """What the daemon gives each ask: its tabs end with it; another
        session's tabs, and the browser, go on."""
        first, second = await chromium.session(), await chromium.session()
        try:
            (mine,) = await first.open_tabs([site.url("product")])
            (theirs,) = await second.open_tabs([site.url("product")])
        finally:
            await first.close()
        with pytest.raises(TabError, match="was closed"):
            await _tab(mine).snapshot()
        assert "$1,349.00" in (await _tab(theirs).snapshot()).visible_text
        await second.close()
        (again,) = await open_tabs([site.url("product")])
        assert "$1,349.00" in (await _tab(again).snapshot()).visible_text

    async def test_the_browser_keeps_playwrights_disabled_features_and_makes_no_address_bar_pop_up(
        self, chromium: PlaywrightBrowser, site: Site, open_tabs,
    ) -> None:
        """Chromium takes the last --disable-features only: chatagent's (LAUNCH_ARGS)
        must carry all of Playwright's, or the fixes Playwright makes with them are
        undone. With its own, no window makes an address-bar pop-up in a renderer
        of its own (~0.6 s of CPU at each launch)."""
        (tab,) = await open_tabs([site.url("product")])
        session = await chromium._browser.new_browser_cdp_session()  # noqa: SLF001 - the browser's own view
        try:
            processes = (await session.send("SystemInfo.getProcessInfo"))["processInfo"]
            targets = (await session.send("Target.getTargets", {"filter": [{}]}))["targetInfos"]
        finally:
            await session.detach()
        (pid,) = [p["id"] for p in processes if p["type"] == "browser"]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        playwrights, *_, applied = [set(a.partition("=")[2].split(",")) for a in argv
                                    if a.startswith("--disable-features=")]
        assert playwrights and playwrights <= applied, sorted(playwrights - applied)
        assert {"WebUIOmniboxPopup", "WebUIOmniboxAimPopup"} <= applied
        assert site.url("product") in {t["url"] for t in targets}
        assert not [t["url"] for t in targets if t["url"].startswith("chrome://omnibox")]

    async def test_relative_local_path_opens(self, open_tabs, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(ROOT)
        (tab,) = await open_tabs(["fixtures/pages/table.html"])
        assert "Henrik Solvang" in (await _tab(tab).snapshot()).visible_text

    async def test_bad_inputs_fail_per_tab_and_good_tab_survives(
        self, site: Site, open_tabs, closed_port_url: str, tmp_path: Path
    ) -> None:
        targets = [
            closed_port_url,                      # unreachable
            site.url("/file.bin"),                # download
            site.url("/image.png"),               # not HTML
            "ftp://files.example.org/report.txt",  # unsupported scheme
            str(tmp_path / "missing.html"),       # missing local file
            site.url("article"),                  # the one good tab
        ]
        unreachable, download, image, ftp, missing, good = await open_tabs(targets, timeout_s=10)

        f = _failure(unreachable)
        assert f.code == "unreachable" and "connection refused" in f.message and closed_port_url in f.message
        f = _failure(download)
        assert f.code == "download" and "download" in f.message.lower()
        f = _failure(image)
        assert f.code == "not_html" and "image/png" in f.message
        f = _failure(ftp)
        assert f.code == "bad_url" and "ftp" in f.message
        f = _failure(missing)
        assert f.code == "bad_url" and "missing.html" in f.message
        # Every failure names its own URL, and ids stay distinct and in order.
        ids = [r.tab_id for r in (unreachable, download, image, ftp, missing, good)]
        assert len(set(ids)) == 6

        ctx = await ContextBuilder().build([unreachable, download, image, ftp, missing, good])
        by_id = {t.tab_id: t for t in ctx.tabs}
        assert "14.2-kilometre tram route" in by_id[good.tab_id].text
        assert by_id[good.tab_id].ok
        assert not by_id[unreachable.tab_id].ok and by_id[unreachable.tab_id].text == ""

    async def test_missing_file_name_is_not_taken_for_a_domain(self, open_tabs) -> None:
        # "report.html" looks like a file, not like https://report.html.
        (result,) = await open_tabs(["no-such-report.html"])
        f = _failure(result)
        assert f.code == "bad_url"
        assert "no-such-report.html" in f.message and "https://" not in f.message

    async def test_a_pdf_opens_as_a_pdf_tab(self, site: Site, open_tabs) -> None:
        # A one-page PDF with no text at all: read as a PDF, and said to have no text layer.
        (tab,) = await open_tabs([site.url("/data.pdf")])
        assert isinstance(tab, Tab)
        snap = await tab.snapshot()
        assert snap.pdf.startswith(b"%PDF") and snap.html == ""
        ex = extract_snapshot(snap)
        assert ex.method == "pdf" and any("no text layer" in n for n in ex.notes)

    async def test_content_rendered_after_load_is_waited_for(self, open_tabs) -> None:
        # A data: URL has no HTTP response; the post-load settle must still run.
        html = "<div id=a>Loading…</div><script>onload=()=>setTimeout(()=>a.textContent='Rendered late',300)</script>"
        (result,) = await open_tabs(["data:text/html," + html])
        assert "Rendered late" in (await _tab(result).snapshot()).visible_text

    async def test_an_error_page_is_reported_not_read_as_content(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("/404")])
        ctx = await ContextBuilder().build([_tab(result)])
        (tc,) = ctx.tabs
        assert not tc.ok and "HTTP 404" in (tc.error or "") and "Check the address" in (tc.error or "")
        assert any("HTTP 404" in n for n in tc.notes) and not tc.text
        assert tc.url == site.url("/404"), "a caller of several pages must know which one failed"

    async def test_a_server_that_never_answers_is_a_failure_not_a_blank_tab(
        self, site: Site, chromium: PlaywrightBrowser, open_tabs,
    ) -> None:
        before = len(chromium.context.pages)
        (result,) = await open_tabs([site.url("/poll")], timeout_s=1.5)
        failure = _failure(result)
        assert failure.code == "timeout" and failure.url == site.url("/poll")
        assert "no response within 1.5s" in failure.message
        assert len(chromium.context.pages) == before

    async def test_a_cancelled_open_leaves_no_tab_behind(self, site: Site, chromium: PlaywrightBrowser) -> None:
        """A client that gives up on a slow call (an MCP cancel) leaves no tab open:
        over CDP it would stay in the user's browser."""
        import asyncio

        before = len(chromium.context.pages)
        opening = asyncio.create_task(chromium.open_tabs([site.url("/poll"), site.url("/slow")], timeout_s=30))
        while len(chromium.context.pages) < before + 2:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # both are loading
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        for _ in range(100):  # the first tab's close ends the call; the other's goes on, unawaited
            if len(chromium.context.pages) == before:
                break
            await asyncio.sleep(0.05)
        assert len(chromium.context.pages) == before

    async def test_never_finishing_page_times_out_with_partial_text(self, site: Site, open_tabs) -> None:
        slow, good = await open_tabs([site.url("/slow"), site.url("two_a")], timeout_s=2)
        ctx = await ContextBuilder().build([_tab(slow), _tab(good)])
        slow_ctx, good_ctx = ctx.tabs
        assert any("did not finish loading" in n for n in slow_ctx.notes)
        assert "The first part of this report arrived" in slow_ctx.text
        assert "founded in 1648" in good_ctx.text and not good_ctx.notes

    async def test_a_page_that_navigates_while_it_is_read_is_read_at_its_new_address(self, site: Site, open_tabs) -> None:
        """The user follows a link just as the tab is read: the read's document is
        replaced under it (Playwright's error for that), and the tab is read again
        once its new page is parsed, not reported unreadable."""
        (tab,) = await open_tabs([site.url("two_a")])
        page = _tab(tab).page
        evaluate = page.evaluate
        reads = 0

        async def navigated_midway(*args, **kwargs):
            nonlocal reads
            reads += 1
            if reads == 1:
                await page.goto(site.url("two_b"))
                raise PlaywrightError("Execution context was destroyed, most likely because of a navigation")
            return await evaluate(*args, **kwargs)

        page.evaluate = navigated_midway
        snap = await tab.snapshot()
        assert snap.url == site.url("two_b") and "founded in 1791" in snap.visible_text and reads == 2

    async def test_a_read_that_keeps_failing_says_the_tab_could_not_be_read(self, site: Site, open_tabs) -> None:
        (tab,) = await open_tabs([site.url("two_a")])
        page = _tab(tab).page

        async def always_replaced(*args, **kwargs):
            raise PlaywrightError("Execution context was destroyed, most likely because of a navigation")

        page.evaluate = always_replaced
        with pytest.raises(TabError, match="could not be read: Execution context was destroyed"):
            await tab.snapshot()


class TestScrollAndScreenshot:
    pytestmark = pytest.mark.asyncio(loop_scope="session")

    async def test_lazy_fact_appears_only_after_scrolling_down(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("lazy")])
        tab = _tab(result)
        builder = ContextBuilder()
        before = (await builder.build([tab])).tabs[0]
        assert "30 days of delivery" in before.text
        assert LAZY_FACT not in before.text

        # The fact is not loaded yet, so scroll(to_text=...) cannot find it.
        with pytest.raises(ToolError, match="not found"):
            await tab.scroll(to_text="ZX-4471")

        seen_in_viewport = False
        for _ in range(30):
            r = await tab.scroll("down")
            seen_in_viewport |= "ZX-4471" in r.text
            if r.at_bottom:
                break
        assert r.at_bottom and r.scroll_y > 0 and r.page_height > r.viewport_height
        assert seen_in_viewport
        after = (await builder.build([tab])).tabs[0]
        assert LAZY_FACT in after.text
        assert after.content_hash != before.content_hash

        # Once loaded, it can be scrolled to by text from the top.
        await tab.scroll("top")
        r = await tab.scroll(to_text="ZX-4471")
        assert "ZX-4471" in r.text and r.scroll_y > 0

    async def test_scroll_reports_viewport_text_and_position(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("long")])
        tab = _tab(result)
        top = await tab.scroll("top")
        assert top.scroll_y == 0 and not top.at_bottom
        assert "Report for 1901" in top.text and "Report for 2020" not in top.text
        down = await tab.scroll("down")
        assert down.scroll_y > 0 and down.text != top.text
        bottom = await tab.scroll("bottom")
        assert bottom.at_bottom and "Report for 2020" in bottom.describe()
        assert "bottom of page" in bottom.describe()

    async def test_screenshot_is_a_png_of_the_viewport(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("image_only")])
        png = await _tab(result).screenshot()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert (width, height) == (1280, 900)

    async def test_changing_page_is_seen_on_the_next_snapshot(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("changing")])
        tab = _tab(result)
        assert isinstance(tab, PlaywrightTab)
        first = await tab.snapshot()
        assert "Status: pending" in first.visible_text
        assert await tab.page.evaluate("window.bump()") == "Status: shipped"
        second = await tab.snapshot()
        assert "Status: shipped" in second.visible_text and "NP-7730-2291-SE" in second.visible_text
        assert second.content_hash != first.content_hash

    async def test_unchanged_page_is_not_read_again_but_every_kind_of_change_is_seen(
        self, site: Site, open_tabs
    ) -> None:
        (result,) = await open_tabs([site.url("changing")])
        tab = _tab(result)
        assert isinstance(tab, PlaywrightTab)
        first = await tab.snapshot()
        evaluate = tab.page.evaluate  # the page's own, unrecorded
        replies = record_evaluate(tab)
        again = await tab.snapshot()
        assert replies[-1].get("same") and "html" not in replies[-1]  # nothing moved
        assert again.content_hash == first.content_hash and again.visible_text == first.visible_text

        # An attribute-only change (a class that hides an element) changes the rendered text.
        await evaluate("document.head.insertAdjacentHTML('beforeend', '<style>.gone{display:none}</style>')")
        await evaluate("document.getElementById('detail').className = 'gone'")
        hidden = await tab.snapshot()
        assert "preparing it in our warehouse" not in hidden.visible_text
        assert "Status: pending" in hidden.visible_text

        # A style rule added through the CSSOM changes what renders, not the DOM.
        await evaluate("document.styleSheets[0].insertRule('#status { display: none }')")
        restyled = await tab.snapshot()
        assert "Status: pending" not in restyled.visible_text
        await evaluate("document.styleSheets[0].deleteRule(0)")
        assert "Status: pending" in (await tab.snapshot()).visible_text

        # Same DOM, new URL (a single-page app's history.pushState).
        await evaluate("history.pushState({}, '', '?view=2')")
        pushed = await tab.snapshot()
        assert pushed.url.endswith("?view=2") and pushed.visible_text == hidden.visible_text

        # A new viewport can change what media queries show.
        await evaluate(
            "document.head.insertAdjacentHTML('beforeend', "
            "'<style>@media (max-width: 600px) { #status { display: none } }</style>')"
        )
        await tab.snapshot()
        await tab.page.set_viewport_size({"width": 500, "height": 900})
        narrow = await tab.snapshot()
        assert "Status: pending" not in narrow.visible_text

        # A reload is a new document, read in full: the injected styles are gone.
        await tab.page.reload()
        replies.clear()
        reloaded = await tab.snapshot()
        assert "html" in replies[-1]
        assert "Status: pending" in reloaded.visible_text and "preparing it in our warehouse" in reloaded.visible_text

    async def test_closed_tab_reports_an_error_not_a_crash(self, site: Site, open_tabs) -> None:
        (result,) = await open_tabs([site.url("two_b")])
        tab = _tab(result)
        await tab.close()
        await tab.close()  # twice is harmless
        ctx = await ContextBuilder().build([tab])
        assert not ctx.tabs[0].ok and "closed" in (ctx.tabs[0].error or "")


# --- discovery (no browser needed) -----------------------------------------


def test_env_var_pointing_nowhere_names_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "no-chrome"
    with pytest.raises(BrowserNotFoundError) as exc:
        discovery.find_browser(str(missing))
    assert "config set browser" in exc.value.message and str(missing) in exc.value.message


def test_env_var_pointing_at_a_non_executable_file_is_rejected(tmp_path: Path) -> None:
    fake = tmp_path / "chrome"
    fake.write_text("not a browser")
    fake.chmod(stat.S_IRUSR | stat.S_IWUSR)
    if os.access(fake, os.X_OK):  # root may execute anything with any x bit; none set here
        pytest.skip("this user can execute non-executable files")
    with pytest.raises(BrowserNotFoundError, match="CHATAGENT_BROWSER"):  # the message names the variable too
        discovery.find_browser(str(fake))


def test_env_var_wins_and_accepts_a_command_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "my-chrome"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert discovery.find_browser(str(exe)) == str(exe)
    assert discovery.find_browser("my-chrome") == str(exe)


def _no_browser_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(discovery, "_CANDIDATES", ())
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(empty))
    monkeypatch.setenv("HOME", str(empty))
    monkeypatch.delenv("CHATAGENT_BROWSER", raising=False)


def test_no_browser_anywhere_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_browser_anywhere(monkeypatch, tmp_path)
    with pytest.raises(BrowserNotFoundError) as exc:
        discovery.find_browser()
    msg = exc.value.message
    assert "apt-get install chromium" in msg and "CHATAGENT_BROWSER" in msg


def test_discovery_finds_a_playwright_cache_chromium(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_browser_anywhere(monkeypatch, tmp_path)
    exe = tmp_path / "cache" / "chromium-1234" / "chrome-linux" / "chrome"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "cache"))
    assert discovery.find_browser() == str(exe)


async def test_launch_without_a_browser_raises_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_browser_anywhere(monkeypatch, tmp_path)
    with pytest.raises(BrowserNotFoundError, match="Install one"):
        await PlaywrightBrowser.launch()


def test_the_browser_hanging_up_on_a_local_file_prints_no_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A tab closed while its local file is still being sent: routine, and the traceback
    # socketserver prints by default would land in the middle of the user's answer.
    import socket
    import struct
    import urllib.request
    from urllib.parse import urlsplit

    from chatagent.browser.localfiles import LocalFiles

    page = tmp_path / "big.html"
    page.write_text("<p>" + "x" * 8_000_000 + "</p>")
    files = LocalFiles()
    try:
        url = urlsplit(files.serve(page.as_uri()))
        for _ in range(3):
            with socket.create_connection((url.hostname, url.port)) as conn:
                conn.sendall(f"GET {url.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                conn.recv(1)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, at once
        with urllib.request.urlopen(url.geturl(), timeout=10) as still:
            assert still.status == 200, "still serving"
    finally:
        files.close()
    assert "Traceback" not in capfd.readouterr().err


async def test_a_tab_another_client_just_opened_is_among_the_users_tabs(running_chrome: str) -> None:
    """Attached to the user's browser, the tabs listed for a question include one
    the user, or another agent's browser tool, opened a moment before: Playwright
    tells of such a page only once it has set it up (`PlaywrightBrowser._caught_up`)."""
    ours = await PlaywrightBrowser.connect_cdp(running_chrome)
    theirs = await PlaywrightBrowser.connect_cdp(running_chrome)
    try:
        assert len(await ours.existing_tabs()) == 1
        cdp = await theirs._browser.new_browser_cdp_session()  # noqa: SLF001 - a tool speaking CDP itself
        for opened in range(1, 9):
            await cdp.send("Target.createTarget", {"url": "about:blank"})  # returns once the page exists
            assert len(await ours.existing_tabs()) == 1 + opened
    finally:
        await theirs.close()
        await ours.close()
