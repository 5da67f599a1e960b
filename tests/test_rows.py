"""Table rows: what extraction writes, budgeting and the extractive model read back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chatagent.rows import has_rows, is_row, join_row, row_cells

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


@given(st.lists(st.sampled_from(["|a|b|", "  |x|", "text", "", " ", "a|b", "\t|c|", "- |d|"]), max_size=6))
def test_has_rows_is_any_line_a_row(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert has_rows(text) == any(is_row(line) for line in text.split("\n"))
