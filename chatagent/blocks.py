"""A tab's context text as blocks, the passages an answer cites by id ("[1.4]":
tab 1, block 4), and how each block reads on the page.

A block is one line of the text the model is given: a paragraph, a list item,
a heading, or one table row (a row is what a question about a table is
answered by, and quoting a whole table would quote too much); or a run of
consecutive short lines (a listing's card: its name, price, colours), which
read together and cost an id each otherwise (an id is about five tokens, as
much as such a line). The budgeter's
markers (`markers.is_marker`), a table's rule ("|---|---|") and code fences
are not blocks: they are not page text. Blocks are numbered in the order of
the text, from the tab's `first_block` (1, or after the blocks of the tab's
earlier text when pass 2 re-reads it, so that an id names one passage in a
request), so the same text always gets the same ids: the page context stays
byte-identical from one question to the next for providers' prompt caches.

This module owns the split, the rendering of the ids (`render`) and what each
block quotes (`Block.quote`: page text as a person reads it, no Markdown, no
table pipes). A quote is text the reader finds on the page (`page_text`):
a block whose words are not all there as written (a hidden or collapsed part,
a thread extraction runs together) quotes the runs of them that are, and one
with none gives its line no id, so it cannot be cited (`cite`, which the
context keeps as `TabContext.off_page`). Standard library and small project
modules only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from .markers import is_marker
from .page_text import PageText
from .pdf import PAGE_MARK
from .rows import is_row, row_cells
from .tables import clean

if TYPE_CHECKING:
    from .context import TabContext

_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")  # "|---|:--:|"
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+)+")  # "## ## Specs": a heading inside a heading, one on the page
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_QUOTED = re.compile(r"^\s*>\s?")
CODE_SPAN = re.compile(r"(`+)(?=\S)(.+?)(?<=\S)\1")  # an inline code span: the page shows its text, not the backticks
PATH_SEPARATOR = " › "  # a heading path ("### Plans › Monthly"): only its last heading is on the page
# An id as an answer cites it: "[1.4]", a list of them "[1.4, 2.3]", or "[Tab 1.4]".
CITED = re.compile(r"\[(?:Tab\s*)?(\d+\.\d+(?:\s*[,;]\s*(?:Tab\s*)?\d+\.\d+)*)\]")
_ONE = re.compile(r"\d+\.\d+")
# A line of at most this many words continues a run of short lines, one block, up to
# RUN_WORDS words: a listing's card is one passage, cited by one id.
SHORT_WORDS = 6
RUN_WORDS = 40


@dataclass(frozen=True)
class Block:
    id: str  # "1.4"
    tab_id: str
    line: int  # its line in the tab's text
    text: str  # as the context writes it (Markdown): its first line
    repeated: int = 0  # a row's leading cells that repeat the row above's: a cell spanning rows, written in each
    # When its words are not all on the page as written: the runs of them that are, longest first.
    runs: tuple[str, ...] = ()
    # When its quote runs across the page's lines (a term and its value): its first line's part and its last's.
    ends: tuple[str, ...] = ()
    more: tuple[str, ...] = ()  # a run of short lines: the lines after its first, as the context writes them

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
    def written(self) -> str:
        """The block's words as extraction wrote them, its Markdown read: a row's cells
        side by side, a heading or list item without its mark, a PDF's passage without
        its page number, a code span's text as it is (never read as Markdown)."""
        if self.is_row:
            return " ".join(self.cells)
        return " ".join(_written(line) for line in (self.text, *self.more))

    @property
    def lines(self) -> tuple[str, ...]:
        """A run's lines' words, each as a block of its own would quote it; the block's, otherwise."""
        return tuple(_written(line) for line in (self.text, *self.more)) if self.more else (self.written,)

    @property
    def quote(self) -> str:
        """What the block quotes of the page: its words, or the longest run of them on the page."""
        return self.runs[0] if self.runs else self.written

    @property
    def quotes(self) -> tuple[str, ...]:
        """Every quote of the page the block holds: its words, or each run of them on the page."""
        return self.runs or (self.written,)

    @property
    def page(self) -> int | None:
        """A PDF's page number, when the block carries one."""
        m = PAGE_MARK.match(self.text)
        return int(m.group(1)) if m else None


def _written(line: str) -> str:
    text = _ITEM.sub("", _HEADING.sub("", _QUOTED.sub("", PAGE_MARK.sub("", line))))
    if PATH_SEPARATOR in text and _HEADING.match(line):
        text = text.rsplit(PATH_SEPARATOR, 1)[-1]
    return plain(text)


def plain(text: str) -> str:
    """`text` as a person reads it (`tables.clean`), its code spans' text kept as written:
    a command's "*" is no emphasis."""
    spans: list[str] = []

    def hold(m: re.Match[str]) -> str:
        spans.append(m.group(2))
        return f"{_HELD}{len(spans) - 1}{_HELD}"

    text = clean(CODE_SPAN.sub(hold, text))
    return " ".join(_HELD_SPAN.sub(lambda m: spans[int(m.group(1))], text).split()) if spans else text


_HELD = "\uE000"  # a private-use character: no page text, and no Markdown
_HELD_SPAN = re.compile(f"{_HELD}(\\d+){_HELD}")


def _cells(row: str) -> list[str]:
    return [plain(c) for c in row_cells(row)]


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


