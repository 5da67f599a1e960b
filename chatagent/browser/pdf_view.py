"""A tab showing a PDF: its bytes, read by chatagent rather than by the page.

Chromium shows a PDF in its viewer, a plugin whose text no page script can
read and which headless Chromium does not scroll. So the document is fetched
once (in the tab's browser context: same cookies), extraction reads its text
(`chatagent.pdf`), and the browser tools work on pages: scrolling moves from
page to page and returns the page's text, and a screenshot is the current
page rendered by PDFium, which is how a scanned PDF can still be read. Each
of these runs in a PDF reader process (`chatagent.pdf_worker`), bounded in
time and memory and killed when the tool call is given up.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from playwright.async_api import BrowserContext, Error as PlaywrightError

from .. import pdf, pdf_worker
from ..errors import TabError, ToolError
from ..limits import MAX_PDF_FIND_PAGES
from .base import PageSnapshot, ScrollDirection, ScrollResult
from .localfiles import is_local

MAX_PDF_BYTES = 200_000_000  # a bound on memory: a PDF larger than this is not fetched
FETCH_TIMEOUT_S = 60.0


@dataclass
class PdfView:
    url: str  # the browser's URL of the document (fetched again only when the tab leaves it)
    data: bytes
    digest: str
    pages: int
    current: int = 0  # the page the tools are on, from 0

    @classmethod
    async def fetch(cls, context: BrowserContext, url: str, name: str) -> "PdfView":
        """The document at `url`: over HTTP in `context`, or, for a local file
        (a tab of the user's own browser showing one they had open), from disk."""
        data = await (asyncio.to_thread(_read_file, url, name) if is_local(url) else _download(context, url, name))
        try:
            pages = await pdf_worker.page_count(data)
        except pdf_worker.PdfLimitError as exc:
            raise TabError(f"{name} shows a PDF that cannot be read: {exc}.") from exc
        except pdf.PdfError as exc:
            raise TabError(f"{name} shows a PDF that cannot be read (damaged, or protected by a password): {exc}") from exc
        return cls(url=url, data=data, digest=hashlib.sha256(data).hexdigest(), pages=pages)

    def snapshot(self, tab_id: str, url: str, title: str, notes: list[str]) -> PageSnapshot:
        return PageSnapshot(tab_id=tab_id, url=url, title=title, notes=notes, pdf=self.data, pdf_digest=self.digest)

    async def screenshot(self) -> bytes:
        """The current page as a PNG, however large the page says it is."""
        try:
            return await pdf_worker.render_page(self.data, self.current)
        except pdf.PdfError as exc:
            raise ToolError(f"Page {self.current + 1} of the PDF could not be shown: {exc}.") from exc

    async def scroll(self, direction: ScrollDirection, to_text: str | None, label: str) -> ScrollResult:
        if to_text:
            try:
                found = await pdf_worker.find_page(self.data, to_text)
            except pdf.PdfError as exc:
                raise ToolError(f"Text {to_text!r} was not found on tab {label}: {exc}; scroll page by page "
                                "instead.") from exc
            if found is None:
                searched = min(self.pages, MAX_PDF_FIND_PAGES)
                where = "the PDF" if searched == self.pages else f"the first {searched:,} pages of the PDF"
                raise ToolError(f"Text {to_text!r} not found in {where} on tab {label}.")
            self.current = found
        elif self.pages == 0:
            raise ToolError(f"The PDF on tab {label} has no pages.")
        else:
            last = self.pages - 1
            self.current = {
                "down": min(self.current + 1, last),
                "up": max(self.current - 1, 0),
                "top": 0,
                "bottom": last,
            }[direction]
        try:
            text = await pdf_worker.page_text(self.data, self.current)
        except pdf.PdfError as exc:
            raise ToolError(f"Page {self.current + 1} of the PDF on tab {label} could not be read: {exc}.") from exc
        return ScrollResult(
            text=text,
            at_bottom=self.current == self.pages - 1,
            pdf_page=self.current + 1,
            pdf_pages=self.pages,
        )


def _too_large(name: str, size: int) -> TabError:
    return TabError(f"{name} is a PDF of {size / 1e6:.0f} MB; chatagent reads PDFs up to {MAX_PDF_BYTES / 1e6:.0f} MB.")


async def _download(context: BrowserContext, url: str, name: str) -> bytes:
    try:
        response = await context.request.get(url, timeout=FETCH_TIMEOUT_S * 1000, fail_on_status_code=True)
        size = int(response.headers.get("content-length") or 0)
        if size > MAX_PDF_BYTES:
            raise _too_large(name, size)
        data = await response.body()
    except PlaywrightError as exc:
        raise TabError(f"{name} shows a PDF that could not be fetched again to read it: {exc}") from exc
    if len(data) > MAX_PDF_BYTES:
        raise _too_large(name, len(data))
    return data


def _read_file(url: str, name: str) -> bytes:
    path = Path(url2pathname(unquote(urlsplit(url).path)))
    try:
        if path.stat().st_size > MAX_PDF_BYTES:
            raise _too_large(name, path.stat().st_size)
        return path.read_bytes()
    except OSError as exc:
        raise TabError(f"{name} shows a PDF file that could not be read: {exc}") from exc
