"""Pages whose content sits in one oversized block, through real Chromium → extraction →
ContextBuilder (issue 52): a page laid out in a table (its whole text in one cell, which
extraction writes as one table row), a page whose text is one div of lines, a page on
one line. Whatever is asked, a page longer than its budget gets half of it at least, and
what the question asks reaches the model (`fixtures/make_oversized.py` writes the pages)."""

from __future__ import annotations

import pytest

from chatagent.browser.base import Tab
from chatagent.context import ContextBuilder, TabContext
from chatagent.extraction import Extractor

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXTRACTOR = Extractor()
BUDGET = 2000

# Page → (question, what must reach the model, or None where only the amount is checked).
ASKED = {
    "layout_table": [
        ("what baud rate should I use on a long cable?", "set the serial port to 4800 baud"),  # its third paragraph
        ("which coin cell keeps the clock running?", "CR2477 lithium coin"),  # three quarters down
        ("where are the downloads?", None),  # only the menu has its words
        ("how heavy is it?", None),  # none of its words on the page: an overview
        ("summarize this", None),  # the whole page: an overview
        (None, "set the serial port to 4800 baud"),  # the page's start
    ],
    "one_div": [
        ("when is the water turned off for the winter?", "first Sunday of November"),
        ("where is the spare key to the seed store?", "in the blue tin under the bench by gate C"),
        ("summarize this", None),
        (None, "first Sunday of November"),
    ],
    "one_line": [
        ("where can I take a bicycle across to the other bank?", "over the Ferrin roving bridge"),
        ("does the toll house sell tea?", "sells tea on weekends from March to October"),
        ("how much does parking cost?", None),
        ("summarize this", None),
        (None, "over the Ferrin roving bridge"),
    ],
}


async def _contexts(open_tabs, url: str, questions: list[str | None]) -> list[TabContext]:
    tabs = await open_tabs([url], timeout_s=15)
    assert all(isinstance(t, Tab) for t in tabs), tabs
    builder = ContextBuilder(EXTRACTOR, budget_per_tab=BUDGET)
    out = []
    for question in questions:
        (tc,) = (await builder.build(tabs, question)).tabs
        assert tc.ok, tc.error
        out.append(tc)
    return out


@pytest.mark.parametrize("page", sorted(ASKED))
async def test_a_page_in_one_oversized_block_gets_half_its_budget_and_the_answer(
    site: Site, open_tabs, page: str
) -> None:
    asked = ASKED[page]
    contexts = await _contexts(open_tabs, site.url(page), [q for q, _ in asked])
    for (question, answer), tc in zip(asked, contexts):
        assert tc.original_tokens > BUDGET, page
        assert BUDGET // 2 <= tc.tokens <= BUDGET, (page, question, tc.tokens, tc.scope)
        if answer is not None:
            assert answer in tc.text, (page, question)


async def test_a_layout_table_s_text_is_no_table_row_and_its_menu_no_answer(site: Site, open_tabs) -> None:
    (fact, menu) = await _contexts(open_tabs, site.url("layout_table"),
                                   ["what baud rate should I use on a long cable?", "where are the downloads?"])
    # The manual's text is cut into passages: no line of it is a row holding all of the page.
    assert not any(line.startswith("|") and "baud" in line for line in fact.text.splitlines())
    assert fact.selected and "left out" in fact.text
    # The question that matches only the menu gets the manual around it, not the menu's letters alone.
    assert "The PX-40 is an eight-channel data logger" in menu.text
