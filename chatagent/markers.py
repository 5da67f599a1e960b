"""The markers the budgeter writes into a tab's text where it leaves text out,
each written and recognised here only, so that what writes a marker and what
reads it cannot drift apart.

- `omitted_marker`: "[… 1,397 tokens less related to the question left out …]"
  (or "… further down the page …"), a line of its own where text was cut.
- `selection_marker`: the line after the text the person selected, which
  leads its tab's text, before the page around it.
- `overview_marker`: "the whole page, 9 of 14 parts: 6,210 tokens left out", what the
  prompt says in the header of a tab given as an overview (`overview.py`, from the tab's
  typed fields, not in its text), whose gaps are each a line "[…]" (`GAP`).
- `columns_marker`: "[table shown with 2 of 9 columns: Name, Height; 5,120
  tokens of other columns left out]", the line above a table cut to the
  columns a question matches.

`budget.py` writes them; `tables.py` and the offline answerer recognise them
(`is_marker`). Standard library only, so a reader need not load the budgeter.
"""

from __future__ import annotations

import re


def omitted_marker(tokens: int, *, selected: bool) -> str:
    """`selected`: text was left out for being less related to the question
    (else: for being further down the page than the budget reaches)."""
    why = "less related to the question" if selected else "further down the page"
    return f"[… {tokens:,} tokens {why} left out …]"


def selection_marker() -> str:
    """The line between the text the person selected, which leads its tab's
    text, and the rest of the page (the parts around the selection first)."""
    return "[… above: the text the person selected on this page; below: the page around it …]"


# A gap in an overview: its leading marker says how much was left out in all.
GAP = "[…]"


def overview_marker(shown: int, parts: int, tokens: int, *, whole: bool = True) -> str:
    """What a tab's header says of a page given as an overview of `shown` of its `parts` parts,
    `tokens` left out (`whole`: of all of the page; else of the parts a request named)."""
    what = "the whole page" if whole else "the parts asked about"
    which = "one part" if parts == 1 else f"all {parts:,} parts" if shown == parts else f"{shown:,} of {parts:,} parts"
    return f"{what}, {which}: {tokens:,} tokens left out"


def columns_marker(shown: list[str], width: int, tokens: int) -> str:
    names = ", ".join(shown)
    return f"[table shown with {len(shown)} of {width} columns: {names}; {tokens:,} tokens of other columns left out]"


_OMITTED = re.compile(r"\[… [\d,]+ tokens (?:less related to the question|further down the page) left out …\]")
_COLUMNS = re.compile(r"\[table shown with \d+ of \d+ columns: .*; [\d,]+ tokens of other columns left out\]")


def is_omitted_marker(line: str) -> bool:
    return _OMITTED.fullmatch(line.strip()) is not None


def is_columns_marker(line: str) -> bool:
    return _COLUMNS.fullmatch(line.strip()) is not None


def is_marker(line: str) -> bool:
    """Whether `line` is a marker the budgeter wrote (any kind), not page text."""
    return (is_omitted_marker(line) or is_columns_marker(line)
            or line.strip() in (selection_marker(), GAP))