def _short(line: str) -> bool:
    """Whether `line` (a block's) may join a run of short lines: a few words of plain text,
    not a heading, list item, quote, table row or PDF passage, each of which the page
    marks as a passage of its own ("- Weight: 1.28 kg" is one fact of a list)."""
    s = line.lstrip()
    return (len(s.split()) <= SHORT_WORDS and not s.startswith(("#", ">")) and not is_row(s)
            and not _ITEM.match(s) and not PAGE_MARK.match(s))


def _lines(text: str, title: str) -> Iterator[tuple[int, str, tuple[str, ...] | None]]:
    """Each line of `text` with the short lines after it that its block takes in (a run),
    or None when it starts no block; the lines taken in are not given again."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        # The title the context puts first ("# Its title") is the tab's, not a passage of its page.
        if not _is_block(line) or (i == 0 and title and line.strip() == f"# {title}".strip()):
            yield i, line, None
            i += 1
            continue
        j, words = i + 1, len(line.split())
        if _short(line):
            while j < len(lines) and _is_block(lines[j]) and _short(lines[j]) and words + len(lines[j].split()) <= RUN_WORDS:
                words += len(lines[j].split())
                j += 1
        yield i, line, tuple(lines[i + 1:j])
        i = j


def _numbered(
    tab_id: str, text: str, first: int, title: str, off_page: Mapping[int, list[str]] | None = None,
    across: Mapping[int, list[str]] | None = None,
) -> Iterator[tuple[int, str, Block | None]]:
    """Each line of `text` with the block it starts, if any; a run's later lines start none."""
    n, above = first, []
    for i, line, more in _lines(text, title):
        if more is not None:
            cells = _cells(line) if is_row(line) else []
            runs = off_page.get(i) if off_page else None
            block = Block(f"{tab_id}.{n}", tab_id, i, line, _repeated(cells, above) if above else 0, tuple(runs or ()),
                          tuple(across.get(i) or ()) if across else (), more)
            above = cells
            if block.written and runs != []:  # []: none of its words is on the page as written
                n += 1
                yield i, line, block
                yield from ((i + k, m, None) for k, m in enumerate(more, 1))
                continue
        yield i, line, None
        yield from ((i + k, m, None) for k, m in enumerate(more or (), 1))


def split(tab: TabContext) -> list[Block]:
    """The tab's blocks, numbered from its `first_block`."""
    return split_text(tab.tab_id, tab.text, tab.first_block, tab.title, tab.off_page, tab.across)


def split_text(
    tab_id: str, text: str, first: int = 1, title: str = "", off_page: Mapping[int, list[str]] | None = None,
    across: Mapping[int, list[str]] | None = None,
) -> list[Block]:
    return [b for _, _, b in _numbered(tab_id, text, first, title, off_page, across) if b is not None]


def cite(
    tab_id: str, text: str, title: str, page: PageText | None,
) -> tuple[str, str, dict[int, list[str]], dict[int, list[str]]]:
    """`text` with its block ids (`render_text`), that text with an id on every block (as a
    fit charges them: the same unless a line lost its id), and how its blocks read on `page`: the
    lines whose words are not all on the page as written, each with the runs of them that
    are ([]: none, and the line is given no id); and the lines whose quote runs across the
    page's lines, each with where on the page it starts and ends (both {} when `page` is
    not known). One pass over the blocks, and a second only when a line loses its id."""
    numbered = list(_numbered(tab_id, text, 1, title))
    off: dict[int, list[str]] = {}
    across: dict[int, list[str]] = {}
    for _, _, b in numbered if page is not None else ():
        if b is None:
            continue
        quote = b.written
        if not page.has(quote):
            off[b.line] = runs = _runs(page, b)
            if not runs:
                continue
            quote = runs[0]
        if ends := page.ends(quote):
            across[b.line] = list(ends)
    every = _rendered(numbered)
    if any(not runs for runs in off.values()):  # the blocks after a line with no id are numbered anew
        return _rendered(_numbered(tab_id, text, 1, title, off)), every, off, across
    return every, every, off, across


def _rendered(numbered: Iterable[tuple[int, str, Block | None]]) -> str:
    return "\n".join(f"[{b.id}] {line}" if b else line for _, line, b in numbered)


def _runs(page: PageText, block: Block) -> list[str]:
    """The runs of `block`'s words on `page`, longest first; of a run of short lines whose
    lines the page does not show together, each line's: it is cited by any line the page shows."""
    if not block.more:
        return page.runs(block.written)
    return sorted((r for line in block.lines for r in page.runs(line)), key=lambda r: -len(r.split()))


def render_text(
    tab_id: str, text: str, first: int = 1, title: str = "", off_page: Mapping[int, list[str]] | None = None,
) -> str:
    """The text with each block led by its id: "[1.4] Battery life: 14 hours"."""
    return _rendered(_numbered(tab_id, text, first, title, off_page))


def render(tab: TabContext) -> str:
    kept = tab.kept_with_ids()  # as fitting the tab rendered it: not again while the first token waits
    return kept if kept is not None else render_text(tab.tab_id, tab.text, tab.first_block, tab.title, tab.off_page)


def next_block(tab: TabContext) -> int:
    """The number the tab's next text (a re-read) starts its blocks at."""
    ids = split(tab)
    return int(ids[-1].id.rsplit(".", 1)[1]) + 1 if ids else tab.first_block


def cited_ids(text: str) -> Iterator[tuple[str, int, int]]:
    """Every block id `text` cites, with the span of its brackets, in order."""
    for m in CITED.finditer(text):
        for one in _ONE.findall(m.group(1)):
            yield one, m.start(), m.end()
