"""Many tabs that do not all fit: the total goes to the tabs the question is about.

Ten long pages written here, each about one trade in one town, asked at 800 tokens a tab
(what `read_pages(budget_per_tab=800)` or a small window gives). A question about one of
them gets that tab most of the 8,000; the others keep their title and a few lines. A
comparison of two, a request to sum up every tab, and a question no tab matches still
share the total evenly; so do tabs that all fit."""

from __future__ import annotations

import io
import json
import re

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser.base import PageSnapshot
from chatagent.browser.static import StaticTab
from chatagent.context import ContextBuilder, PageContext
from chatagent.events import Done, TabShare
from chatagent.render import EventPrinter
from chatagent.scrub import Scrubber
from chatagent.testing.scripted_model import ScriptedChatModel, Text

TRADES = [("Arnhold", "bakers", "rye loaves and seed cakes"), ("Bexley", "coopers", "oak barrels and hoops"),
          ("Corvale", "weavers", "linen looms and flax"), ("Dunmere", "smiths", "horseshoes and ploughs"),
          ("Eastwick", "tanners", "hides and bark pits"), ("Fallow", "potters", "kilns and glazes"),
          ("Greythorn", "chandlers", "tallow candles and wicks"), ("Harrow", "masons", "quarry stone and lime"),
          ("Ivel", "brewers", "malt, hops and mash tuns"), ("Jessop", "dyers", "woad vats and madder")]


def trade_page(town: str, trade: str, goods: str, fact: str = "") -> str:
    """A long page about one trade: the same kind of paragraph, year by year, with `fact` halfway."""
    years = [f"<p>In {1700 + k} the {town} {trade} kept the guild's book of {goods}; the master of the "
             f"{trade} wrote down each apprentice taken on, the {goods} sold at the fair and the dues paid.</p>"
             for k in range(80)]
    body = "".join(years[:40]) + (f"<p>{fact}</p>" if fact else "") + "".join(years[40:])
    return (f"<!doctype html><html><head><title>The {trade} of {town}</title></head><body><main>"
            f"<h1>The {trade} of {town}</h1>{body}</main></body></html>")


FACT = "The coopers' hall burned down in the winter of 1741, and the guild met in the Swan inn for nine years."


def snapshots(fact_at: int = 1) -> list[PageSnapshot]:
    return [PageSnapshot(tab_id=str(i + 1), url=f"http://127.0.0.1/{i}", title=f"The {trade} of {town}",
                         html=trade_page(town, trade, goods, FACT if i == fact_at else ""))
            for i, (town, trade, goods) in enumerate(TRADES)]


async def build(question: str, snaps: list[PageSnapshot] | None = None, per_tab: int = 800) -> PageContext:
    return await ContextBuilder(budget_per_tab=per_tab).build([], question, snapshots=snaps or snapshots())


def charged(context: PageContext) -> list[int]:
    return [t.tokens for t in context.tabs]


async def test_the_tab_a_question_is_about_gets_what_the_others_do_not_need() -> None:
    context = await build("where did the coopers meet after their hall burned?")
    coopers, others = context.tabs[1], [t for i, t in enumerate(context.tabs) if i != 1]
    assert "Swan inn" in coopers.text
    assert coopers.tokens > 3 * 800, charged(context)
    for t in others:
        assert 0 < t.tokens <= 800 // 2 and t.title, (t.title, t.tokens)  # the title: in the tab's header
    assert sum(t.tokens + t.id_tokens for t in context.tabs) <= 1.5 * 8000


async def test_where_the_tab_sits_among_the_others_does_not_matter() -> None:
    context = await build("where did the coopers meet after their hall burned?", snapshots(fact_at=9))
    assert "Swan inn" in context.tabs[9].text and context.tabs[9].tokens > 3 * 800, charged(context)


