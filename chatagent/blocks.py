"""A tab's context text as blocks, the passages an answer cites by id ("[1.4]":
tab 1, block 4), and how each block reads on the page.

A block is one line of the text the model is given: a paragraph, a list item,
a heading, or one table row (a row is what a question about a table is
answered by, and quoting a whole table would quote too much). The budgeter's
markers (`markers.is_marker`), a table's rule ("|---|---|") and code fences
are not blocks: they are not page text. Blocks are numbered in the order of
the text, from the tab's `first_block` (1, or after the blocks of the tab's
earlier text when pass 2 re-reads it, so that an id names one passage in a
request), so the same text always gets the same ids: the page context stays
byte-identical from one question to the next for providers' prompt caches.

This module owns the split, the rendering of the ids (`render`) and what each
block quotes (`Block.quote`: page text as a person reads it, no Markdown, no
table pipes). Standard library and small project modules only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from .markers import is_marker
from .pdf import PAGE_MARK
from .rows import is_row, row_cells
from .tables import clean

if TYPE_CHECKING:
    from .context import TabContext

_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")  # "|---|:--:|"
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_QUOTED = re.compile(r"^\s*>\s?")
CODE_SPAN = re.compile(r"(`+)(?=\S)(.+?)(?<=\S)\1")  # an inline code span: the page shows its text, not the backticks
PATH_SEPARATOR = " › "  # a heading path ("### Plans › Monthly"): only its last heading is on the page
# An id as an answer cites it: "[1.4]", a list of them "[1.4, 2.3]", or "[Tab 1.4]".
CITED = re.compile(r"\[(?:Tab\s*)?(\d+\.\d+(?:\s*[,;]\s*(?:Tab\s*)?\d+\.\d+)*)\]")
_ONE = re.compile(r"\d+\.\d+")


@dataclass(frozen=True)
class Block:
    id: str  # "1.4"
    tab_id: str
    line: int  # its line in the tab's text
    text: str  # as the context writes it (Markdown)
    repeated: int = 0  # a row's leading cells that repeat the row above's: a cell spanning rows, written in each

    @property
    def is_row(self) -> bool:
        return is_row(self.text)

    @cached_property
    def cells(self) -> list[str]:
        """A row's cells as the page shows them, empty ones left out; [] for other blocks."""
        if not self.is_row:
            return []
        cells = _cells(self.text)[self.repeated:]
        # A cell spanning columns is written once per column it spans: the page shows it once.
        return [c for i, c in enumerate(cells) if c and (i == 0 or c != cells[i - 1])]

    @cached_property
    def quote(self) -> str:
        """The block's words as the page shows them: a row's cells side by side, a
        heading or list item without its mark, a PDF's passage without its page number."""
        if self.is_row:
            return " ".join(self.cells)
        text = CODE_SPAN.sub(r"\2", _ITEM.sub("", _HEADING.sub("", _QUOTED.sub("", PAGE_MARK.sub("", self.text)))))
        if PATH_SEPARATOR in text and _HEADING.match(self.text):
            text = text.rsplit(PATH_SEPARATOR, 1)[-1]
        return clean(text)

    @property
    def page(self) -> int | None:
        """A PDF's page number, when the block carries one."""
        m = PAGE_MARK.match(self.text)
        return int(m.group(1)) if m else None


def _cells(row: str) -> list[str]:
    return [clean(CODE_SPAN.sub(r"\2", c)) for c in row_cells(row)]


def _repeated(cells: list[str], above: list[str]) -> int:
    """How many leading cells of a row repeat the row above's (a category cell spanning
    rows): the page shows them once, so the row's quote starts after them."""
    n = 0
    while n < min(len(cells), len(above)) - 1 and cells[n] and cells[n] == above[n]:
        n += 1
    return n if any(cells[n:]) else 0


def _is_block(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("```") and not is_marker(s) and not (is_row(s) and _RULE.match(s))


def _numbered(tab_id: str, text: str, first: int, title: str) -> Iterator[tuple[int, str, Block | None]]:
    n, above = first, []
    for i, line in enumerate(text.split("\n")):
        # The title the context puts first ("# Its title") is the tab's, not a passage of its page.
        if _is_block(line) and not (i == 0 and title and line.strip() == f"# {title}".strip()):
            cells = _cells(line) if is_row(line) else []
            block = Block(f"{tab_id}.{n}", tab_id, i, line, _repeated(cells, above) if above else 0)
            above = cells
            if block.quote:
                n += 1
                yield i, line, block
                continue
        yield i, line, None


def split(tab: TabContext) -> list[Block]:
    """The tab's blocks, numbered from its `first_block`."""
    return split_text(tab.tab_id, tab.text, tab.first_block, tab.title)


def split_text(tab_id: str, text: str, first: int = 1, title: str = "") -> list[Block]:
    return [b for _, _, b in _numbered(tab_id, text, first, title) if b is not None]


def render_text(tab_id: str, text: str, first: int = 1, title: str = "") -> str:
    """The text with each block led by its id: "[1.4] Battery life: 14 hours"."""
    return "\n".join(f"[{b.id}] {line}" if b else line for _, line, b in _numbered(tab_id, text, first, title))


def render(tab: TabContext) -> str:
    return render_text(tab.tab_id, tab.text, tab.first_block, tab.title)


def next_block(tab: TabContext) -> int:
    """The number the tab's next text (a re-read) starts its blocks at."""
    ids = split(tab)
    return int(ids[-1].id.rsplit(".", 1)[1]) + 1 if ids else tab.first_block


def cited_ids(text: str) -> Iterator[tuple[str, int, int]]:
    """Every block id `text` cites, with the span of its brackets, in order."""
    for m in CITED.finditer(text):
        for one in _ONE.findall(m.group(1)):
            yield one, m.start(), m.end()
