"""HTML tables as full grids, before extraction writes them out as rows.

A cell spanning several rows ("2008" beside each of that year's awards) is
written once by a page but belongs to every row it spans; a header cell
spanning columns ("Pinnacle height" over "ft | m") names each of them.
Written out as text rows, a span leaves the rows below it a cell short, so
their values slide under the wrong columns. Here each spanning cell is
repeated where it spans: a row-spanning cell in every row it covers, a header
cell in every column it covers, and a data cell spanning columns is followed
by empty cells, so every row has each of its cells in its column.
"""

from __future__ import annotations

from copy import deepcopy
from itertools import islice

from lxml import etree

MAX_SPAN = 64  # a span beyond this is a page's mistake (or "colspan=1000"): capped
# Places one spanning cell may fill at most (rows × columns): a 64 × 64 span is a layout, not a value.
MAX_SPAN_CELLS = 1024
# Cells added per page at most (repeated or empty, in rows kept or not); past this the rows left keep their spans.
MAX_ADDED = 100_000
# A cell is repeated only when it is small, a value: not prose or a nested table, whose copies would
# multiply a page's text (64 × per level of nesting). A larger one leaves the places it spans empty.
MAX_REPEATED_CHARS = 300
MAX_REPEATED_ELEMENTS = 16
# Text one spanning cell adds in all, and all of a page's spans: past either, the places left are empty.
MAX_SPAN_CHARS = 5_000
MAX_ADDED_CHARS = 1_000_000
_CELLS = ("td", "th")
ROWS = etree.XPath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")  # a table's own rows, not those of a table inside it


def _span(cell: etree._Element, attr: str) -> int:
    try:
        return max(1, min(int(cell.get(attr, "1").strip() or 1), MAX_SPAN))
    except ValueError:
        return 1


def _small_text(cell: etree._Element) -> int | None:
    """The characters of `cell`'s text if it is worth repeating (a few elements, a little text, no
    table), else None. Looks at no more than that, whatever the cell holds."""
    chars = 0
    for n, el in enumerate(islice(cell.iter(), MAX_REPEATED_ELEMENTS + 1)):
        if n == MAX_REPEATED_ELEMENTS or el.tag == "table":
            return None
        chars += len(el.text or "") + (len(el.tail or "") if n else 0)
        if chars > MAX_REPEATED_CHARS:
            return None
    return chars


def _text(cell: etree._Element) -> bool:
    return any(t.strip() for t in cell.itertext())


class _Page:
    """What filling a page's spans has cost so far."""

    def __init__(self) -> None:
        self.added = 0  # cells made
        self.chars = 0  # text in the copies
        self._empty: dict[str, _Twin] = {}

    def empty(self, tag: str) -> _Twin:
        """Empty cells of `tag` to fill places with."""
        if tag not in self._empty:
            self._empty[tag] = _Twin(etree.Element(tag), self)
        return self._empty[tag]


class _Twin:
    """What a spanning cell leaves in the places it spans: copies of itself while it is small and
    its text within MAX_SPAN_CHARS (the page's within MAX_ADDED_CHARS), else empty cells."""

    def __init__(self, cell: etree._Element, page: _Page) -> None:
        self.tag, self.page = cell.tag, page
        self.chars = _small_text(cell)
        self.left = MAX_SPAN_CHARS
        self.cell: etree._Element | None = None
        if self.chars is not None:
            self.cell = deepcopy(cell)
            self.cell.tail = None
            for attr in ("rowspan", "colspan", "id"):
                self.cell.attrib.pop(attr, None)

    def place(self) -> etree._Element:
        self.page.added += 1
        chars = self.chars or 0
        if self.cell is None or chars > self.left or self.page.chars + chars > MAX_ADDED_CHARS:
            return etree.Element(self.tag)
        self.left -= chars
        self.page.chars += chars
        return deepcopy(self.cell)


def _carry(out: list[etree._Element], below: dict[int, tuple[_Twin, int]]) -> None:
    """Add to row `out` the cells of the rows above that span into its next columns."""
    while (col := len(out)) in below:
        twin, left = below.pop(col)
        out.append(twin.place())
        if left > 1:
            below[col] = (twin, left - 1)


def fill_spans(doc: etree._Element) -> int:
    """Repeat every spanning cell of `doc`'s tables where it spans, in place, up to MAX_ADDED
    cells; the number of cells added. Linear in the page: a cell fills at most MAX_SPAN_CELLS
    places, each with a small copy of it at most, MAX_SPAN_CHARS of them in all."""
    page = _Page()
    for table in list(doc.iter("table")):  # the tables as the page wrote them: copies hold none
        rows = ROWS(table)
        if not any(c.get("rowspan") or c.get("colspan") for tr in rows for c in tr if c.tag in _CELLS):
            continue
        below: dict[int, tuple[_Twin, int]] = {}  # column → (what to repeat there, rows left)
        empty = page.empty("td")
        for tr in rows:
            if page.added >= MAX_ADDED:
                return page.added
            cells = [c for c in tr if c.tag in _CELLS]
            out: list[etree._Element] = []
            # A header cell repeated across its columns names each; a lone cell spanning the row is a title.
            several = len(cells) > 1
            for cell in cells:
                _carry(out, below)
                cols_spanned = _span(cell, "colspan")
                rows_spanned = min(_span(cell, "rowspan"), max(1, MAX_SPAN_CELLS // cols_spanned))
                for attr in ("rowspan", "colspan"):
                    cell.attrib.pop(attr, None)
                if rows_spanned == cols_spanned == 1:
                    out.append(cell)
                    continue
                twin = _Twin(cell, page)
                # A data cell spanning columns is followed by empty ones: its value is one, not several.
                across = twin if cell.tag == "th" and several else page.empty(cell.tag)
                for k in range(cols_spanned):
                    out.append(cell if k == 0 else across.place())
                    if rows_spanned > 1:
                        below[len(out) - 1] = (twin if k == 0 else across, rows_spanned - 1)
            _carry(out, below)
            end = max(below, default=-1)  # a row ending before a span further right: filled up to it
            while len(out) <= end:
                out.append(empty.place())
                _carry(out, below)
            if not any(_text(c) for c in cells):
                continue  # nothing of its own (a bracket's spacer row): repeating the row above adds nothing
            if len(out) != len(cells):
                for c in cells:
                    tr.remove(c)
                tr.extend(out)
    return page.added
