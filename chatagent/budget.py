"""Token budgets: split a total across tabs, then fit each tab's text into its share.

Two ways to fit a text that is too long:
- no question: keep the head, cut at a paragraph or sentence boundary;
- with a question: keep the page head, the best-matching tables whole when they
  fit, and the chunks that BM25 ranks highest against the question, in document
  order, with a marker for every gap.
  A chunk's score mixes its own BM25 score with that of its block (the table
  or section it belongs to), so the rows of the table a question is about win
  over stray matches elsewhere; table rows are ranked and shown with their
  table's header (and caption), so a row group out of context still reads.
  Aggregate questions ("how many…", "which … most", "the first…") need every
  row, which is why whole tables come first. The best table too big to keep
  whole is shown with fewer columns when that fits: every row, but only its
  first column (what names a row) and the columns the question matches by
  name or by a cell, under a marker naming them; the row groups that match
  best are then shown whole again as room allows. Failing that it keeps its
  first and last rows (where the first, the last and the totals are).
  Whatever room is left is filled row by row.
  When those best-matching tables are all on show whole, with the page head,
  in three quarters of the budget, the tab takes only those three quarters
  (a page that fits the budget included): the answer is in them or nowhere
  near the question's words, and the last quarter would go to rows that only
  share a word with it.
Every marker says how much was left out, so neither the model nor the user
mistakes a partial page for a whole one (`markers.py` writes them and, for
whoever reads the text back, recognises them); a part kept after a gap is shown
under its heading path ("###### Specifications › Battery") when its own
heading was left out, so the model knows where on the page it sits.

A paragraph is cut into lines and sentences; a piece still longer than two
chunks (a page on one line, a sentence with no end) into windows of about a
chunk, cut at spaces, so that what matches the question in it is kept with
what is around it rather than the whole piece dropped.

A page's analysis (units, chunks, BM25 indexes) does not depend on the
question: a `TextFitter` (one per `ContextBuilder`) keeps it for the last few
texts, so a follow-up question on the same tab only scores and assembles.
`fit_text` is the same without the cache. The indexes are `ranking.Ranker`s
made by the factory given (BM25 by default) over `ANALYSER`'s terms. Beside
them, the prose chunks' meaning (`ranking.Meaning`, static word vectors) adds
SEMANTIC_WEIGHT × its cosine with the question, so that a question in other
words than the page's still reaches the passage it paraphrases. Only where no
table matches the question's words: there the question is a lookup, and its
words find the row. What decides structure (whether a block or table matches,
which of its columns are kept) is lexical alone, since every passage shares
some meaning with any question.

A very long text (over LONG_TEXT_CHARS: the biggest pages, read whole so that
a question can find its answer anywhere in them) is analysed alike, with its
tokens estimated line by line (`_LineTokens`); its fit carries a note saying
how it was fitted, so a page that size is not taken for one read in part.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel

from .overview import Piece, main_pieces, overview
from .ranking import ENGLISH, BM25Ranker, Meaning, MeaningFactory, Query, Ranker, RankerFactory
from .ranking.scope import RequestScope, scope
from .rows import has_rows, is_row, join_row, row_cells
from .limits import MIN_TAB_BUDGET
from .markers import columns_marker, omitted_marker
from .tokens import count_tokens

CHUNK_TOKENS = 96  # small enough to pick precisely, large enough to carry context
# Row groups are larger: every gap in a table costs a marker and a repeated header.
TABLE_CHUNK_TOKENS = 256
HEAD_SHARE = 0.12  # of a tab's budget kept when selecting: title, lead, infobox (less if the best table needs it)
BLOCK_WEIGHT = 1.0  # weight of the block's (table's, section's) score next to the chunk's own
# Ranking tables: a question names columns ("attendance", "goals") more often than
# cells, so a table's header and caption count again, at this weight, next to its text.
HEADER_WEIGHT = 0.5
WHOLE_TABLES = 3  # best-matching tables kept whole when they fit, best first
MAIN_TABLE_ROWS = 5  # a page's biggest table, when the question matches none, is its data at this size
# Of a tab's budget used when those tables are all kept whole within it (see the
# module docstring). On WikiTableQuestions the median question sends a quarter
# fewer tokens; looked-up answers are kept as often as before, and what is lost,
# net, is "how many" answers whose digits happened to appear in the extra text.
CONFIDENT_SHARE = 0.75
# Of a tab's budget a page longer than it is given at least, whatever the question
# matched: a question that matches a menu line or nothing but a caption still gets the
# page around it, as one that matches nothing gets its head.
FLOOR_SHARE = 0.5
NEIGHBOUR_SHARE = 0.5  # of a chunk's score passed on to the chunks either side of it
# The prose chunks' meaning beside their words, each scaled to its best on the page (docs/retrieval.md).
SEMANTIC_WEIGHT = 0.5
REFERENCE_FACTOR = 0.2  # reference lists match many keywords and answer nothing
FILL_MARGIN = 4  # tokens kept back when filling: a split chunk changes its marker's count
PAGE_CACHE_SIZE = 16  # analysed texts kept: a few tabs, each asked several questions
# ...and no more text than this between them: a long text's analysis holds ~15
# bytes a character (310 MB at extraction's 20M-character bound), so the cache
# stays within ~600 MB (four 10 MB pages, or two at the bound).
PAGE_CACHE_CHARS = 40_000_000
# Longer texts (~125k tokens, 60× a tab's default budget, and more: the biggest
# pages) have their tokens counted line by line, each line once (see
# `_LineTokens`), and a note says how they were fitted.
LONG_TEXT_CHARS = 500_000
# Pages and questions alike: only the stop words that carry nothing ("which", "most"
# and "first" can name what a table is about), accents folded.
ANALYSER = ENGLISH
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
_HEADING = re.compile(r"^#{1,6}\s")
_SUBHEADING = re.compile(r"^#{2,6}\s+(.+)$", re.M)  # a heading below the title, its name
PATH_SEPARATOR = " › "  # as extraction writes a heading path (`page_lines`)


class Fitted(BaseModel):
    text: str
    tokens: int
    original_tokens: int
    truncated: bool = False  # head kept, tail cut
    selected: bool = False  # question-relevant parts kept
    omitted_tokens: int = 0
    note: str = ""  # for a very long text: how it was fitted
    scope: str = "search"  # what the question asks of the page (`ranking.scope`): "search", "whole", "part"
    overview: bool = False  # the text is an overview of the page (`overview.py`), not a selection
    parts: int = 0  # of an overview: the parts the page was cut into, and those shown
    parts_shown: int = 0


def allocate(needs: list[int], total: int) -> list[int]:
    """Split `total` tokens across tabs needing `needs` tokens (water-filling).

    Each tab gets an equal share; a tab needing less keeps only what it needs and
    the rest is shared among the longer tabs, repeatedly.
    """
    shares = [0] * len(needs)
    pending = [i for i, n in enumerate(needs) if n > 0]
    left = max(total, 0)
    while pending and left > 0:
        share = left // len(pending)
        if share == 0:
            break
        small = [i for i in pending if needs[i] <= share]
        if not small:
            for i in pending:
                shares[i] = share
            left -= share * len(pending)
            break
        for i in small:
            shares[i] = needs[i]
            left -= needs[i]
        pending = [i for i in pending if i not in small]
    return shares


def favour(needs: list[int], total: int, matching: list[bool], floor: int) -> list[int]:
    """Split `total` across tabs as `allocate` does, but for the tabs that do not match the
    question: those keep at most `floor` each, the matching ones share the rest, and what they
    do not need goes back to the others."""
    shares = [min(n, floor) if not m else 0 for n, m in zip(needs, matching)]
    mine = [i for i, m in enumerate(matching) if m]
    for i, s in zip(mine, allocate([needs[i] for i in mine], total - sum(shares))):
        shares[i] = s
    rest = [i for i, m in enumerate(matching) if not m]
    for i, s in zip(rest, allocate([needs[i] - shares[i] for i in rest], total - sum(shares))):
        shares[i] += s
    return shares


@dataclass
class _Unit:
    """A paragraph, table row or sentence: the smallest piece kept or dropped."""

    text: str
    tokens: int
    section: str = ""
    table_header: str = ""  # caption, header (+ separator) rows for a table-row unit
    joiner: str = "\n\n"  # what goes before it when it follows its predecessor
    block: int = 0  # the table or section it belongs to
    in_table: bool = False
    path: str = ""  # the headings it sits under, below the page's title ("Reviews › Most helpful")


@dataclass
class _Chunk:
    units: list[_Unit] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.units) + 1

    def rank_text(self) -> str:
        first = self.units[0]
        return " ".join(filter(None, [first.section, first.table_header, *(u.text for u in self.units)]))


def _table_header(lines: list[str]) -> int:
    """How many leading lines of a table block form its header: an optional caption,
    the first row, and a separator row if there is one (trafilatura writes none)."""
    n = 0 if is_row(lines[0]) else 1
    n += 1
    if n < len(lines) and set(lines[n].strip()) <= set("|-: "):
        n += 1
    return n


class _LineTokens:
    """Token counts for a very long text, each of its lines tokenized once.

    Exact counts tokenize such a text up to four times over (whole for its
    total, then by paragraph, by line and by sentence: 4.3 s for 9 MB,
    against 1.5 s here). Here a string of several lines counts as its lines
    plus one token per line break, an estimate: tiktoken often merges a break
    with the punctuation before it, so it runs over by up to a token a line
    (1.5% on a 9 MB log, 6% for short lines that all end in a full stop).
    The selection sent is counted exactly all the same."""

    def __init__(self, text: str) -> None:
        lines = dict.fromkeys(text.splitlines())
        self._lines = dict(zip(lines, map(count_tokens, lines)))

    def __call__(self, text: str) -> int:
        n = self._lines.get(text)
        if n is None:
            lines = text.splitlines()
            n = sum(map(self, lines)) + len(lines) - 1 if len(lines) > 1 else count_tokens(text)
        return n


def _split_units(text: str, count: Callable[[str], int] = count_tokens) -> list[_Unit]:
    units: list[_Unit] = []
    section = path = ""
    headings: list[tuple[int, str]] = []  # the headings above, with their levels
    block = 0
    table: tuple[str, int] | None = None  # header and block of the table just read
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        lines = para.splitlines()
        if _HEADING.match(lines[0]):
            section = lines[0].lstrip("#").strip()
            level = len(lines[0]) - len(lines[0].lstrip("#"))
            headings = [h for h in headings if h[0] < level] + [(level, section)]
            path = PATH_SEPARATOR.join(name for lvl, name in headings if lvl > 1)
            block += 1
        if not (all(is_row(line) for line in lines[1:]) and (is_row(lines[0]) or len(lines) > 1)):
            table = None
            units += _paragraph(para, lines, count(para), section, block, path, count)
            continue
        for kind, part in _table_parts(lines, count):
            if kind == "prose":
                # A layout table's cell holding a page's text: its cells are paragraphs.
                for cell in part:
                    units += _paragraph(cell, [cell], count(cell), section, block, path, count)
                table = None
                continue
            if table is not None and is_row(part[0]):
                header, tblock = table  # more rows of the same table after a blank line
                body = part
            else:
                n = _table_header(part)
                header = "\n".join(part[:n])
                block += 1
                tblock = block
                units.append(_Unit(header, count(header), section, block=tblock, in_table=True, path=path))
                body = part[n:]
            for row in body:
                units.append(_Unit(row, count(row) + 1, section, header, "\n", tblock, True, path))
            table = (header, tblock)
            block += 1  # prose after a table is not part of it
    return units


def _paragraph(para: str, lines: list[str], tokens: int, section: str, block: int, path: str,
               count: Callable[[str], int]) -> list[_Unit]:
    """A paragraph (`tokens` long) as units: whole, or, longer than two chunks (or a
    list), cut into lines, then sentences, then windows."""
    if tokens <= CHUNK_TOKENS * 2:
        return [_Unit(para, tokens + 1, section, block=block, path=path)]  # + the "\n\n" before it
    units: list[_Unit] = []
    for line in lines:
        pieces = _SENTENCE.split(line) if count(line) > CHUNK_TOKENS else [line]
        for j, (piece, tokens) in enumerate(w for p in pieces for w in _windows(p, count(p), count)):
            joiner = "\n\n" if not units else (" " if j else "\n")
            units.append(_Unit(piece, tokens + 1, section, "", joiner, block, path=path))
    return units


def _table_parts(lines: list[str], count: Callable[[str], int]) -> list[tuple[str, list[str]]]:
    """A table block's lines as its runs of rows ("rows") and, between them, the rows
    that are prose ("prose", their non-empty cells).

    A row longer than a row group with a cell longer than two chunks is a layout
    table's (a page laid out in a table, its whole text in one cell, which
    extraction writes as one row): kept whole it could never fit a budget, and a
    question's words in it would find nothing that can be kept."""
    parts: list[tuple[str, list[str]]] = []
    for line in lines:
        cells = _prose_cells(line, count)
        kind, part = ("prose", cells) if cells is not None else ("rows", _row_pieces(line, count))
        if parts and parts[-1][0] == kind:
            parts[-1][1].extend(part)
        else:
            parts.append((kind, part))
    if parts and parts[0][0] == "rows" and not any(map(is_row, parts[0][1])):
        parts[0] = ("prose", parts[0][1])  # a caption over a prose row is a line of prose
    return parts


