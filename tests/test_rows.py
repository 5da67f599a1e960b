"""Table rows: what extraction writes, budgeting and the extractive model read back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chatagent.rows import is_row, join_row, row_cells

# A cell as extraction writes it: no line break, a pipe inside it escaped.
_cell = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12).map(
    lambda c: c.replace("\\", "/").replace("|", "\\|")
)


@given(st.lists(_cell, min_size=1, max_size=8))
def test_a_written_row_reads_back_as_the_same_cells(cells: list[str]) -> None:
    row = join_row(cells)
    assert is_row(row)
    assert row_cells(row) == cells


def test_an_escaped_pipe_stays_inside_its_cell() -> None:
    assert row_cells("|A\\|B|C|") == ["A\\|B", "C"]
    assert row_cells("  |x|y\\||  ") == ["x", "y\\|"]
