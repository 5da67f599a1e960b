"""`BridgeTab`: a `Tab` living in the user's own browser, driven over native
messaging. Its first snapshot is what the extension sent with the ask (no
round trip); later snapshots, scrolls and screenshots are `tool_request`s.

Each ask has its own `BridgeTab`s, but they all share the host's one
`ToolRequester`, which runs the requests for a Chrome tab one at a time
across asks and hands back only results with the fields their tool needs."""

from __future__ import annotations

import logging

from chatagent.browser.base import PageSnapshot, ScrollDirection, ScrollResult, Tab
from chatagent.errors import ToolError

from .messages import AskMessage, AskTab, ToolName, ToolResultMessage
from .requests import ToolRequester

log = logging.getLogger(__name__)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class BridgeTab(Tab):
    def __init__(
        self,
        requester: ToolRequester,
        request_id: str,
        chrome_tab_id: int,
        url: str,
        title: str = "",
        html: str = "",
        text: str | None = None,
        *,
        tab_id: str | None = None,
        timeout_s: float | None = None,
    ) -> None:
        # The agent's tab id is the Chrome tab id as a string, so the side panel
        # can map events (citations, screenshots) back to its tabs directly.
        self.tab_id = tab_id if tab_id is not None else str(chrome_tab_id)
        self.chrome_tab_id = chrome_tab_id
        self.request_id = request_id
        self.url = url
        self.title = title
        self._requester = requester
        self._timeout_s = timeout_s
        # Served once by snapshot(); afterwards the page may have changed.
        self._initial: PageSnapshot | None = (
            PageSnapshot(tab_id=self.tab_id, url=url, title=title, html=html, visible_text=text or "") if html else None
        )
        self.closed = False

    @classmethod
    def from_ask_tab(
        cls, requester: ToolRequester, request_id: str, tab: AskTab, *, timeout_s: float | None = None
    ) -> BridgeTab:
        return cls(requester, request_id, tab.tab_id, tab.url, tab.title, tab.html, tab.text, timeout_s=timeout_s)

    def _describe(self, what: str) -> str:
        return f"{what} of tab {self.label}"

    async def _call(self, name: ToolName, args: dict[str, object], what: str) -> ToolResultMessage:
        if self.closed:
            raise ToolError(f"Tab {self.label} is closed.")
        return await self._requester.request(
            self.request_id,
            self.chrome_tab_id,
            name,
            args,
            timeout_s=self._timeout_s,
            label=self._describe(what),
        )

    async def snapshot(self) -> PageSnapshot:
        if self._initial is not None:
            snap, self._initial = self._initial, None
            return snap
        res = await self._call("snapshot", {}, "Reading")
        if res.url:
            self.url = res.url
        if res.title is not None:
            self.title = res.title
        return PageSnapshot(
            tab_id=self.tab_id, url=self.url, title=self.title, html=res.html or "", visible_text=res.text or ""
        )

    async def screenshot(self) -> bytes:
        res = await self._call("screenshot", {}, "Screenshot")
        if not res.png:
            raise ToolError(f"Screenshot of tab {self.label} failed: the extension sent no image.")
        data = res.png_bytes()
        if not data.startswith(PNG_SIGNATURE):
            raise ToolError(f"Screenshot of tab {self.label} failed: the extension sent something that is not a PNG.")
        return data

    async def scroll(self, direction: ScrollDirection = "down", to_text: str | None = None) -> ScrollResult:
        args: dict[str, object] = {"direction": direction}
        if to_text:
            args["toText"] = to_text
        res = await self._call("scroll", args, "Scrolling")
        # The page may have lazy-loaded more: the next snapshot must be fresh.
        self._initial = None
        info = res.scroll
        return ScrollResult(
            text=res.text or "",
            scroll_y=int(info.scroll_y) if info else 0,
            page_height=int(info.page_height) if info else 0,
            viewport_height=int(info.viewport_height) if info else 0,
            at_bottom=info.at_bottom if info else False,
        )

    async def close(self) -> None:
        # The tab belongs to the user: "closing" only stops us using it.
        self.closed = True


def tabs_from_ask(ask: AskMessage, requester: ToolRequester, *, timeout_s: float | None = None) -> list[BridgeTab]:
    """One `BridgeTab` per tab of an ask, in the ask's order."""
    return [BridgeTab.from_ask_tab(requester, ask.id, t, timeout_s=timeout_s) for t in ask.tabs]
