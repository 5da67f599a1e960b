"""The `Tab` interface every browser backend implements.

The Playwright backend drives a real Chromium; the extension bridge implements
the same interface over native messaging; `StaticTab` is the in-memory double.
"""

from __future__ import annotations

import abc
import asyncio
import hashlib
from typing import Literal

from pydantic import BaseModel, Field

from .slots import TabSlots, Waiting

ScrollDirection = Literal["up", "down", "top", "bottom"]


class PageSnapshot(BaseModel):
    """What a tab shows at one moment: the raw material for extraction."""

    tab_id: str
    url: str
    title: str = ""
    html: str = ""
    visible_text: str = ""
    # Whether `visible_text` is what a browser rendered (its innerText), which a citation's quote
    # must be found in; False where a tab with no renderer derived it from the HTML (`StaticTab`).
    rendered: bool = True
    notes: list[str] = Field(default_factory=list)
    # A tab showing a PDF: the document's bytes (read as text by extraction) and their SHA-256.
    pdf: bytes = b""
    pdf_digest: str = ""

    @property
    def content_hash(self) -> str:
        h = hashlib.sha256()
        digest = self.pdf_digest or (hashlib.sha256(self.pdf).hexdigest() if self.pdf else "")
        for part in (self.url, self.title, self.html, self.visible_text, digest):
            h.update(part.encode("utf-8", "replace"))
            h.update(b"\0")
        return h.hexdigest()


class ScrollResult(BaseModel):
    """Where a scroll left the viewport and the text now visible in it."""

    text: str
    scroll_y: int = 0
    page_height: int = 0
    viewport_height: int = 0
    at_bottom: bool = False
    pdf_page: int = 0  # a PDF: the page now shown (from 1), of `pdf_pages`
    pdf_pages: int = 0

    def describe(self) -> str:
        if self.pdf_pages:
            where = f"page {self.pdf_page} of {self.pdf_pages}"
        else:
            where = f"viewport at {self.scroll_y}px of {self.page_height}px"
        if self.at_bottom:
            where += " (the last page)" if self.pdf_pages else " (bottom of page)"
        return f"[{where}]\n{self.text}" if self.text else f"[{where}] (no text visible)"


class TabFailure(BaseModel):
    """A tab that could not be opened: reported, while the other tabs go on."""

    tab_id: str
    url: str
    code: str
    message: str
    label: str = ""  # what the conversation calls it (`labels.TabLabels`); its id until then

    def model_post_init(self, _context: object) -> None:
        self.label = self.label or self.tab_id


class Tab(abc.ABC):
    """One open page. Methods are async; backends serialise nothing themselves:
    the agent runs browser tools one at a time.

    `tab_id` is the backend's own id; `label` is what the user and the model
    call the tab ("Tab 2"), given by the conversation's `TabLabels` (the id
    until then). Backends word their messages with the label."""

    tab_id: str
    url: str = ""  # the page's address as the user named it, for messages ("" where a backend cannot say)
    _label: str | None = None
    _turn: asyncio.Lock | None = None

    @property
    def turn(self) -> asyncio.Lock:
        """Held while a browser tool runs on this tab: tools on one tab run one
        at a time, across questions and conversations (they share its scroll
        position and page state)."""
        if self._turn is None:
            self._turn = asyncio.Lock()
        return self._turn

    @property
    def label(self) -> str:
        return self._label or self.tab_id

    @label.setter
    def label(self, value: str) -> None:
        self._label = value

    @property
    def name(self) -> str:
        """How a message names the tab: "Tab 2" once a conversation has
        labelled it (its user and model see that number); before, "The tab"
        (MCP's read_pages and list_tabs, `chatagent context`: their reader
        knows the page by its address, and a backend's own counter means
        nothing to it). Not its address: a local file's name is not said."""
        return f"Tab {self._label}" if self._label else "The tab"

    @property
    def name_and_url(self) -> str:
        """The tab's name with its address: "Tab 2 (https://…)", "The page at https://…"."""
        if not self.url:
            return self.name
        return f"Tab {self._label} ({self.url})" if self._label else f"The page at {self.url}"

    @abc.abstractmethod
    async def snapshot(self) -> PageSnapshot:
        """Current url, title, html and rendered text."""

    @abc.abstractmethod
    async def screenshot(self) -> bytes:
        """PNG of the current viewport."""

    @abc.abstractmethod
    async def scroll(
        self, direction: ScrollDirection = "down", to_text: str | None = None
    ) -> ScrollResult:
        """Scroll by one viewport (or to the first occurrence of `to_text`)."""

    async def close(self) -> None:  # noqa: B027 - optional for backends
        """Release the tab; closing twice is harmless."""


class Browser(abc.ABC):
    """Opens tabs. `open_tabs` never raises for one bad URL: it returns a
    `TabFailure` in that slot instead."""

    @abc.abstractmethod
    async def open_tabs(
        self, targets: list[str], *, timeout_s: float | None = None, slots: TabSlots | None = None,
        waiting: Waiting | None = None,
    ) -> list[Tab | TabFailure]:
        """`slots`: a bound on tabs open at once that these count against
        (`chatagent.browser.slots`); `waiting` is told while the call waits its turn."""

    async def existing_tabs(self) -> list[Tab]:
        """The tabs already open in the browser (attached to the user's own
        browser: their tabs); none for a browser started empty."""
        return []

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> "Browser":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
