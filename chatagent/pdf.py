"""PDF documents as text with page numbers, and their pages as images.

pypdfium2 (PDFium, Chromium's own PDF engine) reads the text layer: on the
WikiTableQuestions pages printed to PDF it reads the same text as pypdf,
about 17 times faster (docs/pdf.md). This module is PDFium's side: it runs in
the child process `pdf_worker` starts, where a page that costs too much time or
memory can be stopped; callers use `pdf_worker`.

The text is cut into passages of a few lines, each led by its page number
("[p. 3] …"): whichever passages the budgeter keeps, the model can cite the
page (`[Tab 1, p. 3]`). Lines in a clearly larger font become headings, so
the budgeter sees sections as it does in a web page. A PDF with no text layer (a scan) reads as no text
and a note; its pages can still be seen, rendered as images (`render_page`).
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pypdfium2 as pdfium

from .limits import MAX_RENDER_PIXELS, MAX_RENDER_SIDE

# A bound on the memory of one PDF's text; what is beyond it is named in a note.
MAX_PDF_TEXT_CHARS = 4_000_000
# A page with fewer characters than this has no real text layer (a scan may carry a stray page number).
MIN_PAGE_CHARS = 20
# Lines per passage: a passage ends at a sentence end once it has this many words, and at twice as many anyway.
PASSAGE_WORDS = 45
# A line at least this much larger than the body text, and no longer than this, is a heading.
HEADING_RATIO = 1.15
HEADING_MAX_CHARS = 120
RENDER_SCALE = 1.5  # 108 dpi: small print is legible in a screenshot
# How a passage names its page: "[p. 3] …" (see `as_text`).
PAGE_MARK = re.compile(r"^\[p\. (\d+)\] ")
_SENTENCE_END = re.compile(r"[.!?:;)\]\"”]$")
_DASH_END = re.compile(r"(?<=\w)[-\u2010-\u2015]$")
_WORD = re.compile(r"\w")
_WS = re.compile(r"[ \t\f\v]+")


class PdfError(Exception):
    """The bytes are not a PDF PDFium can open (damaged, or encrypted with a password)."""


@dataclass(frozen=True)
class Line:
    text: str
    size: float  # its font size in points (the smallest of a few of its characters)


@dataclass
class PdfText:
    lines: list[list[Line]] = field(default_factory=list)  # the lines of each page read, in order
    page_count: int = 0
    title: str = ""
    notes: list[str] = field(default_factory=list)  # what the bounds left out (`pdf_worker`)
    left_out: set[int] = field(default_factory=set)  # pages (from 0) given up at a bound: their lines are empty

    @property
    def pages(self) -> list[str]:
        return ["\n".join(line.text for line in page) for page in self.lines]

    @property
    def scanned(self) -> bool:
        """No page read has a text layer worth the name (a page given up is not one read)."""
        read = [p for i, p in enumerate(self.pages) if i not in self.left_out]
        return bool(read) and all(len(p.strip()) < MIN_PAGE_CHARS for p in read)

    @cached_property
    def body_size(self) -> float:
        """The font size most of the text is in."""
        sizes: Counter[float] = Counter()
        for page in self.lines:
            for line in page:
                sizes[line.size] += len(line.text)
        return sizes.most_common(1)[0][0] if sizes else 0.0

    def is_heading(self, line: Line) -> bool:
        # A short line in a clearly larger font: the budgeter then sees sections, as it does in HTML.
        body = self.body_size
        return body > 0 and line.size >= HEADING_RATIO * body and len(line.text) <= HEADING_MAX_CHARS and bool(_WORD.search(line.text))


def open_doc(data: bytes) -> pdfium.PdfDocument:
    import pypdfium2 as pdfium  # only a tab showing a PDF pays for loading PDFium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfError(str(exc)) from exc


def page_lines(doc: pdfium.PdfDocument, index: int) -> list[Line]:
    import pypdfium2.raw as raw

    page = doc[index]
    try:
        textpage = page.get_textpage()
        try:
            lines: list[Line] = []
            pos = 0
            for line in textpage.get_text_range().split("\r\n"):
                start, pos = pos, pos + len(line) + 2
                # PDFium writes a hyphen at a line end as U+FFFE.
                text = _WS.sub(" ", line.replace("\ufffe", "-")).strip()
                if not text:
                    continue
                probes = [i for i in (0, len(line) // 2, len(line) - 1) if line[i].strip()]
                size = min((raw.FPDFText_GetFontSize(textpage, start + i) for i in probes), default=0.0)
                lines.append(Line(text, round(size, 1)))
        finally:
            textpage.close()
    finally:
        page.close()
    return _joined(lines)


def _joined(lines: list[Line]) -> list[Line]:
    """A line ending in a dash goes on with the next ("2001–" and "02" are "2001–02")."""
    out: list[Line] = []
    for line in lines:
        if out and _DASH_END.search(out[-1].text) and line.text[:1].isalnum():
            out[-1] = Line(out[-1].text + line.text, min(out[-1].size, line.size))
        else:
            out.append(line)
    return out


def passages(doc: PdfText, page: list[Line]) -> list[tuple[bool, str]]:
    """A page's lines as (heading?, text): headings alone, the rest in passages
    of about PASSAGE_WORDS words, ending at sentence ends."""
    out: list[tuple[bool, list[str]]] = [(False, [])]
    words = 0
    heading_size = 0.0  # of the heading just read: a heading wrapped over two lines is one
    for line in page:
        if doc.is_heading(line):
            if heading_size == line.size and not out[-1][1]:
                out[-2][1].append(line.text)
            else:
                out += [(True, [line.text]), (False, [])]
            heading_size, words = line.size, 0
            continue
        heading_size = 0.0
        out[-1][1].append(line.text)
        words += len(line.text.split())
        if words >= 2 * PASSAGE_WORDS or (words >= PASSAGE_WORDS and _SENTENCE_END.search(line.text)):
            out.append((False, []))
            words = 0
    return [(heading, (" " if heading else "\n").join(lines)) for heading, lines in out if lines]


def as_text(doc: PdfText) -> str:
    """The pages read: headings as Markdown headings, the rest as passages each led by its page number."""
    blocks = [
        f"## {text}" if heading else f"[p. {n}] {text}"
        for n, page in enumerate(doc.lines, 1)
        for heading, text in passages(doc, page)
    ]
    return "\n\n".join(blocks)


def render_scale(width: float, height: float, scale: float = RENDER_SCALE) -> float:
    """`scale` (pixels per point), or less for a page whose raster would pass
    MAX_RENDER_PIXELS or MAX_RENDER_SIDE: a page's size in points is the PDF's to say."""
    width, height = max(width, 1.0), max(height, 1.0)
    return min(scale, MAX_RENDER_SIDE / max(width, height), math.sqrt(MAX_RENDER_PIXELS / (width * height)))


def render_page(doc: pdfium.PdfDocument, index: int) -> bytes:
    """Page `index` (from 0) as a PNG, within MAX_RENDER_PIXELS."""
    page = doc[index]
    try:
        image = page.render(scale=render_scale(*page.get_size())).to_pil()
    finally:
        page.close()
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def page_text(doc: pdfium.PdfDocument, index: int) -> str:
    return "\n".join(line.text for line in page_lines(doc, index))


def find_page(doc: pdfium.PdfDocument, needle: str, start: int = 0, max_pages: int | None = None) -> int | None:
    """The first page from `start` (of the next `max_pages`) whose text holds `needle` (case and spacing aside)."""
    key = " ".join(needle.lower().split())
    end = len(doc) if max_pages is None else min(len(doc), start + max_pages)
    for i in range(start, end):
        if key in " ".join(page_text(doc, i).lower().split()):
            return i
    return None
