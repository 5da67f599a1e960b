"""Tables in page text, as typed objects: parsed from the rows extraction writes
("|a|b|c|") and rendered back for people as "column: value" pairs.

A table's caption is the one-cell rows just above its first row; its columns
are its first row when that row holds no figures (a row with figures is data:
an infobox has no header). A row repeating the column names is not data, and a
row with other names starts a new table. The budgeter's markers of left-out
text inside a table (`markers.is_marker`) are remembered: counting its rows
would then miss some.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from .markers import is_marker
from .rows import is_row, row_cells

_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_YEAR = re.compile(r"(1[5-9]|20)\d\d")
# Markdown that extraction writes and a quote should not show: escapes, emphasis, tags.
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_HELD = 0xF0000  # an escaped character, held as a private-use one while the Markdown is read
_HELD_CHAR = re.compile("[\U000F0000-\U000F007F]")
_EMPHASIS = re.compile(r"(\*{1,3}|_{2,3})(?=\S)(.+?)(?<=\S)\1")
_TAG = re.compile(r"(?<!\\)</?[A-Za-z][^<>]{0,200}>")  # an escaped "\<b>" is text the page shows
_LINK = re.compile(r"\[([^\]\n]+)\]\((?:[^()\s]|\([^()\s]*\))+\)")  # a target may hold "(…)" once
_SPACES = re.compile(r"\s+")
_MARKUP = re.compile(r"[\\*_<\[!]|^0\d")  # anything `clean` would change beyond spaces
_TOTAL = re.compile(r"((grand|career) )?totals?:?|sum|overall|all|career\*?", re.I)
_SORT_KEY = re.compile(r"!B?\d{6,}\s*")
_PADDED_KEY = re.compile(r"^0+(\d+?)(?=\1(?!\d))")
NONE_CELLS = frozenset({"", "-", "–", "—", "−"})  # a cell saying none (the last a minus sign, as pages write one)
_EMPTY = NONE_CELLS | {"n/a", "N/A"}  # nothing to read: none, or not applicable
_PLAIN_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
SUMMED_COLUMNS = 2  # one column summing up could be chance ("1, 2, 3" over "6")


def _plain_number(cell: str) -> float | None:
    """A cell that is a figure and nothing else ("1,204", "3.5"), as a number."""
    cell = cell.strip()
    return float(cell.replace(",", "")) if _PLAIN_NUMBER.fullmatch(cell) else None


def clean(text: str) -> str:
    """Page text as a person reads it: no Markdown escapes, emphasis, links' targets, tags, or
    the hidden sort keys of sortable tables ("!B9916893390940 4067 m", "00145145 km/h")."""
    if not _MARKUP.search(text):
        return _SPACES.sub(" ", text).strip()
    text = _SORT_KEY.sub("", text)
    text = _PADDED_KEY.sub("", text)
    # Escaped characters are held aside first: an escaped "\*" is the page's, no emphasis.
    text = _ESCAPE.sub(lambda m: chr(_HELD + ord(m.group(1))), text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)  # nested: ***a*** is bold and italic
    text = _HELD_CHAR.sub(lambda m: chr(ord(m.group(0)) - _HELD), text)
    return _SPACES.sub(" ", text).strip()


@dataclass
class Table:
    caption: str
    columns: tuple[str, ...]  # empty when the table has no header row
    rows: list[tuple[str, ...]] = field(default_factory=list)  # cells, cleaned
    lines: list[int] = field(default_factory=list)  # each row's line in the text
    complete: bool = True  # no text was left out between its rows
    _bare: set[int] | None = field(default=None, repr=False, compare=False)  # columns of bare figures
    _grid: list[dict[int, str]] | None = field(default=None, repr=False, compare=False)  # row → column → cell

    def column(self, j: int) -> str:
        return self.columns[j] if j < len(self.columns) else ""

    def cell_columns(self, i: int) -> list[int]:
        """The column of each cell of row `i`. A row with fewer cells than columns lost some
        to a cell above it spanning rows ("T5" for several players): its cells go where
        their kind (a bare figure or text) matches the full rows' columns best, leftmost
        on a tie."""
        row = self.rows[i]
        missing = len(self.columns) - len(row)
        if missing <= 0:
            return list(range(len(row)))
        bare = self._bare_columns()

        def fit(shift: int) -> int:
            return sum((j + shift in bare) == _bare(c) for j, c in enumerate(row) if c)

        shift = max(range(missing + 1), key=lambda s: (fit(s), -s))
        return [j + shift for j in range(len(row))]

    def _bare_columns(self) -> set[int]:
        if self._bare is None:
            full = [r for r in self.rows if len(r) == len(self.columns)]
            self._bare = {
                j for j in range(len(self.columns))
                if full and 2 * sum(_bare(r[j]) for r in full) > len(full)
            }
        return self._bare

    def is_total(self, i: int) -> bool:
        """Whether row `i` sums the others up ("Total", "Totals", a player's "Career"): not one of the things listed."""
        return any(_TOTAL.fullmatch(c) for c in self.rows[i][:2]) or i == self._sums_row

    @cached_property
    def _sums_row(self) -> int | None:
        """The last row, when each of its figures is the sum of the column's figures above it
        (in SUMMED_COLUMNS columns or more): a totals row, whatever word names it ("Totaal")."""
        last = len(self.rows) - 1
        if last < 2:
            return None
        summed = 0
        for j in range(self.width):
            total = _plain_number(self.value(last, j))
            if total is None:
                continue
            above = [0.0 if (c := self.value(i, j)) in _EMPTY else _plain_number(c) for i in range(last)]
            if any(v is None for v in above) or abs(sum(above) - total) > 1e-6 * max(abs(total), 1.0):  # type: ignore[arg-type]
                return None
            summed += 1
        return last if summed >= SUMMED_COLUMNS else None

    @property
    def width(self) -> int:
        return max([len(self.columns), *(len(r) for r in self.rows)])

    def value(self, i: int, j: int) -> str:
        """Row `i`'s cell in column `j`, "" when it has none."""
        if self._grid is None:
            self._grid = [dict(zip(self.cell_columns(k), row)) for k, row in enumerate(self.rows)]
        return self._grid[i].get(j, "")

    def render(self, i: int) -> str:
        """Row `i` as "column: value" pairs ("value" alone where the column has no name)."""
        pairs = []
        for j, value in zip(self.cell_columns(i), self.rows[i]):
            if value in _EMPTY:
                continue
            name = self.column(j) or (self.rows[i][0] if j == 1 and len(self.rows[i]) == 2 else "")
            if not self.columns and j == 0 and len(self.rows[i]) == 2:
                continue  # an infobox row: "Born: 15 October 1986"
            pairs.append(f"{name}: {value}" if name and name != value else value)
        return "; ".join(pairs)


def _cells(line: str) -> tuple[str, ...]:
    return tuple(clean(c) for c in row_cells(line))


def _bare(cell: str) -> bool:
    """A value with no letters: "2:09:47", "3–1", "1,349"."""
    return bool(cell) and not _LETTER.search(cell)


@dataclass
class _Block:
    """Consecutive rows of two or more cells, with the one-cell rows above them."""

    caption: str
    rows: list[tuple[str, ...]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    gaps: set[int] = field(default_factory=set)  # rows after which text was left out


def _blocks(text: str) -> list[_Block]:
    out: list[_Block] = []
    current: _Block | None = None
    captions: list[str] = []
    for n, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line or (is_row(line) and set(line) <= set("|-: ")):
            continue
        if is_marker(line):
            if current is not None and current.rows:
                current.gaps.add(len(current.rows) - 1)
            continue
        if not is_row(line):
            current, captions = None, []
            continue
        cells = _cells(line)
        if len([c for c in cells if c]) < 2:
            if current is not None and current.rows:  # below data: a footer, or the next table's caption
                current, captions = None, []
            captions.append(next((c for c in cells if c), ""))
            continue
        if current is None:
            current = _Block(" — ".join(c for c in captions if c))
            out.append(current)
            captions = []
        current.rows.append(cells)
        current.lines.append(n)
    return out


def _header(row: tuple[str, ...], bare_columns: set[int], year_columns: set[int], first: bool) -> bool:
    """Whether a row names columns. It has three or more cells, and either no figures at
    all (as a first row: a table of text has none below either), or figures only inside
    names ("Pop. 2008", "1st leg", or a year over a column of other figures) over a
    column of bare values; a first row may also name a few columns by figures alone."""
    if len(row) < 3:
        return False
    if not any(_DIGIT.search(c) for c in row):
        # A name over a column of figures; an empty cell there ("|Commonwealth Avenue|||Boston|")
        # is a data row's missing value.
        return first or any(j in bare_columns and c for j, c in enumerate(row))

    def named_year(j: int, cell: str) -> bool:
        return bool(_YEAR.fullmatch(cell)) and j not in year_columns

    # An empty cell names nothing: "|20.6y|||Andy Stanfield|…" under "|Time|Wind|Auto|…" is data.
    named = sum(j in bare_columns and bool(c) and (not _bare(c) or named_year(j, c)) for j, c in enumerate(row))
    if not any(_bare(c) and not named_year(j, c) for j, c in enumerate(row)):
        # Below the first row, one name over a column of figures ("(Acting)") is a data row's note.
        return named > 0 if first else named >= 2
    # A table's first row may name some columns by figures ("18-49" for a rating, a high
    # jump's "2.15", race rounds "1" … "14"): still its header when several of its names sit
    # over columns of figures. (Further down, such a row is more likely data.)
    return first and named >= 2


def _split(block: _Block) -> list[Table]:
    """A block's tables: each header row starts one; a row of names at the top of
    another (a two-row header) is kept as the column names; data rows are the rest."""
    width = max(len(r) for r in block.rows)
    data = [r for r in block.rows if r != block.rows[0]]  # a header repeats: not what the columns hold

    def mostly(j: int, test: Callable[[str], bool]) -> bool:
        values = [r[j] for r in data if j < len(r) and r[j]]
        return bool(values) and 5 * sum(map(test, values)) >= 3 * len(values)

    bare_columns = {j for j in range(width) if mostly(j, _bare)}
    year_columns = {j for j in range(width) if mostly(j, lambda v: bool(_YEAR.fullmatch(v)))}
    out: list[Table] = []
    current: Table | None = None
    lower: dict[int, tuple[str, ...]] = {}  # a table's shorter second header row, by its place in `out`
    for k, (row, line) in enumerate(zip(block.rows, block.lines)):
        under_header = current is not None and bool(current.columns) and not current.rows
        if k == 0 and len(block.rows) > 2 and lower_header(row, block.rows[1]) and spans_columns(row, block.rows[1]):
            current = Table(block.caption, row, complete=True)  # "1975–1979" over "Obverse | Reverse"
            out.append(current)
            continue
        if under_header and current is not None and (
            lower_header(current.columns, row) or "" in row and not any(map(_DIGIT.search, row))
        ):
            current.columns = _merged(current.columns, row)  # cells in place: spans repeated, or left empty
            continue
        if under_header and current is not None and len(row) < len(current.columns) and not any(map(_DIGIT.search, row)):
            lower[len(out) - 1] = row  # "US Country | US" under "Year | Single | Chart positions | Album"
            continue
        if _header(row, bare_columns, year_columns, first=k == 0):
            if current is not None and not current.rows:
                if "" in row or "" in current.columns or len(row) == len(current.columns):
                    current.columns = _merged(current.columns, row)  # cells in place: each column named by both
                elif len(row) > len(current.columns):
                    current.columns = row  # the lower row of a two-row header names each column
                continue
            if current is not None and row == current.columns:
                continue  # the header again (long tables repeat it)
            current = Table(block.caption, row, complete=True)
            out.append(current)
            continue
        if current is None:
            current = Table(block.caption, ())
            out.append(current)
        current.rows.append(row)
        current.lines.append(line)
        if k in block.gaps:
            current.complete = False
    for n, names in lower.items():
        out[n].columns = _spanned(out[n], names)
    return [t for t in out if t.rows]


def lower_header(upper: tuple[str, ...], lower: tuple[str, ...]) -> bool:
    """Whether `lower` is the second row of a header whose first row is `upper`, as
    extraction writes one (spanning cells repeated where they span): it repeats the first
    cell, a cell spanning both rows ("Value"), and names the rest with words, not figures."""
    return (len(lower) == len(upper) >= 3 and lower[0] == upper[0] and lower != upper
            and not any(map(_DIGIT.search, lower)))


def spans_columns(upper: tuple[str, ...], lower: tuple[str, ...]) -> bool:
    """Whether a cell of `upper` spans columns that `lower` names apart ("1975–1979" over
    "Obverse | Reverse"): what makes a first row with figures in it a header's upper row."""
    return any(upper[j] == upper[j + 1] and lower[j] != lower[j + 1] for j in range(len(upper) - 1))


def _merged(upper: tuple[str, ...], lower: tuple[str, ...]) -> tuple[str, ...]:
    """A two-row header whose cells are in place (extraction keeps the empty cells that
    spans leave): each column named by both rows, an upper cell also naming the empty
    ones after it that the lower row names ("Pinnacle height" over "ft | m")."""
    out, carry = [], ""
    for j in range(max(len(upper), len(lower))):
        up = upper[j] if j < len(upper) else ""
        low = lower[j] if j < len(lower) else ""
        carry = up or carry
        top = up or (carry if low else "")
        out.append(f"{top} {low}" if top and low and top != low else top or low)
    return tuple(out)


def _spanned(table: Table, lower: tuple[str, ...]) -> tuple[str, ...]:
    """The columns of a two-row header whose upper row has one cell spanning the lower
    row's names: "Chart positions" over "US Country | US". That cell is where the columns
    under it hold one kind of value (figures, or text) most alike, the last on a tie; when
    the rows are not as wide as that makes the header, the upper row stays."""
    upper, m = table.columns, len(lower)
    widths = Counter(len(r) for r in table.rows)
    if not widths or widths.most_common(1)[0][0] != len(upper) - 1 + m:
        return upper
    full = [r for r in table.rows if len(r) == len(upper) - 1 + m]

    def alike(p: int) -> float:
        kinds = [_bare(r[j]) for r in full for j in range(p, p + m) if r[j]]
        return max(kinds.count(True), kinds.count(False)) / len(kinds) if kinds else 0.0

    p = max(range(len(upper)), key=lambda p: (alike(p), p))
    return (*upper[:p], *(f"{upper[p]} {name}" for name in lower), *upper[p + 1:])


def tables(text: str) -> list[Table]:
    """Every table of two or more columns in `text`, in page order."""
    return [t for block in _blocks(text) for t in _split(block)]
