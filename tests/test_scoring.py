"""The benchmarks' answer matching: what counts as an answer being in a text."""

from __future__ import annotations

import pytest

from benchmarks.scoring import answer_in_context, snippet_check, words


@pytest.mark.parametrize(
    ("gold", "text"),
    [
        ("November 10", "|1|Sunday|November 10|3:05pm|at Las Vegas Legends|"),  # a time in the next cell
        ("6 December 2010", "Released on December 6, 2010 in Europe."),
        ("December 6, 2010", "|Single|6 December 2010|"),
        ("December 6, 2010", "|Single|December 6|2010|"),  # day and year in cells side by side
        ("1349", "It costs $1,349.00 today."),
        ("Italy 3", "|Italy|3|"),  # a phrase across cells still reads across them
    ],
)
def test_the_answer_is_found_however_the_page_writes_it(gold: str, text: str) -> None:
    assert answer_in_context([gold], text)


def test_whole_words_do_not_match_inside_numbers_and_lists_need_every_value() -> None:
    assert answer_in_context(["3"], "|2013|", whole_words=False)
    assert not answer_in_context(["3"], "|2013|", whole_words=True)
    assert not answer_in_context("Oslo|Bergen", "Oslo is the capital.")
    assert answer_in_context("Oslo|Bergen", "|Oslo|Bergen|")


def test_table_pipes_are_neither_words_nor_part_of_snippets() -> None:
    assert words("|Name|Total|\n|Ann|3|") == ["name", "total", "ann", "3"]
    check = snippet_check("|Opening hours|9 to 5|", ["opening hours 9 to 5"], ["closed"])
    assert check.passed