def _prose_cells(line: str, count: Callable[[str], int]) -> list[str] | None:
    """The non-empty cells of a row that is prose (see `_table_parts`), pipes unescaped; None for any other line."""
    long = CHUNK_TOKENS * 2  # a token is a character at least: shorter lines are not counted
    if len(line) <= TABLE_CHUNK_TOKENS or not is_row(line):
        return None
    cells = [c.strip() for c in row_cells(line)]
    if not any(len(c) > long and count(c) > long for c in cells) or count(line) <= TABLE_CHUNK_TOKENS:
        return None
    return [c.replace("\\|", "|") for c in cells if c]


def _row_pieces(line: str, count: Callable[[str], int]) -> list[str]:
    """`line`, or, for a row longer than two row groups (hundreds of short cells: a
    flattened layout, a list written as a row), its cells in rows of about a row
    group each, so that it can be kept in part rather than never."""
    if len(line) <= 2 * TABLE_CHUNK_TOKENS or not is_row(line) or count(line) <= 2 * TABLE_CHUNK_TOKENS:
        return [line]
    pieces: list[str] = []
    run: list[str] = []
    tokens = 0
    for cell in row_cells(line):
        run.append(cell)
        tokens += count(cell) + 1
        if tokens >= TABLE_CHUNK_TOKENS:
            pieces.append(join_row(run))
            run, tokens = [], 0
    if run:
        pieces.append(join_row(run))
    return pieces


