"""Table rows as extraction writes them ("|a|b|c|", a pipe inside a cell escaped
as "\\|"), and as budgeting and the extractive model read them back."""

from __future__ import annotations

import re
from collections.abc import Iterable

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_ANY_ROW = re.compile(r"^\s*\|", re.M)


def is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def has_rows(text: str) -> bool:
    """Whether any line of `text` is a row, without splitting it into lines."""
    return _ANY_ROW.search(text) is not None


def row_cells(line: str) -> list[str]:
    """The cells of a row as written, spaces and all."""
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return _CELL_SPLIT.split(row)


def join_row(cells: Iterable[str]) -> str:
    return "|" + "|".join(cells) + "|"
