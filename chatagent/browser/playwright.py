"""Playwright backend: a real (headless) Chromium, launched or attached over CDP.

A tab is read as soon as its content is there, not when every image has
arrived: `_open` waits for DOMContentLoaded (the HTML parsed, its deferred
scripts run), then `_settle` waits only while something says the text is
about to change, and never longer than `SETTLE_CAP_S`. The rule is at
`SETTLE_CAP_S`; scrolling (`PlaywrightTab.scroll`) settles by the same rule.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, NamedTuple

from playwright.async_api import (
    Browser as PWBrowser,
    BrowserContext,
    Error as PlaywrightError,
    Page,
    Playwright,
    Request,
    Response,
    TimeoutError as PlaywrightTimeout,
    async_playwright,
)

from ..errors import BrowserError, ChatAgentError, TabError, ToolError, UnnamedLocalFileError
from ..limits import DEFAULT_LOAD_TIMEOUT_S, DEFAULT_MAX_PAGE_CHARS, DEFAULT_MAX_RESPONSE_MB
from .base import Browser, PageSnapshot, ScrollDirection, ScrollResult, Tab, TabFailure
from .discovery import find_browser
from .frames import FrameReader
from .localfiles import LocalFiles, LocalFileTooLarge, is_local
from .memory import TabMemory, TabMemoryFull
from .network_scope import NetworkScope, is_local_url
from .pdf_view import PdfView
from .slots import TabSlots, Waiting
from .targets import normalize_target
from .text_bound import TextBound

log = logging.getLogger(__name__)

# Chromium takes the last --disable-features only, and Playwright passes its own
# first: this one carries Playwright's list, and ours after it.
DISABLE_FEATURES = "--disable-features=" + ",".join((
    # Playwright's, as of 1.65 (its chromiumSwitches.ts; tests/test_browser.py checks that none is dropped).
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding",
    "ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin",
    "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
    "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
    # Ours: each window's address-bar pop-up, made ready in a WebUI renderer of its
    # own before anyone types (Chromium 15x): ~0.6 s of CPU at each launch, more with
    # each window, for a bar no headless browser shows.
    "WebUIOmniboxPopup", "WebUIOmniboxAimPopup",
))

# Flags for a closed network and unattended use: no update checks, no sync,
# no first-run UI; nothing that phones home and stalls on a refused connection.
LAUNCH_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--mute-audio",
    "--metrics-recording-only",
    "--password-store=basic",
    DISABLE_FEATURES,
)

# Playwright switches Chromium's pop-up blocker off; a page looping
# window.open() then fills memory with windows. Keep the blocker.
IGNORE_DEFAULT_ARGS = ("--disable-popup-blocking",)

# How long listing a user's tabs waits for one Playwright has not told of yet (`existing_tabs`).
CAUGHT_UP_S = 2.0

VIEWPORT = {"width": 1280, "height": 900}
_TEXTUAL_TYPES = ("text/", "application/xhtml", "application/xml", "application/json", "image/svg")
PDF_TYPE = "application/pdf"
# The PDF viewer's own document is an empty body; a page this small with no text may be one.
_VIEWER_MAX_HTML = 2_000

# Text of the elements that intersect the viewport, in document order: `limit`
# characters at most (`text_bound`; a single text node can hold megabytes).
_VIEWPORT_TEXT_JS = """
(limit) => {
  const out = [];
  const vh = window.innerHeight, vw = window.innerWidth;
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let node, last = null, chars = 0;
  while (chars < limit && (node = walker.nextNode())) {
    const t = node.data.slice(0, limit - chars).replace(/\\s+/g, ' ').trim();
    if (!t) continue;
    const el = node.parentElement;
    if (!el) continue;
    const tag = el.tagName;
    if (tag === 'SCRIPT' || tag === 'STYLE' || tag === 'NOSCRIPT' || tag === 'TEMPLATE') continue;
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.bottom <= 0 || r.top >= vh || r.right <= 0 || r.left >= vw) continue;
    const block = el.closest('p,li,tr,h1,h2,h3,h4,h5,h6,div,section,article,td,th,pre,blockquote,figcaption,dd,dt') || el;
    if (block !== last && out.length) out.push('\\n');
    else if (out.length) out.push(' ');
    out.push(t);
    chars += t.length + 1;
    last = block;
  }
  return {
    text: out.join('').replace(/ ?\\n ?/g, '\\n').trim(),
    scroll_y: Math.round(window.scrollY),
    page_height: Math.round(document.documentElement.scrollHeight),
    viewport_height: vh,
  };
}
"""

# When a page's text is ready to read. After DOMContentLoaded (or a scroll) the
# page is read at once, unless one of these says its text is about to change:
# - a request that can change the text is in flight (`_changes_text`): a
#   document (the page's, or a frame's: frames are read too), or one of the
#   page's own scripts (they render), fetch/XHR calls (an app's data) or
#   stylesheets (CSS decides what renders: a menu or a hidden block is text
#   until its stylesheet hides it, and Chromium itself paints nothing before
#   the head's). Images, fonts and media change pixels, not text; beacons and
#   prefetches change nothing; WebSockets and EventSources stay open by
#   design; a frame's own subresources are mostly an ad's. None is waited for;
# - one of those requests has just ended: its handler gets SETTLE_GRACE_MS
#   (a frame, then the grace) to run and change the text;
# - the text changed (a node with text added or removed, or text edited)
#   less than SETTLE_QUIET_MS ago: a page that renders in steps is read after
#   its last step, not its first. Changes are recorded in the page from
#   DOMContentLoaded on, so those made before we first look count too;
# - after a load, the page has no text yet (under BARE_TEXT_CHARS: an app's
#   empty shell, a "Loading…" line): it waits for its first change, then as
#   above; after a scroll, lazy loaders get SCROLL_FIRST_MS to react.
# Past SETTLE_CAP_S (a long poll, a stalled script, a text that never stops
# changing) the page is read as it is. Attribute changes do not count: they
# are mostly animation, and counting them would make many pages wait the cap.
SETTLE_CAP_S = 1.5
# Chromium now and then loses the close of a page whose navigation is committing
# (a page closed as it loads): its target and renderer then stay for good. A close
# not done after CLOSE_RETRY_S is sent again, straight to the target, up to CLOSE_TRIES times.
CLOSE_RETRY_S = 2.0
CLOSE_TRIES = 3
SETTLE_QUIET_MS = 200
SETTLE_GRACE_MS = 50
SCROLL_FIRST_MS = 100
BARE_TEXT_CHARS = 100
_TEXT_TYPES_OF_PAGE = frozenset({"script", "fetch", "xhr", "stylesheet"})
# Where a document keeps its text watcher: a page script cannot guess the key.
_SETTLE_KEY = "__chatagent_settle_" + secrets.token_hex(8)

# The document's text watcher, made once per document: when its text last
# changed (`last`, a `performance.now()` time) and the wait to wake on a change.
_TEXT_WATCHER_FN = """
(key) => {
  const d = document;
  if (d[key]) return d[key];
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'LINK', 'META']);
  const textual = (n) => n.nodeType === 3 ? /\\S/.test(n.data) : n.nodeType === 1 && !SKIP.has(n.nodeName);
  const st = { last: -Infinity, wake: null };
  new MutationObserver((records) => {
    const changed = records.some((r) => r.type === 'characterData'
      ? !SKIP.has(r.target.parentNode && r.target.parentNode.nodeName)
      : [...r.addedNodes].some(textual) || [...r.removedNodes].some(textual));
    if (changed) { st.last = performance.now(); if (st.wake) st.wake(); }
  }).observe(d, { subtree: true, childList: true, characterData: true });
  Object.defineProperty(d, key, { value: st });
  return st;
}
"""

# A tab we open starts each new page's watcher as soon as the page is parsed
# (not before: each of the parser's insertions would be a record), so a change
# made while we have not looked yet (Python busy, a loaded machine) counts too.
_SETTLE_INIT_JS = """
(() => {
  if (window !== window.top) return;
  const watch = () => (__WATCHER__)(__KEY__);
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch, { once: true });
  else watch();
})();
""".replace("__WATCHER__", _TEXT_WATCHER_FN).replace("__KEY__", json.dumps(_SETTLE_KEY))

# Whether the page has no text yet (fewer than `bareChars` characters outside
# scripts and styles) and whether its text changed less than `quietMs` ago.
_SETTLE_STATE_JS = """
([key, bareChars, quietMs]) => {
  const st = (__WATCHER__)(key);
  const changing = performance.now() - st.last < quietMs;
  const root = document.body || document.documentElement;
  if (!root) return { bare: true, changing };
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let chars = 0;
  for (let t = walker.nextNode(); t && chars < bareChars; t = walker.nextNode()) {
    if (!['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(t.parentNode.nodeName)) chars += t.data.trim().length;
  }
  return { bare: chars < bareChars, changing };
}
""".replace("__WATCHER__", _TEXT_WATCHER_FN)

# Resolves, after the next frame (scroll handlers and IntersectionObservers
# run in it), `quietMs` after the last text change if there was one in the
# last `quietMs`, else `firstMs` after it started; a change moves it on.
_SETTLE_QUIET_JS = """
([key, firstMs, quietMs]) => new Promise((resolve) => {
  const st = (__WATCHER__)(key);
  requestAnimationFrame(() => {
    const t0 = performance.now();
    let timer = 0;
    const done = () => { if (st.wake === wake) st.wake = null; resolve(); };
    const wake = () => {
      clearTimeout(timer);
      const due = st.last > t0 - quietMs ? st.last + quietMs : t0 + firstMs;
      timer = setTimeout(done, due - performance.now());
    };
    st.wake = wake;
    wake();
  });
})
""".replace("__WATCHER__", _TEXT_WATCHER_FN)

# A page whose script hogs its main thread answers no evaluate(): give up on
# it after this long instead of holding every other tab's answer hostage. A tab
# we loaded gets SNAPSHOT_PATIENCE times as long as its load took, if that is
# longer: on a busy machine (a browser server under load, a test suite) a slow
# load means a slow read, up to 3 times as long for a big page (the read lays the
# page out, which DOMContentLoaded does not wait for), while a page whose script
# hangs was loaded as fast as any other.
SNAPSHOT_TIMEOUT_S = 10.0
SNAPSHOT_PATIENCE = 5.0
NAVIGATION_REREADS = 3  # a page that navigated while it was read is read again, this many times at most
SCROLL_TIMEOUT_S = 15.0

_SCROLL_TO_TEXT_JS = """
(needle) => {
  const n = needle.toLowerCase();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    if (node.textContent.toLowerCase().includes(n) && node.parentElement) {
      node.parentElement.scrollIntoView({block: 'center'});
      return true;
    }
  }
  return false;
}
"""


class PlaywrightTab(Tab):
    """One page of a `PlaywrightBrowser`.

    `local_files` is what may be shown from `file://`: the files the user
    named (a tab opened here shows them from loopback, so none; the user's own
    tabs over CDP, those they had open). `display_url` turns a URL into the one
    the user named. `status` is the HTTP status of the document first loaded."""

    def __init__(
        self, tab_id: str, page: Page, notes: list[str] | None = None, *,
        local_files: frozenset[str] = frozenset(), display_url: Callable[[str], str] = str,
        status: tuple[int, str] | None = None, close_popups: bool = True, pdf: bool = False,
        sizes: _ResponseSizes | None = None, load_s: float = 0.0, scope: NetworkScope | None = None,
        bound: TextBound = TextBound(),
    ) -> None:
        self.tab_id = tab_id
        self.page = page
        self._load_s = load_s  # how long its page took to load here (0: loaded elsewhere, a user's tab)
        self._sizes = sizes  # counts its responses' bytes; one too large closes the page
        self._scope = scope  # keeps its page off local addresses; says what it blocked
        self._load_notes = list(notes or [])
        self._once_notes: list[str] = []  # said with the next snapshot only
        self.crashed = False
        self._reloaded = False  # a tab is reloaded after a crash once, not in a loop
        self._local_files = frozenset(_strip_fragment(u) for u in local_files)
        self._display_url = display_url
        self._status = status
        self._close_popups = close_popups
        # Reads the page and its frames; its stamps' state lives under this
        # per-tab random key in each document, out of page scripts' reach.
        self._bound = bound  # how much of its text and HTML is taken from the browser
        self._reader = FrameReader("__chatagent_" + secrets.token_hex(8), display_url, bound)
        self._last: tuple[str, str, PageSnapshot, list[str]] | None = None  # (url, stamp, snapshot, its cut note)
        self._pdf_loaded = pdf  # the document loaded is a PDF (its response said so)
        self._pdf: PdfView | None = None
        self._watch(page)

    @property
    def url(self) -> str:
        return self._display_url(self.page.url)

    def _watch(self, page: Page) -> None:
        page.on("crash", self._on_crash)
        page.on("response", self._on_response)

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True

    def _on_response(self, response: Response) -> None:
        # The current document's status: a later navigation (in chat) may land on an error page.
        if response.frame == self.page.main_frame and response.request.is_navigation_request():
            self._status = (response.status, response.status_text)

    def _gone(self) -> str | None:
        """Why this tab cannot be used any more, if it cannot."""
        if self._sizes is not None and self._sizes.over is not None:
            return self._sizes.over.closed_tab(self.name)
        if self.crashed:
            return (
                f"{self.name} crashed again after it was reloaded (its page runs out of memory or hits "
                "a browser bug), so it is not reloaded again; open the page anew to read it."
            )
        if self.page.is_closed():
            return f"{self.name} was closed."
        return None

    def _scope_notes(self) -> list[str]:
        note = self._scope.note() if self._scope is not None else None
        return [note] if note else []

    def _unnamed_local_file(self) -> str | None:
        """A local file this tab shows (as the page or in a frame) that the user did not name."""
        for frame in self.page.frames:
            if is_local(frame.url) and _strip_fragment(frame.url) not in self._local_files:
                return frame.url
        return None

    def _check_readable(self, what: str, error: type[ChatAgentError] = TabError) -> None:
        """Refuse (with `error`) a page the user did not name or an error page.
        A local file the user did not name is `UnnamedLocalFileError` where `error` is TabError."""
        if self._unnamed_local_file():
            raise (UnnamedLocalFileError if error is TabError else error)(
                # Not its address: this message reaches the model and MCP clients, and a file's name says much.
                f"{self.name} shows a local file you did not name; {what} refused. "
                "chatagent reads only the local files given on its command line."
            )
        if self._status and self._status[0] >= 400:
            code, text = self._status
            raise error(f"{self.name_and_url} is an error page: the server answered "
                        + f"HTTP {code} {text}".rstrip() + ". Check the address.")

    async def _reload_after_crash(self) -> None:
        """A crashed renderer is gone for good: open the same URL in a new page, once."""
        self._reloaded = True
        url, old = self.page.url, self.page
        page = await old.context.new_page()
        if self._close_popups:
            _refuse_popups(page)
        await _close_page(old)
        self.page, self.crashed, self._last = page, False, None
        self._status = None  # `_on_response` sets it from the reload
        self._watch(page)
        if self._scope is not None:
            await self._scope.attach(page)
        try:
            await page.goto(url, wait_until="load", timeout=DEFAULT_LOAD_TIMEOUT_S * 1000)
        except PlaywrightTimeout:
            pass  # keep what has rendered, as on a first load
        except PlaywrightError as exc:
            raise TabError(f"{self.name} crashed, and reloading it failed: {_short(exc)}") from exc
        self._once_notes.append(f"{self.name} had crashed; reloaded it.")

    async def snapshot(self) -> PageSnapshot:
        if self.crashed and not self._reloaded and not self.page.is_closed():
            await self._reload_after_crash()
        if gone := self._gone():
            raise TabError(gone)
        if self._pdf_loaded or self._pdf_view() is not None:
            return await self._pdf_snapshot()
        patience = max(SNAPSHOT_TIMEOUT_S, SNAPSHOT_PATIENCE * self._load_s)
        try:
            # One CDP round trip (and one per frame shown), and no HTML moved when nothing changed.
            async with asyncio.timeout(patience):
                data, url = await self._read()
        except TimeoutError:
            raise TabError(
                f"{self.name_and_url} is not responding: its page has been busy "
                f"for over {patience:.0f} s."
            ) from None
        except PlaywrightError as exc:
            raise TabError(self._gone() or f"{self.name_and_url} could not be read: {_short(exc)}") from exc
        # After the read, not before: the page may have navigated meanwhile.
        self._check_readable("reading it is")
        if not data.get("same") and await self._is_pdf_viewer(data):
            return await self._pdf_snapshot()
        notes = [*self._load_notes, *self._once_notes, *self._scope_notes()]
        self._once_notes.clear()
        if data.get("same") and self._last:
            return self._last[2].model_copy(update={"notes": notes + self._last[3]})
        cut = [n for n in [self._bound.note(data.get("cut"))] if n]
        snap = PageSnapshot(
            tab_id=self.tab_id,
            url=url,
            title=data.get("title") or "",
            html=data.get("html") or "",
            visible_text=data.get("text") or "",
            notes=notes + cut,
        )
        self._last = (url, data.get("stamp") or "", snap, cut)
        return snap

    async def _read(self) -> tuple[dict[str, Any], str]:
        """The page's read and its URL. A page that navigates while it is read
        (a link followed, a redirect by script) is read again once its new
        document is parsed: the snapshot is of the page the tab now shows."""
        rereads = 0
        while True:
            try:
                data = await self._reader.read(self.page, self._last[1] if self._last else None)
                url = self._display_url(self.page.url)
                if data.get("same") and not (self._last and self._last[0] == url):
                    # Same DOM, new URL (history.pushState): a snapshot must carry the URL it is of.
                    data = await self._reader.read(self.page, None)
                return data, url
            except PlaywrightError as exc:
                rereads += 1
                if rereads > NAVIGATION_REREADS or not _navigated_away(exc) or self.page.is_closed():
                    raise
                with suppress(PlaywrightError):
                    await self.page.wait_for_load_state("domcontentloaded")

    def _pdf_view(self) -> PdfView | None:
        """The PDF this tab shows, once read; None when it shows something else now."""
        if self._pdf is not None and _strip_fragment(self._pdf.url) == _strip_fragment(self.page.url):
            return self._pdf
        return None

    async def _is_pdf_viewer(self, data: dict[str, Any]) -> bool:
        """Whether the page is Chromium's PDF viewer (one more round trip, only for an empty page)."""
        if data.get("text") or len(data.get("html") or "") > _VIEWER_MAX_HTML:
            return False
        try:
            return await self.page.evaluate("document.contentType") == PDF_TYPE
        except PlaywrightError:
            return False

    async def _pdf_snapshot(self) -> PageSnapshot:
        # Before fetching: a local file the user did not name is never read, not even by us.
        self._check_readable("reading it is")
        view = self._pdf_view()
        if view is None:
            view = self._pdf = await PdfView.fetch(self.page.context, self.page.url, self.name)
            self._pdf_loaded = False
        notes = [*self._load_notes, *self._once_notes, *self._scope_notes()]
        self._once_notes.clear()
        return view.snapshot(self.tab_id, self._display_url(self.page.url), "", notes)

    async def screenshot(self) -> bytes:
        self._check_readable("a screenshot is", ToolError)
        if (view := self._pdf_view()) is not None:
            return await view.screenshot()
        try:
            return await self.page.screenshot(type="png", timeout=10_000)
        except PlaywrightError as exc:
            raise ToolError(self._gone() or f"Screenshot of tab {self.label} failed: {_short(exc)}") from exc

    async def scroll(
        self, direction: ScrollDirection = "down", to_text: str | None = None
    ) -> ScrollResult:
        try:
            async with asyncio.timeout(SCROLL_TIMEOUT_S):
                return await self._scroll(direction, to_text)
        except TimeoutError:
            raise ToolError(f"Tab {self.label} did not respond to scrolling within {SCROLL_TIMEOUT_S:g} s.") from None

    async def _scroll(self, direction: ScrollDirection, to_text: str | None) -> ScrollResult:
        if (view := self._pdf_view()) is not None:
            self._check_readable("scrolling it is", ToolError)
            return await view.scroll(direction, to_text, self.label)
        try:
            # Watched from before the scroll: a lazy loader starts its request as the page moves.
            with _TextRequests(self.page) as requests:
                if to_text:
                    found = await self.page.evaluate(_SCROLL_TO_TEXT_JS, to_text)
                    if not found:
                        raise ToolError(f"Text {to_text!r} not found on tab {self.label}.")
                else:
                    js = {
                        "down": "window.scrollBy(0, Math.round(window.innerHeight * 0.85))",
                        "up": "window.scrollBy(0, -Math.round(window.innerHeight * 0.85))",
                        "top": "window.scrollTo(0, 0)",
                        "bottom": "window.scrollTo(0, document.documentElement.scrollHeight)",
                    }[direction]
                    await self.page.evaluate(js)
                await _settle(self.page, requests, SETTLE_CAP_S, SCROLL_FIRST_MS)
            data: dict[str, Any] = await self.page.evaluate(_VIEWPORT_TEXT_JS, self._bound.limit)
        except PlaywrightError as exc:
            raise ToolError(self._gone() or f"Scrolling tab {self.label} failed: {_short(exc)}") from exc
        self._check_readable("scrolling it is", ToolError)
        result = ScrollResult(**data)
        result.at_bottom = result.scroll_y + result.viewport_height >= result.page_height - 2
        return result

    async def close(self) -> None:
        await _close_page(self.page)


class PlaywrightBrowser(Browser):
    """Launch a headless Chromium (`launch`), attach to a running one (`connect_cdp`),
    or use one from a Playwright browser server (`connect_ws`).

    It keeps the pages it made (`_ours`) until each has closed: `close` closes
    them all, over CDP too, where it must leave the user's own tabs open.
    `max_response_mb`: a tab whose page, or any file the page loads, is larger
    than this is not loaded (None: no bound). `max_page_chars`: how much of a
    tab's text and HTML is taken from the browser (`TextBound`). `memory`: the bound on what
    its pages hold across open tabs (`TabMemory`; a launched browser's). A launched or served browser
    makes sessions of its own in it (`session`)."""

    def __init__(
        self, pw: Playwright, browser: PWBrowser, context: BrowserContext, *, owned: bool,
        max_response_mb: float | None = DEFAULT_MAX_RESPONSE_MB, spare_page: Page | None = None,
        session: bool = False, max_page_chars: int = DEFAULT_MAX_PAGE_CHARS, memory: TabMemory | None = None,
    ) -> None:
        self._pw = pw
        self._browser = browser
        self.context = context
        self._owned = owned
        self._session = session  # closes its context only: the browser and its driver are another's
        self._spare_page = spare_page  # made ahead: its first tab opens in it
        self._max_response_mb = max_response_mb
        self._bound = TextBound(max_page_chars)
        self._memory = memory  # shared with the sessions made in it: one bound for all their tabs
        self._next_id = 1
        self._files = LocalFiles(None if max_response_mb is None else int(max_response_mb * 1_000_000))
        # One Tab per page, whoever asks: its id and its turn lock (tools take
        # turns on it) must be the same for every conversation and listing.
        self._adopted: dict[Page, PlaywrightTab] = {}
        self._ours: set[Page] = set()  # made here and not closed yet
        self._making: set[asyncio.Future[Page]] = set()
        self._closing: set[asyncio.Future[None]] = set()
        self._stopping = False

    @classmethod
    async def launch(
        cls,
        *,
        executable_path: str | None = None,
        headless: bool = True,
        extra_args: list[str] | None = None,
        max_response_mb: float | None = DEFAULT_MAX_RESPONSE_MB, max_page_chars: int = DEFAULT_MAX_PAGE_CHARS,
        max_tabs_mb: float | None = None,
    ) -> "PlaywrightBrowser":
        exe = executable_path or find_browser()
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.launch(
                executable_path=exe,
                headless=headless,
                args=[*LAUNCH_ARGS, *(extra_args or [])],
                ignore_default_args=list(IGNORE_DEFAULT_ARGS),
                # Chromium refuses its sandbox as root; elsewhere keep it.
                chromium_sandbox=_not_root(),
                # Ctrl-C in `chatagent chat` stops one answer: the browser must
                # outlive it. We close it ourselves on the way out.
                handle_sigint=False,
            )
            context = await browser.new_context(viewport=VIEWPORT, accept_downloads=False)
        except PlaywrightError as exc:
            await pw.stop()
            raise BrowserError(f"Could not start the browser at {exe}: {_short(exc)}") from exc
        return cls(pw, browser, context, owned=True, max_response_mb=max_response_mb, max_page_chars=max_page_chars,
                   memory=TabMemory(max_tabs_mb) if max_tabs_mb else None)

    @classmethod
    async def connect_cdp(
        cls, endpoint: str, *, max_response_mb: float | None = DEFAULT_MAX_RESPONSE_MB,
        max_page_chars: int = DEFAULT_MAX_PAGE_CHARS,
    ) -> "PlaywrightBrowser":
        """Attach to a Chrome started with --remote-debugging-port (the user's real tabs)."""
        port = await _nothing_listening(endpoint)
        if port is not None:  # the common mistake, said plainly: not as Playwright's ECONNREFUSED
            raise BrowserError(f"Nothing is listening at {endpoint}: start Chrome with "
                               f"--remote-debugging-port={port}, or leave out --cdp.")
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.connect_over_cdp(endpoint, timeout=10_000)
        except PlaywrightError as exc:
            await pw.stop()
            port = _port(endpoint)
            raise BrowserError(
                f"Could not attach to Chrome at {endpoint}: {_short(exc)}. Is it a Chrome started with "
                f"--remote-debugging-port={port or 'PORT'}? If not, start one so, or leave out --cdp."
            ) from exc
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        return cls(pw, browser, context, owned=False, max_response_mb=max_response_mb, max_page_chars=max_page_chars)

    @classmethod
    async def connect_ws(
        cls, endpoint: str, *, max_response_mb: float | None = DEFAULT_MAX_RESPONSE_MB,
        max_page_chars: int = DEFAULT_MAX_PAGE_CHARS,
    ) -> "PlaywrightBrowser":
        """Use a browser from a Playwright browser server (`playwright
        launch-server` or `run-server`): a context of our own in it, closed with us."""
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.connect(endpoint, timeout=30_000)
            context = await browser.new_context(viewport=VIEWPORT, accept_downloads=False)
        except PlaywrightError as exc:
            await pw.stop()
            if _server_without_browser(exc):  # reached, but its machine lacks the browser it launches
                raise BrowserError(
                    f"The browser server at {endpoint} cannot start its browser: {_short(exc)}. On that machine, "
                    f"start the server with a Chromium it has: put {{\"executablePath\": \"/usr/bin/chromium\"}} in a "
                    "file and run `python -m playwright launch-server --browser chromium --config FILE`, "
                    "or install Playwright's own (`python -m playwright install chromium`).",
                ) from exc
            raise BrowserError(
                f"Could not use the browser server at {endpoint}: {_short(exc)}. Check the browser_ws setting "
                "(`chatagent config set browser_ws ws://HOST:PORT/`, or --browser-ws).",
                reason=f"Could not use the browser server at {endpoint}: {_short(exc)}.", setting="browser_ws",
            ) from exc
        return cls(pw, browser, context, owned=True, max_response_mb=max_response_mb, max_page_chars=max_page_chars)

    async def session(self) -> "PlaywrightBrowser":
        """A browser of its own within this one: a new context, so its tabs,
        cookies, storage and the local files it serves are nobody else's, with
        this browser's bounds. Its `close` closes that context only. A blank
        page is made in it now, where its first tab opens: a context's first
        page costs ~300 ms more than its next ones, and any page ~100 ms."""
        if not self._owned:
            raise BrowserError("A browser attached over CDP is the user's own: chatagent makes no contexts in it.")
        context = await self._browser.new_context(viewport=VIEWPORT, accept_downloads=False)
        try:
            page = await context.new_page()
        except PlaywrightError:
            await context.close()
            raise
        return PlaywrightBrowser(self._pw, self._browser, context, owned=True, max_response_mb=self._max_response_mb,
                                 spare_page=page, session=True, max_page_chars=self._bound.limit, memory=self._memory)

    @property
    def version(self) -> str:
        """Which browser this is: its name and version."""
        return f"{self._browser.browser_type.name} {self._browser.version}"

    def on_exit(self, callback: Callable[[], object]) -> None:
        """Call `callback` when the browser goes: it exited, or the connection to it was lost."""
        self._browser.on("disconnected", lambda _browser: callback())

    def _new_id(self) -> str:
        tab_id = str(self._next_id)
        self._next_id += 1
        return tab_id

    async def existing_tabs(self) -> list[Tab]:
        """The pages open that we did not open (over CDP: the user's own tabs),
        the same Tab for a page every time. A local file one of them showed when
        first listed counts as named; nothing it goes to later does."""
        if not self._owned:
            await self._caught_up()
        self._adopted = {p: t for p, t in self._adopted.items() if not p.is_closed()}
        tabs: list[Tab] = []
        for p in self.context.pages:
            if p in self._ours or p.url.startswith("chrome"):
                continue
            if p not in self._adopted:
                self._adopted[p] = PlaywrightTab(
                    self._new_id(), p, local_files=frozenset({p.url}) if is_local(p.url) else frozenset(),
                    close_popups=False,  # the user's own browser: their pop-ups are theirs
                    bound=self._bound,
                )
            tabs.append(self._adopted[p])
        return tabs

    async def _caught_up(self) -> None:
        """Playwright tells of a page someone else opened (the user, another
        agent's browser tool) once it has set the page up, a moment after the
        page exists: a tab opened just before a question would be left out of
        it. So the pages the browser has in the user's context are counted, and
        waited for until Playwright has them too, `CAUGHT_UP_S` at most."""
        try:
            session = await self._browser.new_browser_cdp_session()
            try:
                others = set((await session.send("Target.getBrowserContexts"))["browserContextIds"])
                targets = (await session.send("Target.getTargets"))["targetInfos"]
            finally:
                with suppress(PlaywrightError):
                    await session.detach()
        except PlaywrightError:
            return  # a browser that will not say (or is gone): the tabs Playwright has are the tabs
        pages = sum(1 for t in targets if t["type"] == "page" and not t.get("subtype")  # not a prerender
                    and t.get("browserContextId") not in others and not t["url"].startswith("devtools:"))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CAUGHT_UP_S
        while len(self.context.pages) < pages:
            if loop.time() >= deadline:
                log.debug("the browser has %d pages, Playwright told of %d", pages, len(self.context.pages))
                return
            await asyncio.sleep(0.02)

    async def open_tabs(
        self, targets: list[str], *, timeout_s: float | None = None, slots: TabSlots | None = None,
        waiting: Waiting | None = None,
    ) -> list[Tab | TabFailure]:
        """`slots`: the bound on tabs open at once this call counts against: it
        waits its turn (`waiting` is told, see `TabSlots.take`), and each page
        made for it holds a slot until that page has closed."""
        share = _Share(slots, await slots.take(len(targets), waiting) if slots is not None else 0)
        opening = [
            asyncio.ensure_future(self._open(self._new_id(), t, timeout_s or DEFAULT_LOAD_TIMEOUT_S, share))
            for t in targets
        ]
        try:
            return list(await asyncio.gather(*opening))
        except BaseException:
            # Cancelled, or one failed: gather drops what the others opened. Those still
            # opening stop (and close their page); a tab already open is closed here.
            for task in opening:
                task.cancel()
                task.add_done_callback(self._close_unreturned)
            raise
        finally:
            share.give_back_unused()

    async def _open(self, tab_id: str, target: str, timeout_s: float, share: "_Share") -> Tab | TabFailure:
        try:
            url = normalize_target(target)
            # Never file:// in the browser: a local page could then show any other local file.
            address = self._files.serve(url) if is_local(url) else url
        except LocalFileTooLarge:  # known before it is read: no page is opened for it
            assert self._max_response_mb is not None
            return TabFailure(tab_id=tab_id, url=target, code="too_large",
                              message=_Over(self._max_response_mb, document=True).not_loaded(url))
        except TabError as exc:
            return TabFailure(tab_id=tab_id, url=target, code="bad_url", message=exc.message)
        if self._memory is None:
            return await self._make_and_load(tab_id, url, address, timeout_s, share)
        try:
            async with self._memory.loading(url, timeout_s):  # within the bound on all open tabs' memory
                return await self._make_and_load(tab_id, url, address, timeout_s, share)
        except TabMemoryFull as exc:
            return TabFailure(tab_id=tab_id, url=target, code="memory", message=exc.message)

    async def _make_and_load(
        self, tab_id: str, url: str, address: str, timeout_s: float, share: "_Share",
    ) -> Tab | TabFailure:
        creating = asyncio.ensure_future(self._make_page(share))
        try:
            page = await asyncio.shield(creating)
        except asyncio.CancelledError:  # the page may exist already: close it once it does
            creating.add_done_callback(self._close_when_made)
            raise
        try:
            return await self._load(tab_id, url, address, page, timeout_s)
        except BaseException:
            # Cancelled (a client gave up on the call) or failed: a half-open tab is
            # nobody's, and over CDP it would stay in the user's browser for good.
            # The close is the browser's own task: cancelled again, this one stops waiting, not closing.
            await asyncio.shield(self._close_soon(page))
            raise

    async def _make_page(self, share: "_Share") -> Page:
        """A page for a tab about to open, ours from the moment it exists. It
        holds one of the call's slots, if one is left, from before it exists
        until it has closed."""
        if self._stopping:
            raise BrowserError("The browser is closing; no tab can be opened now.")
        slots = share.hand_one()
        made = asyncio.ensure_future(self._new_page())
        self._making.add(made)
        made.add_done_callback(self._making.discard)
        try:
            page = await made
        except BaseException:
            if slots is not None:
                slots.give()
            raise
        self._ours.add(page)
        page.once("close", lambda _closed: self._ours.discard(page))
        if slots is not None:
            page.once("close", lambda _closed: slots.give())
        if self._stopping:  # `close` began while it was being made: it may not have seen it
            await self._close_soon(page)
            raise BrowserError("The browser is closing; no tab can be opened now.")
        return page

    def _close_soon(self, page: Page) -> "asyncio.Future[None]":
        """Close `page` in a task of the browser's own (`close` waits for it)."""
        closing = asyncio.ensure_future(_close_page(page))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        return closing

    def _close_when_made(self, made: "asyncio.Future[Page]") -> None:
        if not made.cancelled() and made.exception() is None:
            self._close_soon(made.result())

    def _close_unreturned(self, opened: "asyncio.Future[Tab | TabFailure]") -> None:
        if not opened.cancelled() and opened.exception() is None and isinstance(tab := opened.result(), PlaywrightTab):
            self._close_soon(tab.page)

    async def _load(self, tab_id: str, url: str, address: str, page: Page, timeout_s: float) -> Tab | TabFailure:
        _refuse_popups(page)  # before it loads: a page can open windows from its first script
        notes: list[str] = []
        loaded = True
        sizes: _ResponseSizes | None = None
        # A page the user named on their own machine or network is theirs (`network_scope`); any other is kept off it.
        scoping = None if is_local_url(url) else asyncio.ensure_future(NetworkScope.watch(page, address))
        if self._max_response_mb is None:
            await page.add_init_script(_SETTLE_INIT_JS)
        else:
            _, sizes = await asyncio.gather(
                page.add_init_script(_SETTLE_INIT_JS),
                # One too large closes the page now, loading or loaded: the bytes stop coming.
                _ResponseSizes.watch(page, self._max_response_mb, lambda: self._close_soon(page)),
            )
            if (memory := self._memory) is not None:  # watched as it receives, however long it stays open
                memory.watch(sizes)
                page.once("close", lambda _closed: memory.forget(sizes))
        scope = await scoping if scoping is not None else None

        def too_large() -> TabFailure | None:
            if sizes is None or sizes.over is None:
                return None
            return TabFailure(tab_id=tab_id, url=url, code="too_large", message=sizes.over.not_loaded(url))

        started = asyncio.get_running_loop().time()
        with _TextRequests(page) as requests:  # from before the first request
            try:
                # The HTML parsed is enough to start from: "load" would wait for every image and frame.
                response = await page.goto(address, wait_until="domcontentloaded", timeout=timeout_s * 1000)
            except PlaywrightTimeout:
                if failure := too_large():
                    return failure
                if page.url in ("", "about:blank"):  # no response at all: nothing rendered to keep
                    await _close_page(page)
                    return TabFailure(tab_id=tab_id, url=url, code="timeout",
                                      message=f"{url}: no response within {timeout_s:g}s (wait longer with the "
                                      "`timeout` setting, or --timeout).")
                # Slow or never-ending page: keep what has rendered so far.
                notes.append(f"The page did not finish loading within {timeout_s:g}s; using what had rendered.")
                response, loaded = None, False
            except PlaywrightError as exc:
                if failure := too_large():  # closed for it, which failed the navigation
                    return failure
                await _close_page(page)
                if scope is not None and scope.blocked:  # redirected to a local address
                    return TabFailure(tab_id=tab_id, url=url, code="local_address", message=scope.refused(url))
                msg = _short(exc)
                code = "download" if "Download is starting" in msg else "unreachable"
                if code == "download":
                    msg = "The URL is a file download, not a page."
                else:
                    msg = _describe_net_error(msg)
                return TabFailure(tab_id=tab_id, url=url, code=code, message=f"{url}: {msg}")
            is_pdf = False
            if response is not None:
                # The headers the response came with: `all_headers()` would ask the browser again for
                # the raw ones, a round trip per tab for what only adds cookies and security headers.
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                is_pdf = ctype == PDF_TYPE
                if ctype and not is_pdf and not ctype.startswith(_TEXTUAL_TYPES) and "html" not in ctype:
                    await _close_page(page)
                    return TabFailure(
                        tab_id=tab_id, url=url, code="not_html",
                        message=f"{url} is {ctype}, not a web page; chatagent reads web pages, text and PDFs.",
                    )
            if loaded and not is_pdf:  # data: and about: URLs have no response but may still render late
                await _settle(page, requests, min(SETTLE_CAP_S, timeout_s), None)
        if failure := too_large():  # a file it loaded as it settled
            return failure
        status = (response.status, response.status_text) if response is not None else None
        # A load cut short by the timeout says how slow the page is, not the machine: a page whose
        # script hung while it was parsed must not be waited for five times the timeout.
        load_s = asyncio.get_running_loop().time() - started if loaded else 0.0
        return PlaywrightTab(tab_id, page, notes, display_url=self._files.display_url, status=status, pdf=is_pdf,
                             sizes=sizes, load_s=load_s, scope=scope, bound=self._bound)

    async def _new_page(self) -> Page:
        """A page for a tab about to open: the one made ahead, if it is still there."""
        page, self._spare_page = self._spare_page, None
        return page if page is not None and not page.is_closed() else await self.context.new_page()

    async def close(self) -> None:
        self._stopping = True  # no page is made from now on; one being made closes itself
        try:
            if self._owned:
                await self.context.close()  # its pages with it
            else:
                # The user's own browser: close the pages we made, never theirs.
                if self._making:
                    await asyncio.wait(self._making, timeout=CLOSE_RETRY_S * CLOSE_TRIES)
                for page in list(self._ours):
                    self._close_soon(page)
            while self._closing:  # each is bounded (`_close_page`)
                await asyncio.wait(set(self._closing))
            if not self._session:
                await self._browser.close()  # launched: it ends; attached: we detach
        except PlaywrightError:
            pass
        finally:
            self._files.close()
            if not self._session:
                await self._pw.stop()


class _Share:
    """The slots a call took (`TabSlots.take`), handed one to each page made for it."""

    def __init__(self, slots: TabSlots | None, taken: int) -> None:
        self.slots = slots
        self._left = taken

    def hand_one(self) -> TabSlots | None:
        """The slots to give one back to once the page has closed; None: it holds none
        (no bound, or a call naming more tabs than the bound: the rest)."""
        if self._left <= 0:
            return None
        self._left -= 1
        return self.slots

    def give_back_unused(self) -> None:
        if self.slots is not None:
            self.slots.give(self._left)
        self._left = 0


class _Over(NamedTuple):
    """A response past the bound (`_ResponseSizes`), and the words for it."""

    limit_mb: float
    document: bool  # the page itself, not a file it loads
    setting: str = "max_response_mb"  # or max_tabs_mb: the open tabs' pages held more than it as it loaded

    def _what(self, subject: str) -> str:
        if self.setting == "max_tabs_mb":
            return (f"{subject} made the browser's pages hold more than {self.limit_mb:g} MB as it loaded "
                    "(the max_tabs_mb setting)")
        return (f"{subject} is larger" if self.document else f"{subject} loads a file larger") + \
            f" than {self.limit_mb:g} MB (the max_response_mb setting)"

    def not_loaded(self, url: str) -> str:
        return f"{self._what(url)}, so it was not loaded. To read it, raise {self.setting}."

    def closed_tab(self, name: str) -> str:
        return f"{self._what(name)}, so it was closed. To read it, raise {self.setting} and open it again."


# A response still arriving this long after its first bytes is a stream: the one closed when the
# renderers pass max_tabs_mb (`TabMemory`). A page's ordinary files have come by then; a flood's
# renderer grows ~100 MB/s meanwhile, so the bound holds to within that much.
STREAM_S = 1.0


class _ResponseSizes:
    """The bytes of each response of a page, counted as they arrive, on a CDP
    session of our own (its Network events: nothing is intercepted, so no
    request waits on us). One response past the bound, the page's or a file's,
    with a Content-Length or streamed without one, trips it, once: `over` says
    which, and `on_over` is called (it closes the page: the bytes stop)."""

    def __init__(self, limit_mb: float, on_over: Callable[[], object]) -> None:
        self.limit_mb = limit_mb
        self._limit = int(limit_mb * 1_000_000)
        self._on_over = on_over
        self.over: _Over | None = None
        self._received: dict[str, int] = {}  # request id → bytes so far
        self._since: dict[str, float] = {}  # request id → when its first bytes came (`time.monotonic`)
        self._documents: set[str] = set()
        self._session: Any = None

    @classmethod
    async def watch(cls, page: Page, limit_mb: float, on_over: Callable[[], object]) -> "_ResponseSizes":
        sizes = cls(limit_mb, on_over)
        session = sizes._session = await page.context.new_cdp_session(page)
        session.on("Network.responseReceived", sizes._response)
        session.on("Network.dataReceived", sizes._data)
        session.on("Network.loadingFinished", sizes._ended)
        session.on("Network.loadingFailed", sizes._ended)
        # No bodies kept for this session: Playwright's own keeps what it needs.
        await session.send("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0})
        return sizes

    def _response(self, event: dict[str, Any]) -> None:
        request = event["requestId"]
        if event.get("type") == "Document":
            self._documents.add(request)
        headers = event.get("response", {}).get("headers", {})
        length = str(next((v for k, v in headers.items() if k.lower() == "content-length"), "")).strip()
        if length.isdigit() and int(length) > self._limit:  # said up front: no need to wait for the bytes
            self._trip(request)

    def _data(self, event: dict[str, Any]) -> None:
        request = event["requestId"]
        self._since.setdefault(request, time.monotonic())
        size = self._received[request] = self._received.get(request, 0) + int(event.get("dataLength") or 0)
        if size > self._limit:
            self._trip(request)

    def _ended(self, event: dict[str, Any]) -> None:
        self._received.pop(event["requestId"], None)
        self._since.pop(event["requestId"], None)
        self._documents.discard(event["requestId"])

    def _trip(self, request: str) -> None:
        if self.over is None:
            self.over = _Over(self.limit_mb, request in self._documents)
            self._on_over()

    @property
    def receiving(self) -> int:
        """Bytes of the responses still arriving after `STREAM_S` (`TabMemory`): a stream,
        not a page's ordinary files, which have come by then."""
        now = time.monotonic()
        return sum(n for r, n in self._received.items() if now - self._since.get(r, now) >= STREAM_S)

    def trip_memory(self, budget_mb: float) -> None:
        """The renderers hold more than `budget_mb` while this page receives: it goes."""
        if self.over is None:
            self.over = _Over(budget_mb, True, "max_tabs_mb")
            self._on_over()


class _TextRequests:
    """The page's requests in flight that can change its text (`_changes_text`),
    watched while in the `with` block."""

    def __init__(self, page: Page) -> None:
        self._page = page
        self._in_flight: set[Request] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self.activity = 0  # such requests started or ended so far

    def __enter__(self) -> "_TextRequests":
        self._page.on("request", self._started)
        self._page.on("requestfinished", self._ended)
        self._page.on("requestfailed", self._ended)
        return self

    def __exit__(self, *exc: object) -> None:
        self._page.remove_listener("request", self._started)
        self._page.remove_listener("requestfinished", self._ended)
        self._page.remove_listener("requestfailed", self._ended)

    def _started(self, request: Request) -> None:
        if _changes_text(request, self._page):
            self._in_flight.add(request)
            self._idle.clear()
            self.activity += 1

    def _ended(self, request: Request) -> None:
        if request in self._in_flight:
            self._in_flight.discard(request)
            self.activity += 1
            if not self._in_flight:
                self._idle.set()

    async def idle(self) -> None:
        await self._idle.wait()


def _changes_text(request: Request, page: Page) -> bool:
    """Whether the answer to `request` can change the text we read (the rule at `SETTLE_CAP_S`)."""
    if request.resource_type == "document":
        return True
    if request.resource_type not in _TEXT_TYPES_OF_PAGE:
        return False
    try:
        return request.frame == page.main_frame
    except PlaywrightError:  # a service worker's request, or a frame already gone
        return False


async def _settle(page: Page, requests: _TextRequests, cap_s: float, first_ms: int | None) -> None:
    """Wait, at most `cap_s`, until the page's text is ready to read (the rule
    at `SETTLE_CAP_S`). `first_ms` is how long to watch for a first text change
    when nothing else is pending; None (after a load): not at all unless the
    text is changing, or the page has none yet (then until its first change)."""
    deadline = asyncio.get_running_loop().time() + cap_s
    try:
        async with asyncio.timeout_at(deadline):
            bare_chars = BARE_TEXT_CHARS if first_ms is None else 0
            state = await page.evaluate(_SETTLE_STATE_JS, [_SETTLE_KEY, bare_chars, SETTLE_QUIET_MS])
            wait_ms = first_ms
            if wait_ms is None and state["bare"]:
                wait_ms = int(cap_s * 1000)
            elif wait_ms is None and state["changing"]:
                wait_ms = 0  # due SETTLE_QUIET_MS after the last change
            while True:
                seen = requests.activity
                await requests.idle()
                if requests.activity != seen:
                    wait_ms = max(wait_ms or 0, SETTLE_GRACE_MS)
                if wait_ms is None:
                    return  # the text is there, not changing, and nothing in flight can change it
                seen = requests.activity
                await page.evaluate(_SETTLE_QUIET_JS, [_SETTLE_KEY, wait_ms, SETTLE_QUIET_MS])
                if requests.activity == seen:
                    return
                wait_ms = SETTLE_GRACE_MS  # requests started meanwhile: wait for them, then their handlers
    except TimeoutError:
        pass  # the cap: read the page as it is
    except PlaywrightError:
        # Navigated mid-wait (a redirect by script): read the new document once it is parsed.
        with suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout_at(deadline):
                await page.wait_for_load_state("domcontentloaded")


# Chromium's net error names, in words a user can act on.
_NET_ERRORS = {
    "ERR_CONNECTION_REFUSED": "connection refused (nothing is listening at that address)",
    "ERR_NAME_NOT_RESOLVED": "the host name could not be resolved",
    "ERR_INTERNET_DISCONNECTED": "no network connection",
    "ERR_CONNECTION_TIMED_OUT": "the connection timed out",
    "ERR_TIMED_OUT": "the connection timed out",
    "ERR_CONNECTION_RESET": "the connection was reset",
    "ERR_ADDRESS_UNREACHABLE": "the address is unreachable",
    "ERR_UNSAFE_PORT": "the browser refuses to connect to that port",
    "ERR_FILE_NOT_FOUND": "no such file",
    "ERR_TOO_MANY_REDIRECTS": "too many redirects",
    "ERR_SSL_PROTOCOL_ERROR": "TLS/SSL error",
}


def _describe_net_error(msg: str) -> str:
    """Turn Playwright's `Page.goto: net::ERR_X at URL` into `could not load the page: <words> (ERR_X).`"""
    for name, words in _NET_ERRORS.items():
        if f"net::{name}" in msg:
            return f"could not load the page: {words} ({name})."
    if "net::ERR_CERT" in msg:
        name = msg.split("net::", 1)[1].split()[0]
        return f"could not load the page: the site's certificate is not trusted ({name})."
    if "net::" in msg:
        name = msg.split("net::", 1)[1].split()[0]
        return f"could not load the page ({name})."
    return msg


def _strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def _refuse_popups(page: Page) -> None:
    """Chromium's pop-up blocker stops most pop-ups; one that gets through
    (opened while the page loads, say) is closed at once."""
    page.on("popup", _close_page)


def _not_root() -> bool:
    return not (hasattr(os, "geteuid") and os.geteuid() == 0)


def _port(endpoint: str) -> int | None:
    """The TCP port a CDP endpoint (http://HOST:PORT, ws://HOST:PORT/…) names, or its scheme implies."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(endpoint)
        return parts.port or {"http": 80, "ws": 80, "https": 443, "wss": 443}.get(parts.scheme)
    except ValueError:
        return None


async def _nothing_listening(endpoint: str) -> int | None:
    """The endpoint's port if its host refuses a connection to it (no Chrome
    there); None if something answers, or it cannot tell (Playwright then tries)."""
    from urllib.parse import urlsplit

    port, host = _port(endpoint), urlsplit(endpoint).hostname
    if port is None or not host:
        return None
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=5)
    except ConnectionRefusedError:
        return port
    except (OSError, TimeoutError):
        return None
    writer.close()
    return None


def _server_without_browser(exc: PlaywrightError) -> bool:
    """The browser server answered but could not launch a browser (`run-server`
    launches Playwright's own build on each connection, absent where only the
    system's Chromium is installed)."""
    text = str(exc)
    return "Executable doesn't exist" in text or "Failed to launch" in text


def _navigated_away(exc: PlaywrightError) -> bool:
    """Whether a read failed because its document was replaced (Playwright's words for it)."""
    text = str(exc)
    return "Execution context was destroyed" in text or "Cannot find context with specified id" in text


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


async def _close_page(page: Page) -> None:
    """Close `page`, for certain: sent again (at CLOSE_RETRY_S) if Chromium lost
    it. Cancelled, the caller stops waiting; the close goes on."""
    closing = asyncio.ensure_future(_close_quietly(page))
    for _ in range(CLOSE_TRIES):
        if (await asyncio.wait({closing}, timeout=CLOSE_RETRY_S))[0]:
            return
        with suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(CLOSE_RETRY_S):  # the page's own session: the browser's may not be ours to use
                session = await page.context.new_cdp_session(page)
                target = (await session.send("Target.getTargetInfo"))["targetInfo"]["targetId"]
                await session.send("Target.closeTarget", {"targetId": target})
    if not (await asyncio.wait({closing}, timeout=CLOSE_RETRY_S))[0]:
        log.warning("a tab did not close after %d tries: %s", CLOSE_TRIES, page.url)


async def _close_quietly(page: Page) -> None:
    try:
        await page.close()
    except PlaywrightError:
        pass
