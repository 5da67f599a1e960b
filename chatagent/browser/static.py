"""In-memory `Tab` double: HTML given up front, no renderer.

Used where no browser is wanted (unit tests, the benchmark's raw-HTML baselines).
Scrolling walks the visible text in fixed windows; screenshots are unavailable.
"""

from __future__ import annotations

import lxml.html

from ..errors import ToolError
from .base import PageSnapshot, ScrollDirection, ScrollResult, Tab

_WINDOW_CHARS = 2000


def html_to_text(html: str) -> str:
    if not html.strip():
        return ""
    try:
        doc = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return ""
    for bad in doc.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    return "\n".join(line.strip() for line in doc.text_content().splitlines() if line.strip())


class StaticTab(Tab):
    def __init__(self, tab_id: str, url: str, html: str, title: str = "", visible_text: str | None = None) -> None:
        self.tab_id = tab_id
        self.url = url
        self.html = html
        self.title = title
        self.visible_text = html_to_text(html) if visible_text is None else visible_text
        self._rendered = visible_text is not None  # else no browser's: the HTML's text, about
        self._offset = 0

    async def snapshot(self) -> PageSnapshot:
        return PageSnapshot(
            tab_id=self.tab_id, url=self.url, title=self.title, html=self.html, visible_text=self.visible_text,
            rendered=self._rendered,
        )

    async def screenshot(self) -> bytes:
        raise ToolError(f"Tab {self.label} has no renderer; screenshots are unavailable.")

    async def scroll(self, direction: ScrollDirection = "down", to_text: str | None = None) -> ScrollResult:
        text = self.visible_text
        if to_text:
            pos = text.lower().find(to_text.lower())
            if pos < 0:
                raise ToolError(f"Text {to_text!r} not found on tab {self.tab_id}.")
            self._offset = max(pos - _WINDOW_CHARS // 2, 0)
        elif direction == "down":
            self._offset = min(self._offset + _WINDOW_CHARS, max(len(text) - _WINDOW_CHARS, 0))
        elif direction == "up":
            self._offset = max(self._offset - _WINDOW_CHARS, 0)
        elif direction == "top":
            self._offset = 0
        else:
            self._offset = max(len(text) - _WINDOW_CHARS, 0)
        window = text[self._offset : self._offset + _WINDOW_CHARS]
        return ScrollResult(
            text=window,
            scroll_y=self._offset,
            page_height=len(text),
            viewport_height=_WINDOW_CHARS,
            at_bottom=self._offset + _WINDOW_CHARS >= len(text),
        )
