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

from lxml import etree

MAX_SPAN = 64  # a span beyond this is a page's mistake (or "colspan=1000"): capped
# Cells added per page at most: spans can ask for rows × 64 copies; past this the rows left keep their spans.
MAX_ADDED = 100_000
_CELLS = ("td", "th")
ROWS = etree.XPath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")  # a table's own rows, not those of a table inside it


def _span(cell: etree._Element, attr: str) -> int:
    try:
        return max(1, min(int(cell.get(attr, "1").strip() or 1), MAX_SPAN))
    except ValueError:
        return 1


def _copy(cell: etree._Element) -> etree._Element:
    twin = deepcopy(cell)
    twin.tail = None
    for attr in ("rowspan", "colspan", "id"):
        twin.attrib.pop(attr, None)
    return twin


def _text(cell: etree._Element) -> bool:
    return bool("".join(cell.itertext()).strip())


def _carry(out: list[etree._Element], below: dict[int, tuple[etree._Element, int]]) -> None:
    """Add to row `out` the cells of the rows above that span into its next columns."""
    while (col := len(out)) in below:
        cell, left = below.pop(col)
        out.append(_copy(cell))
        if left > 1:
            below[col] = (cell, left - 1)


def fill_spans(doc: etree._Element) -> int:
    """Repeat every spanning cell of `doc`'s tables where it spans, in place, up to MAX_ADDED
    cells; the number of cells added."""
    added = 0
    for table in doc.iter("table"):
        rows = ROWS(table)
        if not any(c.get("rowspan") or c.get("colspan") for tr in rows for c in tr if c.tag in _CELLS):
            continue
        below: dict[int, tuple[etree._Element, int]] = {}  # column → (cell to repeat there, rows left)
        for tr in rows:
            if added >= MAX_ADDED:
                return added
            cells = [c for c in tr if c.tag in _CELLS]
            out: list[etree._Element] = []
            # A header cell repeated across its columns names each; a lone cell spanning the row is a title.
            several = len(cells) > 1
            for cell in cells:
                _carry(out, below)
                rows_spanned, cols_spanned = _span(cell, "rowspan"), _span(cell, "colspan")
                for attr in ("rowspan", "colspan"):
                    cell.attrib.pop(attr, None)
                for k in range(cols_spanned):
                    if k == 0:
                        out.append(cell)
                    else:
                        out.append(_copy(cell) if cell.tag == "th" and several else etree.Element(cell.tag))
                    if rows_spanned > 1:
                        below[len(out) - 1] = (out[-1], rows_spanned - 1)
            _carry(out, below)
            while below and max(below) >= len(out):  # a row ending before a span further right
                out.append(etree.Element("td"))
                _carry(out, below)
            if not any(_text(c) for c in cells):
                continue  # nothing of its own (a bracket's spacer row): repeating the row above adds nothing
            if len(out) != len(cells):
                added += len(out) - len(cells)
                for c in cells:
                    tr.remove(c)
                tr.extend(out)
    return added