def _windows(piece: str, tokens: int, count: Callable[[str], int]) -> list[tuple[str, int]]:
    """`piece` (`tokens` long) with its tokens, or, longer than two chunks (a page on one
    line, a sentence without an end), cut at spaces into windows of about a chunk each:
    kept whole it could only be dropped whole, and what the question matches in it with it."""
    if tokens <= CHUNK_TOKENS * 2:
        return [(piece, tokens)]
    size = max(1, len(piece) * CHUNK_TOKENS // tokens)  # characters in a window
    out: list[tuple[str, int]] = []
    start = 0
    while start < len(piece):
        end = min(len(piece), start + size)
        if end < len(piece) and (space := piece.rfind(" ", start + size // 2, end)) > start:
            end = space
        if window := piece[start:end].strip():
            out.append((window, count(window)))
        start = end
    return out


def _chunks(units: list[_Unit]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    cur = _Chunk()
    for u in units:
        limit = TABLE_CHUNK_TOKENS if u.table_header else CHUNK_TOKENS
        boundary = bool(cur.units) and (
            cur.tokens + u.tokens > limit
            or u.section != cur.units[-1].section
            or u.table_header != cur.units[-1].table_header
            or u.block != cur.units[-1].block
        )
        if boundary:
            chunks.append(cur)
            cur = _Chunk()
        cur.units.append(u)
    if cur.units:
        chunks.append(cur)
    return chunks


def _join(units: list[_Unit]) -> str:
    out: list[str] = []
    for i, u in enumerate(units):
        if i:
            out.append(u.joiner)
        out.append(u.text)
    return "".join(out)


_CITATION = re.compile(r"^\s*(?:\d+\.\s*)?(?:\*\*)?\^", re.M)


def _is_reference_list(chunk: _Chunk) -> bool:
    """Wiki-style notes ("1. ^ Author (2011). Title. Retrieved …"): they echo the
    page's keywords without answering anything."""
    lines = [line for u in chunk.units for line in u.text.splitlines() if line.strip()]
    return bool(lines) and sum(bool(_CITATION.match(line)) for line in lines) * 2 >= len(lines)


@dataclass
class _Columns:
    """A table's columns, for showing only those a question is about."""

    names: list[str]  # header cells
    aligned: list[bool]  # per unit of the table: a row with one cell per column
    cost: list[int]  # tokens each column adds over the aligned rows
    heads: Ranker  # over the column names
    cells: Ranker  # over every cell below the names
    column_of: list[int]  # each cell's column


def _columns(units: list[_Unit], ranker: RankerFactory) -> _Columns | None:
    """Columns of the table made of `units` (its header unit first); None when most
    rows do not line up with its header (a page's rendered text drops empty cells;
    extraction keeps them). Rows that do not line up are shown whole."""
    header = [line for line in units[0].text.splitlines() if is_row(line) and set(line) - set("|-: ")]  # no separator
    if not header:
        return None
    lines = header[-1:] + [u.text for u in units[1:]]
    widths = [len(row_cells(line)) for line in lines]
    # The column names: the first row of more than one cell, after any title rows ("|Career finals|").
    named = next((k for k, w in enumerate(widths) if w > 1), None)
    if named is None:
        return None
    width = widths[named]
    aligned = [k >= named and w == width for k, w in enumerate(widths)]
    if sum(aligned) * 2 < len(lines):
        return None  # mostly misaligned: a projection would be mostly whole rows
    names = row_cells(lines[named])
    cost = [0] * width
    cells: list[str] = []
    column_of: list[int] = []
    for k, (line, ok) in enumerate(zip(lines, aligned)):
        if ok:
            for j, cell in enumerate(row_cells(line)):
                cost[j] += count_tokens(cell) + 1
                if k != named:
                    cells.append(cell)
                    column_of.append(j)
    return _Columns(names, aligned, cost, ranker(names, ANALYSER), ranker(cells, ANALYSER), column_of)


class _Page:
    """A text cut into units and chunks, with its indexes (made by `ranker`) and
    its prose chunks' meaning (by `meaning`; None: words alone): all question-independent."""

    def __init__(self, text: str, ranker: RankerFactory = BM25Ranker, meaning: MeaningFactory | None = Meaning
                 ) -> None:
        self.text = text
        self.ranker = ranker
        self.meaning = meaning
        self._count: Callable[[str], int] = _LineTokens(text) if len(text) > LONG_TEXT_CHARS else count_tokens
        self.total = self._count(text)
        self._columns: dict[int, _Columns | None] = {}  # per table, worked out when first projected

    @cached_property
    def units(self) -> list[_Unit]:
        units = _split_units(self.text, self._count)
        # A long text's line counts (a copy of its lines, 35 MB for 9 MB) are
        # not needed any more; a thread splitting it meanwhile counts exactly.
        self._count = count_tokens
        return units

    @cached_property
    def chunks(self) -> list[_Chunk]:
        return _chunks(self.units)

    @cached_property
    def chunk_index(self) -> Ranker:
        return self._index([c.rank_text() for c in self.chunks])

    @cached_property
    def prose(self) -> list[int]:
        """The chunks outside tables: those ranked by their meaning too."""
        return [i for i, c in enumerate(self.chunks) if not c.units[0].in_table]

    @cached_property
    def meaning_index(self) -> Meaning | None:
        if self.meaning is None or len(self.text) > LONG_TEXT_CHARS:
            return None  # the biggest pages by their words alone: embedding them all would take seconds
        return self.meaning([self.chunks[i].rank_text() for i in self.prose])

    @cached_property
    def chunk_terms(self) -> list[frozenset[str]]:
        """Each chunk's terms, as a set: what a question is matched with across tabs (`ranking.across`)."""
        return [frozenset(t) for t in self.chunk_index.terms]

    @cached_property
    def reference(self) -> list[bool]:
        return [_is_reference_list(c) for c in self.chunks]

    @cached_property
    def blocks(self) -> dict[int, list[int]]:
        """Block id → its chunks; reference lists left out (they are never a block worth keeping)."""
        out: dict[int, list[int]] = {}
        for i, c in enumerate(self.chunks):
            out.setdefault(c.units[0].block, []).append(i)
        return {b: idx for b, idx in out.items() if not all(self.reference[i] for i in idx)}

    @cached_property
    def block_index(self) -> Ranker:
        # A block's text: its first chunk with heading and header, then the rest plain.
        return self._index([
            " ".join(self.chunks[i].rank_text() if n == 0 else _join(self.chunks[i].units) for n, i in enumerate(idx))
            for idx in self.blocks.values()
        ])

    @cached_property
    def tables(self) -> list[int]:
        return [b for b, idx in self.blocks.items() if self.chunks[idx[0]].units[0].in_table]

    @cached_property
    def header_index(self) -> Ranker:
        return self._index([self._table_head(b) for b in self.tables])

    @cached_property
    def headings(self) -> list[tuple[str, frozenset[str]]]:
        """Each heading below the title, with its terms."""
        names = [m.strip() for m in _SUBHEADING.findall(self.text)]
        return list(zip(names, map(frozenset, ENGLISH.analyse(names))))

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Every term of the text: its index's, where a question's selection has built it, else
        analysed alone (for a text sent whole, ten times quicker than indexing it)."""
        if "chunk_index" in self.__dict__ or len(self.text) > LONG_TEXT_CHARS:
            return self.chunk_index.vocabulary
        return frozenset(ENGLISH.terms(self.text))

    def scope(self, question: str) -> RequestScope:
        return scope(question, self.vocabulary, self.headings)

    def _index(self, passages: list[str]) -> Ranker:
        return self.ranker(passages, ANALYSER)

    def prepare(self) -> None:
        """Build now what every question's scoring reads."""
        _ = self.chunk_index, self.reference, self.meaning_index
        if len(self.blocks) > 1:  # else `_scores` reads no block (a long rendered text is one)
            _ = self.block_index, self.header_index

    def table_units(self, block: int) -> list[_Unit]:
        return [u for i in self.blocks[block] for u in self.chunks[i].units]

    def columns(self, block: int) -> _Columns | None:
        if block not in self._columns:
            self._columns[block] = _columns(self.table_units(block), self.ranker)
        return self._columns[block]

    def _table_head(self, block: int) -> str:
        for i in self.blocks[block]:
            first = self.chunks[i].units[0]
            if first.table_header:
                return f"{first.section} {first.table_header}"
        return self.chunks[self.blocks[block][0]].rank_text()


class TextFitter:
    """`fit_text` that keeps the analyses of the last `size` texts it fitted,
    and of no more than `chars` characters of text between them (the last one
    is kept whatever its size).

    ContextBuilder fits tabs on worker threads: two threads asking at once may
    analyse a text (or one of its parts) twice, but the results are equal and
    only ever added, never changed, so that costs time only."""

    def __init__(
        self, size: int = PAGE_CACHE_SIZE, ranker: RankerFactory = BM25Ranker, chars: int = PAGE_CACHE_CHARS,
        meaning: MeaningFactory | None = Meaning,
    ) -> None:
        self._size, self._chars, self._ranker, self._meaning = size, chars, ranker, meaning
        self._pages: OrderedDict[str, _Page] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def _analysed(self, text: str) -> _Page:
        with self._lock:
            page = self._pages.get(text)
            if page is not None:
                self._pages.move_to_end(text)
                return page
        page = _Page(text, self._ranker, self._meaning)  # unlocked: counting a long text's tokens takes a second
        with self._lock:
            page = self._pages.setdefault(text, page)
            self._pages.move_to_end(text)
            kept = sum(map(len, self._pages))
            while len(self._pages) > 1 and (len(self._pages) > self._size or kept > self._chars):
                kept -= len(self._pages.popitem(last=False)[0])
        return page

    def fit(self, text: str, budget: int, question: str | None = None) -> Fitted:
        return _fit(self._analysed(text), budget, question)

    def scope(self, text: str, question: str) -> str:
        """What `question` asks of `text` (`ranking.scope`): "search", "whole" or "part"."""
        return self._analysed(text).scope(question).kind if question.strip() else "search"

    def tokens(self, text: str) -> int:
        """`count_tokens(text)`, except that a text over LONG_TEXT_CHARS is
        analysed for it (and kept): the estimate its fitting uses, counted once."""
        return self._analysed(text).total if len(text) > LONG_TEXT_CHARS else count_tokens(text)

    def passages(self, text: str) -> list[frozenset[str]]:
        """`text`'s chunks, each as its set of terms (`ranking.across.tab_relevance`)."""
        return self._analysed(text).chunk_terms

    def prepare(self, text: str) -> None:
        """Analyse `text` now, ahead of the questions that will be asked about it."""
        self._analysed(text).prepare()


def may_select(text: str, tokens: int, budget: int) -> bool:
    """Whether a question may cut `text` (`tokens` long) although it fits
    `budget`: only for its tables, so a text without any is not analysed."""
    return int(budget * CONFIDENT_SHARE) < tokens <= budget and has_rows(text)


def fit_text(text: str, budget: int, question: str | None = None, *, ranker: RankerFactory = BM25Ranker,
             meaning: MeaningFactory | None = Meaning) -> Fitted:
    """Fit `text` into `budget` tokens; see the module docstring."""
    return _fit(_Page(text, ranker, meaning), budget, question)


def _fit(page: _Page, budget: int, question: str | None) -> Fitted:
    text, total = page.text, page.total
    question = (question or "").strip()
    asked = page.scope(question) if question else RequestScope()
    if total <= budget:
        if question and not asked.overview and may_select(text, total, budget):
            fitted = _select(page, budget, ANALYSER.query(question), whole_fits=True)
            if fitted is not None:
                return fitted
        return Fitted(text=text, tokens=total, original_tokens=total, scope=asked.kind)
    budget = max(budget, MIN_TAB_BUDGET)
    made = _overview(page, budget, asked) if asked.overview else None
    # The parts a request names, too short for half the budget: they are searched for, with what is around them.
    if made is not None and (asked.kind != "part" or made.tokens >= budget * FLOOR_SHARE):
        return _noted(page, made, "an overview of all of it is shown")
    if question:
        fitted = _select(page, budget, ANALYSER.query(question))
        if fitted is not None:
            fitted = fitted.model_copy(update={"scope": asked.kind})
            return _noted(page, fitted, "the parts that match the question were selected from all of it")
    head = _head(page.units, budget, total)
    why = "nothing in it matches the question" if question else "no question was asked to select parts by"
    return _noted(page, head, f"{why}, so only its start is shown")


def _overview(page: _Page, budget: int, asked: RequestScope) -> Fitted | None:
    """The page (or, for a request about some of its parts, those parts) as an overview;
    None when the budget is too small for one (the page's start is shown)."""
    units = page.units
    if asked.kind == "part":
        named = set(asked.headings)
        units = units[:1] + [u for u in units[1:] if named & set(u.path.split(PATH_SEPARATOR)) or
                             (_HEADING.match(u.text) and u.text.lstrip("#").strip() in named)]
    pieces = main_pieces([Piece(u.text, u.tokens, u.joiner) for u in units], budget)
    made = overview(pieces, budget, page.total, whole=asked.kind != "part")
    if made is None:
        return None
    return Fitted(text=made.text, tokens=made.tokens, original_tokens=page.total, truncated=True,
                  omitted_tokens=max(page.total - made.tokens, 0), scope=asked.kind, overview=True,
                  parts=made.parts, parts_shown=made.shown)


def _noted(page: _Page, fitted: Fitted, how: str) -> Fitted:
    """`fitted` with a note on how it was fitted, if its text is very long
    (a page that size may otherwise seem to have been read only in part)."""
    if len(page.text) <= LONG_TEXT_CHARS:
        return fitted
    return fitted.model_copy(update={"note": f"This page's text is very long (about {page.total:,} tokens): {how}."})


def _head(units: list[_Unit], budget: int, total: int) -> Fitted:
    reserve = count_tokens(omitted_marker(total, selected=False)) + 2
    kept: list[_Unit] = []
    used = 0
    for u in units:
        if used + u.tokens > budget - reserve:
            # Fill the remainder with whole sentences of this unit, if any fit (of a
            # sentence longer than two chunks, a row with no end, its windows).
            pieces = (w for s in _SENTENCE.split(u.text) for w in _windows(s, count_tokens(s), count_tokens))
            for k, (piece, t) in enumerate(pieces):
                if used + t + 1 > budget - reserve:
                    # Whole sentences would leave less than FLOOR_SHARE of the budget (a
                    # small one): this sentence too, cut at a word.
                    if used < budget * FLOOR_SHARE and (cut := _cut_at_word(piece, budget - reserve - used - 1)):
                        kept.append(_Unit(cut, count_tokens(cut) + 1, joiner=" " if k else u.joiner))
                    break
                kept.append(_Unit(piece, t + 1, joiner=" " if k else u.joiner))
                used += t + 1
            break
        kept.append(u)
        used += u.tokens
    while True:
        body = _join(kept)
        omitted = max(total - count_tokens(body), 0)
        marker = omitted_marker(omitted, selected=False)
        text = f"{body}\n\n{marker}" if body else marker
        tokens = count_tokens(text)
        if tokens <= budget or not kept:
            break
        # Per-unit counts missed a merge or a joiner: drop units from the end until it fits.
        over = tokens - budget
        while kept and over > 0:
            over -= kept.pop().tokens
    return Fitted(text=text, tokens=tokens, original_tokens=total, truncated=True, omitted_tokens=omitted)


def _cut_at_word(text: str, room: int) -> str:
    """The longest start of `text` cut at a word, with " …", within `room` tokens; "" if none."""
    words = text.split(" ")
    lo, hi = 0, len(words) - 1  # words[:lo] fit; words[:hi + 1] (all of it) does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(" ".join(words[:mid]) + " …") <= room:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …" if lo else ""


def _select(page: _Page, budget: int, query: Query, *, whole_fits: bool = False) -> Fitted | None:
    """The selection for `query`; None when the head (or, if `whole_fits`, the
    whole page) is the better answer: nothing matches, or the parts around what
    matches are too big to give a page longer than the budget FLOOR_SHARE of it."""
    chunks, total = list(page.chunks), page.total  # a table's chunks may be swapped for a projection
    scores, tables = _scores(page, query)
    if not any(s > 0 for s in scores):
        return None  # nothing matches: the head is the best guess
    matched = bool(tables)
    if not matched and not whole_fits:
        tables = _main_table(page)  # its first and last rows at least, or all of it if it fits
    gap_cost = count_tokens(omitted_marker(total, selected=True)) + 2
    floor = int(budget * FLOOR_SHARE)  # of a page longer than the budget, kept whatever matched
    keep: set[int] = set()
    used = 0

    def cost(i: int) -> int:
        c = chunks[i]
        extra = gap_cost
        header = c.units[0].table_header
        if header and not (i - 1 in keep and _shows_header(chunks[i - 1], header)):
            extra += count_tokens(header) + 1
        if i - 1 not in keep and (line := _path_line(c)):
            extra += count_tokens(line) + 2
        return c.tokens + extra

    def add(i: int) -> None:
        nonlocal used
        if i in keep:
            widen(i)
            return
        c = cost(i)
        if used + c <= budget:
            keep.add(i)
            used += c

    def widen(i: int) -> None:
        # A row group of a projected table, in order of relevance like any chunk:
        # its rows whole (a lookup needs the row's other columns), under the full
        # header, with the projected one repeated after it.
        nonlocal used
        short, full = chunks[i], page.chunks[i]
        header = short.units[0].table_header
        if short is full or not header:
            return
        extra = full.tokens - short.tokens + count_tokens(full.units[0].table_header) + count_tokens(header) + 2
        if used + extra <= budget:
            chunks[i] = full
            used += extra

    head_budget = int(budget * HEAD_SHARE)
    if tables:
        # The best table is evidence, the head only a prior: when the table fits
        # whole only without the head, the head shrinks (its first chunk, with
        # the title, stays).
        best = page.blocks[tables[0]]
        need = sum(chunks[i].tokens for i in best) + gap_cost
        most = budget - chunks[0].tokens - gap_cost
        if need > most:
            # Too big even so: all its rows with fewer columns, beside the whole head if they fit.
            projected = _project(page, tables[0], query, budget - head_budget - gap_cost) or _project(
                page, tables[0], query, most - gap_cost
            )
            if projected is not None:
                for i, c in zip(best, projected):
                    chunks[i] = c
                need = sum(c.tokens for c in projected) + gap_cost
        if budget - head_budget < need <= most:
            head_budget = budget - need
    for i in range(len(chunks)):
        if used + chunks[i].tokens > head_budget:
            break
        keep.add(i)
        used += chunks[i].tokens
    # The tables that match best, whole if they fit: aggregate questions
    # ("how many…", "which … most") need every row, not the matching ones.
    for b in tables[:WHOLE_TABLES]:
        members = [i for i in page.blocks[b] if i not in keep]
        if not members:
            continue
        whole = sum(chunks[i].tokens for i in members) + gap_cost
        if used + whole <= budget:
            keep.update(members)
            used += whole
    share = int(budget * CONFIDENT_SHARE)
    limit = budget  # what the text may not exceed; `budget` below is what the selection aims for
    if matched and used <= share and _all_whole(page, chunks, keep, tables[:WHOLE_TABLES]):
        budget = share  # `add` and `widen` see it too
    elif whole_fits:
        return None
    # The best table did not fit: its first and last rows at least ("the first…",
    # "the last…", a totals row), before any other chunk.
    if tables and not all(i in keep for i in page.blocks[tables[0]]):
        rows = [i for i in page.blocks[tables[0]] if chunks[i].units[0].table_header]
        for i in rows[:1] + rows[-1:]:
            add(i)
    by_score = sorted(range(len(chunks)), key=lambda j: (-scores[j], j))
    for i in by_score:
        if scores[i] > 0:
            add(i)
    # Leftover room: widen the kept parts with their neighbours, best first.
    for i in by_score:
        if i in keep:
            for n in (i + 1, i - 1):
                if 0 <= n < len(chunks):
                    add(n)
    text = _assemble(chunks, keep)
    tokens = count_tokens(text)
    if not whole_fits and tokens < floor:
        # What matched is small (a line, a menu, a caption): the page read on from the
        # kept parts, best first, and from its head where nothing around them fits.
        while tokens < floor:
            start, before = used, len(keep)
            for near in (True, False):
                order = [n for i in by_score if i in keep for n in (i + 1, i - 1)] if near else range(len(chunks))
                for n in order:
                    if 0 <= n < len(chunks) and n not in keep:
                        add(n)
                        if tokens + used - start >= floor:
                            break
                if len(keep) > before:
                    break
            if len(keep) == before:
                break  # nothing more fits
            text = _assemble(chunks, keep)
            tokens = count_tokens(text)
    if tokens < budget:
        # The estimates above are pessimistic (a gap marker per chunk): what is
        # really left goes to the rows and lines right after the kept parts.
        filled_chunks, filled_keep = _fill(chunks, keep, by_score, budget - tokens - FILL_MARGIN)
        if filled_chunks is not chunks:
            filled = _assemble(filled_chunks, filled_keep)
            filled_tokens = count_tokens(filled)
            if filled_tokens <= budget:
                chunks, keep, text, tokens = filled_chunks, filled_keep, filled, filled_tokens
    if not whole_fits and tokens < floor:
        return None  # its parts too big for the budget: the head, cut to fit, holds more of the page
    omitted = max(total - sum(chunks[i].tokens for i in keep), 0)
    # Over its aim by the estimates' drift (joins, markers) but within the limit, it stays:
    # cutting it to the aim would drop what is last on the page, however relevant.
    if tokens > limit:
        return _head(_split_units(text), limit, total)
    return Fitted(text=text, tokens=tokens, original_tokens=total, selected=True, omitted_tokens=omitted)


def _project(page: _Page, block: int, query: Query, room: int) -> list[_Chunk] | None:
    """The table's chunks with only its first column (what names a row) and the
    columns the question matches, best first, as many as fit in `room`; None
    when no matching column fits.

    An aggregate question over a table too big to keep whole ("how many
    candidates are over 1.8 m tall?") needs every row, but only the rows' names
    and the column it is about."""
    units = page.table_units(block)
    # Every row stays, in two tokens or more (a cell and its line break): a
    # table with more rows than that fits is not worth working out the columns
    # of (60k rows: 17 s).
    if 2 * (len(units) - 1) >= room:
        return None
    cols = page.columns(block)
    if cols is None:
        return None
    width = len(cols.names)
    heads = cols.heads.scores(query)
    # A column's best cell, not its cells together: "david shute" names one
    # cell of the Player column, where "right" in every other Position cell
    # would otherwise outweigh it.
    cells = [0.0] * width
    for j, score in zip(cols.column_of, cols.cells.scores(query)):
        cells[j] = max(cells[j], score)
    top_head, top_cells = max(heads) or 1.0, max(cells) or 1.0
    score = [h / top_head + c / top_cells for h, c in zip(heads, cells)]
    matched = sorted((j for j in range(1, width) if score[j] > 0), key=lambda j: -score[j])
    # Estimated from the columns' own tokens; the exact count is checked below.
    estimate = sum(u.tokens for u, ok in zip(units, cols.aligned) if not ok) + cols.cost[0] + sum(cols.aligned)
    shown = [0]
    for j in matched:
        if estimate + cols.cost[j] <= room:
            shown.append(j)
            estimate += cols.cost[j]
        else:
            break  # the best-matching column does not fit: a weaker one in its place would mislead
    while len(shown) > 1:
        projected = _projected(page, block, cols, sorted(shown))
        if sum(c.tokens for c in projected) <= room:
            return projected
        shown.pop()
    return None


def _projected(page: _Page, block: int, cols: _Columns, shown: list[int]) -> list[_Chunk]:
    """The table's chunks (one for one, so chunk indexes stay valid) with its aligned
    rows cut to the `shown` columns, a marker saying which, and its header in every row."""
    units = page.table_units(block)

    def cut(line: str) -> str:
        cells = row_cells(line)
        return join_row(cells[j] for j in shown)

    head_lines = units[0].text.splitlines()
    if cols.aligned[0]:
        head_lines[-1] = cut(head_lines[-1])
    rows = [cut(u.text) if ok else u.text for u, ok in zip(units[1:], cols.aligned[1:])]
    row_tokens = [count_tokens(r) + 1 for r in rows]
    kept = count_tokens("\n".join(head_lines)) + sum(row_tokens)
    original = sum(u.tokens for u in units)
    marker = columns_marker([cols.names[j] for j in shown], len(cols.names), max(original - kept, 0))
    header = "\n".join([marker, *head_lines])
    new = [_Unit(header, count_tokens(header), units[0].section, block=block, in_table=True, path=units[0].path)]
    new += [
        _Unit(r, t, u.section, header, u.joiner, block, True, u.path) for u, r, t in zip(units[1:], rows, row_tokens)
    ]
    out: list[_Chunk] = []
    for i in page.blocks[block]:
        n = len(page.chunks[i].units)
        out.append(_Chunk(new[:n]))
        new = new[n:]
    return out


def _fill(chunks: list[_Chunk], keep: set[int], order: list[int], room: int) -> tuple[list[_Chunk], set[int]]:
    """Spend `room` tokens on the leading units of the chunks that follow a kept
    one (in `order`), splitting each such chunk into a kept head and a dropped rest."""
    take: dict[int, int] = {}
    for i in order:
        if i in keep or i - 1 not in keep:
            continue
        n = 0
        for u in chunks[i].units:
            if u.tokens > room:
                break
            room -= u.tokens
            n += 1
        if n:
            take[i] = n
    if not take:
        return chunks, keep
    out: list[_Chunk] = []
    kept: set[int] = set()
    for i, c in enumerate(chunks):
        if i in keep or i in take:
            kept.add(len(out))
        n = take.get(i, len(c.units))
        out.append(_Chunk(c.units[:n]) if n < len(c.units) else c)
        if n < len(c.units):
            out.append(_Chunk(c.units[n:]))
    return out, kept


def _scores(page: _Page, query: Query) -> tuple[list[float], list[int]]:
    """Each chunk's score plus BLOCK_WEIGHT × its block's, both scaled to [0, 1];
    and the tables that match the question, best first."""
    own = page.chunk_index.scores(query)
    if not any(own[i] > 0 for b in page.tables for i in page.blocks[b]):
        own = _with_meaning(page, query, own)  # a question no table's words answer: by meaning too
    own = [s * REFERENCE_FACTOR if s > 0 and ref else s for s, ref in zip(own, page.reference)]
    # A neighbour inherits part of a match's score: "the year after X", "who won
    # before Y" need the rows around the matching one.
    own = [
        max(s, NEIGHBOUR_SHARE * max(own[i - 1] if i else 0.0, own[i + 1] if i + 1 < len(own) else 0.0))
        for i, s in enumerate(own)
    ]
    if BLOCK_WEIGHT <= 0 or len(page.blocks) < 2:
        return own, []
    block_scores = dict(zip(page.blocks, page.block_index.scores(query)))
    top_own = max(own) or 1.0
    top_block = max(block_scores.values()) or 1.0
    combined = []
    for i, c in enumerate(page.chunks):
        b = block_scores.get(c.units[0].block, 0.0)
        combined.append(own[i] / top_own + BLOCK_WEIGHT * b / top_block if own[i] > 0 or b > 0 else 0.0)
    # Only tables are taken whole: prose is served well enough chunk by chunk.
    if not page.tables:
        return combined, []
    heads = page.header_index.scores(query)
    top_head = max(heads) or 1.0
    table_scores = {
        b: block_scores[b] / top_block + HEADER_WEIGHT * h / top_head for b, h in zip(page.tables, heads)
    }
    tables = sorted((b for b in page.tables if block_scores[b] > 0), key=lambda b: -table_scores[b])
    return combined, tables


def _with_meaning(page: _Page, query: Query, own: list[float]) -> list[float]:
    """The chunks' scores, each over the best, plus SEMANTIC_WEIGHT × the prose chunks' cosine, over the best."""
    if page.meaning_index is None or not query.terms:
        return own  # a question of stop words only matches nothing, by either
    cosine = page.meaning_index.scores(query.text)
    top_own, top_cosine = max(own, default=0.0) or 1.0, max(cosine, default=0.0) or 1.0
    out = [s / top_own for s in own]
    for i, c in zip(page.prose, cosine):
        out[i] += SEMANTIC_WEIGHT * c / top_cosine
    return out


def _main_table(page: _Page) -> list[int]:
    """The table with the most rows, if it has MAIN_TABLE_ROWS or more: what
    "the last one on the chart" is about when the question names no table."""
    rows = {b: sum(bool(u.table_header) for u in page.table_units(b)) for b in page.tables}
    best = max(rows, key=lambda b: (rows[b], -b), default=None)
    return [best] if best is not None and rows[best] >= MAIN_TABLE_ROWS else []


def _all_whole(page: _Page, chunks: list[_Chunk], keep: set[int], blocks: list[int]) -> bool:
    """Some tables, and each of them kept with all its rows and columns."""
    members = [i for b in blocks for i in page.blocks[b]]
    return bool(members) and all(i in keep and chunks[i] is page.chunks[i] for i in members)


def _shows_header(chunk: _Chunk, header: str) -> bool:
    """Whether `chunk` ends under `header`: in rows below it, or in the header itself
    (a table's header is a chunk of its own), so what follows need not repeat it."""
    last = chunk.units[-1]
    return last.table_header == header or (last.in_table and last.text == header)


def _path_line(chunk: _Chunk) -> str:
    """The line that says where `chunk` sits on the page, for a chunk shown without
    what comes before it; "" for one that starts with its own heading or sits under none."""
    first = chunk.units[0]
    if not first.path or _HEADING.match(first.text):
        return ""
    return f"{'#' * 6} {first.path}"


def _assemble(chunks: list[_Chunk], keep: set[int]) -> str:
    parts: list[str] = []
    prev = -1
    for i in sorted(keep):
        c = chunks[i]
        if i != prev + 1:
            skipped = sum(chunks[j].tokens for j in range(prev + 1, i))
            parts.append(omitted_marker(skipped, selected=True))
            if (line := _path_line(c)) and (prev < 0 or chunks[prev].units[-1].path != c.units[0].path):
                parts.append(line)
        header = c.units[0].table_header
        continues = prev == i - 1 and prev >= 0 and _shows_header(chunks[prev], header)
        if header and not continues:
            parts.append(header + "\n" + _join(c.units).lstrip("\n"))
        elif continues and header:
            parts[-1] += "\n" + _join(c.units)
        else:
            parts.append(_join(c.units))
        prev = i
    if prev < len(chunks) - 1:
        skipped = sum(chunks[j].tokens for j in range(prev + 1, len(chunks)))
        parts.append(omitted_marker(skipped, selected=True))
    return "\n\n".join(parts)
