"""PDF documents as text with page numbers, and their pages as images.

pypdfium2 (PDFium, Chromium's own PDF engine) reads the text layer: on the
WikiTableQuestions pages printed to PDF it reads the same text as pypdf, ten
times faster (docs/pdf.md). Pages are read one at a time, within a character
and a time bound, so a 2,000-page PDF costs what its first pages need.

The text is cut into passages of a few lines, each led by its page number
("[p. 3] …"): whichever passages the budgeter keeps, the model can cite the
page (`[Tab 1, p. 3]`). A PDF with no text layer (a scan) reads as no text
and a note; its pages can still be seen, rendered as images (`render_page`).
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pypdfium2 as pdfium

# The memory and time bounds of reading one PDF's text; what is beyond them is named in a note.
MAX_PDF_TEXT_CHARS = 4_000_000
MAX_PDF_READ_S = 20.0
# A page with fewer characters than this has no real text layer (a scan may carry a stray page number).
MIN_PAGE_CHARS = 20
# Lines per passage: a passage ends at a sentence end once it has this many words, and at twice as many anyway.
PASSAGE_WORDS = 45
RENDER_SCALE = 1.5  # 108 dpi: small print is legible in a screenshot
# How a passage names its page: "[p. 3] …" (see `as_text`).
PAGE_MARK = re.compile(r"^\[p\. (\d+)\] ")
_SENTENCE_END = re.compile(r"[.!?:;)\]\"”]$")
_WS = re.compile(r"[ \t\f\v]+")


class PdfError(Exception):
    """The bytes are not a PDF PDFium can open (damaged, or encrypted with a password)."""


@dataclass
class PdfText:
    pages: list[str] = field(default_factory=list)  # the text of each page read, in order
    page_count: int = 0
    title: str = ""

    @property
    def scanned(self) -> bool:
        """No page read has a text layer worth the name."""
        return bool(self.pages) and all(len(p.strip()) < MIN_PAGE_CHARS for p in self.pages)


def _open(data: bytes) -> pdfium.PdfDocument:
    import pypdfium2 as pdfium  # only a tab showing a PDF pays for loading PDFium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfError(str(exc)) from exc


def _page_text(doc: pdfium.PdfDocument, index: int) -> str:
    page = doc[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    # PDFium marks a hyphen at a line end with U+FFFE; the word goes on on the next line.
    text = text.replace("\ufffe\r\n", "-").replace("\ufffe", "-")
    lines = (_WS.sub(" ", line).strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def read_text(data: bytes, *, max_chars: int | None = None, max_seconds: float | None = None) -> PdfText:
    """Each page's text, from the first, until the document ends or a bound
    (by default MAX_PDF_TEXT_CHARS, MAX_PDF_READ_S) is reached."""
    max_chars = MAX_PDF_TEXT_CHARS if max_chars is None else max_chars
    max_seconds = MAX_PDF_READ_S if max_seconds is None else max_seconds
    doc = _open(data)
    try:
        out = PdfText(page_count=len(doc), title=(doc.get_metadata_value("Title") or "").strip())
        start, chars = time.monotonic(), 0
        for i in range(out.page_count):
            if chars >= max_chars or time.monotonic() - start > max_seconds:
                break
            text = _page_text(doc, i)
            out.pages.append(text)
            chars += len(text)
        return out
    finally:
        doc.close()


def passages(page: str) -> list[str]:
    """A page's lines grouped into passages of about PASSAGE_WORDS words, ending at sentence ends."""
    out: list[list[str]] = [[]]
    words = 0
    for line in page.splitlines():
        out[-1].append(line)
        words += len(line.split())
        if words >= 2 * PASSAGE_WORDS or (words >= PASSAGE_WORDS and _SENTENCE_END.search(line)):
            out.append([])
            words = 0
    return ["\n".join(p) for p in out if p]


def as_text(pdf: PdfText) -> str:
    """The pages read, as passages each led by its page number."""
    blocks = [f"[p. {n}] {p}" for n, page in enumerate(pdf.pages, 1) for p in passages(page)]
    return "\n\n".join(blocks)


def render_page(data: bytes, index: int, scale: float = RENDER_SCALE) -> bytes:
    """Page `index` (from 0) as a PNG."""
    doc = _open(data)
    try:
        page = doc[index]
        try:
            image = page.render(scale=scale).to_pil()
        finally:
            page.close()
    finally:
        doc.close()
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def page_count(data: bytes) -> int:
    doc = _open(data)
    try:
        return len(doc)
    finally:
        doc.close()


def page_text(data: bytes, index: int) -> str:
    doc = _open(data)
    try:
        return _page_text(doc, index)
    finally:
        doc.close()


def find_page(data: bytes, needle: str, start: int = 0) -> int | None:
    """The first page from `start` whose text holds `needle` (case and spacing aside)."""
    key = " ".join(needle.lower().split())
    doc = _open(data)
    try:
        for i in range(start, len(doc)):
            if key in " ".join(_page_text(doc, i).lower().split()):
                return i
        return None
    finally:
        doc.close()