async def test_a_comparison_of_two_tabs_gives_each_its_even_part() -> None:
    context = await build("compare what the brewers and the dyers kept in their guild books")
    brewers, dyers = context.tabs[8], context.tabs[9]
    assert brewers.tokens >= 700 and dyers.tokens >= 700, charged(context)
    assert all(t.tokens <= 800 // 2 for i, t in enumerate(context.tabs) if i not in (8, 9)), charged(context)


async def test_a_request_to_sum_up_every_tab_gives_each_its_overview() -> None:
    context = await build("summarize these pages")
    assert all(t.overview for t in context.tabs)
    assert all(500 <= t.tokens <= 800 for t in context.tabs), charged(context)


async def test_a_question_no_tab_matches_shares_the_total_evenly() -> None:
    context = await build("what is the weather like in Lisbon tomorrow?")
    assert all(500 <= t.tokens <= 800 for t in context.tabs), charged(context)


async def test_tabs_that_all_fit_are_each_sent_whole() -> None:
    context = await build("where did the coopers meet after their hall burned?", per_tab=6000)
    assert all(t.tokens == t.original_tokens for t in context.tabs), charged(context)


def static_tabs(fact_at: int = 1) -> list[StaticTab]:
    return [StaticTab(s.tab_id, s.url, s.html, title=s.title) for s in snapshots(fact_at)]


async def test_the_answer_says_how_much_of_each_tab_the_model_was_given() -> None:
    model = ScriptedChatModel(replies=[Text("In the Swan inn [Tab 2].")])
    agent = ChatAgent(model, static_tabs(), builder=ContextBuilder(budget_per_tab=800))
    events = [e async for e in agent.ask("where did the coopers meet after their hall burned?")]
    done = events[-1]
    assert isinstance(done, Done), done
    assert [s.tab_id for s in done.shares] == [str(i + 1) for i in range(10)]
    coopers = done.shares[1]
    assert coopers.title == "The coopers of Bexley" and 0 < coopers.share < 1
    assert all(s.share < coopers.share for i, s in enumerate(done.shares) if i != 1), [s.share for s in done.shares]
    sent = " ".join(str(m.content) for m in model.requests[0].messages)
    for s in done.shares:  # the counts are the context's: what the prompt holds of each tab
        assert 0 < s.tokens < s.page_tokens and not s.title_only
    assert "Swan inn" in sent
    # In the terminal: beside the tokens, how much of the tabs it read.
    err = io.StringIO()
    printer = EventPrinter(scrubber=Scrubber(), out=io.StringIO(), err=err, markdown=False)
    for e in events:
        printer(e)
    said = err.getvalue()
    assert re.search(r"10 tabs cut to fit: \d+% to \d+% of their text", said), said
    # As JSON (`ask --json`), the same figures, typed.
    wire = json.loads(done.to_json())["shares"][1]
    assert wire["tokens"] == coopers.tokens and wire["page_tokens"] == coopers.page_tokens
    assert wire["share"] == pytest.approx(coopers.tokens / coopers.page_tokens, abs=0.001)
    assert wire["title_only"] is False


def test_share_in_words() -> None:
    assert TabShare(tab_id="1", tokens=300, page_tokens=300).in_words() == "all of its text"
    assert TabShare(tab_id="1", tokens=140, page_tokens=1000).in_words() == "14% of its text"
    assert TabShare(tab_id="1", tokens=999, page_tokens=1000).in_words() == "99% of its text"  # never "100%" when cut
    assert TabShare(tab_id="1", tokens=3, page_tokens=1000).in_words() == "under 1% of its text"
    share = TabShare(tab_id="1", tokens=0, page_tokens=1000)
    assert share.in_words() == "title only" and share.title_only


def test_a_few_cut_tabs_are_named_one_by_one() -> None:
    err = io.StringIO()
    printer = EventPrinter(scrubber=Scrubber(), out=io.StringIO(), err=err, markdown=False)
    shares = [TabShare(tab_id="1", tokens=500, page_tokens=500), TabShare(tab_id="2", tokens=120, page_tokens=1000),
              TabShare(tab_id="3", tokens=0, page_tokens=900)]
    printer(Done(answer="Yes [Tab 1].", pass_=1, shares=shares))
    said = err.getvalue()
    assert "tab 2: 12% of its text, tab 3: title only" in said and "tab 1" not in said, said
    quiet = io.StringIO()
    EventPrinter(scrubber=Scrubber(), out=io.StringIO(), err=quiet, markdown=False)(
        Done(answer="Yes [Tab 1].", pass_=1, shares=shares[:1]))
    assert "of its text" not in quiet.getvalue()  # every tab whole: nothing to say


def test_many_cut_tabs_are_said_as_a_range_that_never_reads_zero() -> None:
    def said(shares: list[TabShare]) -> str:
        err = io.StringIO()
        EventPrinter(scrubber=Scrubber(), out=io.StringIO(), err=err, markdown=False)(
            Done(answer="Yes [Tab 1].", pass_=1, shares=shares))
        return " ".join(err.getvalue().split())

    tiny = [TabShare(tab_id=str(i), tokens=3, page_tokens=5000) for i in range(1, 4)]
    big = TabShare(tab_id="4", tokens=400, page_tokens=1000)
    bare = TabShare(tab_id="5", tokens=0, page_tokens=800)
    assert "5 tabs cut to fit: under 1% to 40% of their text, 1 of them title only" in said([*tiny, big, bare])
    assert "4 tabs cut to fit: under 1% of their text" in said([*tiny, tiny[0]])
    assert "4 tabs cut to fit: title only" in said([bare] * 4)
