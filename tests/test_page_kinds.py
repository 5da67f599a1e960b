"""Pages of every kind through real Chromium → extraction → ContextBuilder: what a
question is about reaches the model wherever the page keeps it (a reply, a spec
table, a product grid, a pricing carousel, the footer), and page furniture
(menus, consent banners) does not, even when the question names its words."""

from __future__ import annotations

import pytest

from chatagent.browser.base import Tab
from chatagent.context import ContextBuilder, TabContext
from chatagent.extraction import Extractor, _parse
from chatagent.page_lines import read_lines

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXTRACTOR = Extractor()


async def _one(open_tabs, url: str, question: str | None = None, budget: int = 2000) -> TabContext:
    tabs = await open_tabs([url], timeout_s=15)
    assert all(isinstance(t, Tab) for t in tabs), tabs
    (tc,) = (await ContextBuilder(EXTRACTOR, budget_per_tab=budget).build(tabs, question)).tabs
    assert tc.ok, tc.error
    return tc


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _after(lines: list[str], first: str, then: str, within: int = 3) -> bool:
    """Whether a line containing `then` follows one containing `first`, within a few lines."""
    return any(first in line and any(then in later for later in lines[i + 1 : i + 1 + within])
               for i, line in enumerate(lines))


async def test_the_answer_in_a_forum_thread_s_third_reply_reaches_the_model_with_who_wrote_it(
    site: Site, open_tabs
) -> None:
    # The replies sit in a comments section, which main-text extraction drops whole.
    tc = await _one(open_tabs, site.url("forum_thread"), "what did the pro say to change in the thermostat?")
    assert "set the cycle rate to 2 cycles per hour" in tc.text
    lines = _lines(tc.text)
    assert _after(lines, "MN_tech_Rosa", "Nine times out of ten")  # the reply under its author's name
    # The original poster's later replies keep their own name above them, although the first post has it too.
    assert _after(lines, "dan_in_duluth", "Well that was embarrassing")
    assert "Log in" not in tc.text and "Heating & cooling" not in tc.text  # the site's menu and breadcrumbs


async def test_a_page_that_fits_its_budget_is_sent_whole(site: Site, open_tabs) -> None:
    for question in (None, "did the fix work?"):
        tc = await _one(open_tabs, site.url("forum_thread"), question)
        assert not tc.truncated and not tc.selected and tc.tokens == tc.original_tokens < 2000
        for said in ("My three-year-old air-source heat pump", "look at the outdoor coil", "Coil looks clean",
                     "Nine times out of ten", "Well that was embarrassing"):
            assert said in tc.text, said
        assert "left out" not in tc.text


async def test_a_product_page_s_spec_table_and_returns_block_reach_the_model(site: Site, open_tabs) -> None:
    tc = await _one(open_tabs, site.url("product_specs"), "how heavy is it and can i send it back after using it")
    assert "|Weight|1.9 lb (860 g)|" in tc.text  # the spec table stays a table, each value beside its name
    assert "Used items can be returned for store credit with a 15% restocking fee." in tc.text
    # Where the returns block sits on the page goes with it.
    assert _after(_lines(tc.text), "Shipping & returns", "15% restocking fee", within=4)


async def test_a_listing_of_40_items_keeps_each_item_with_its_price(site: Site, open_tabs) -> None:
    tc = await _one(open_tabs, site.url("catalogue"))
    lines = _lines(tc.text)
    for name, price in (("Arden Arc Lamp", "$24.99"), ("Juniper Clamp Lamp", "$47.99"), ("Juniper Swing Lamp", "$117.99")):
        assert _after(lines, name, price, within=1), name
    assert sum(line.endswith(" Lamp") for line in lines) == 40
    # Cut to a small budget, the question still finds its item far down the grid.
    small = await _one(open_tabs, site.url("catalogue"), "how much is the iris swing lamp", budget=300)
    assert small.selected and small.tokens <= 300
    assert _after(_lines(small.text), "Iris Swing Lamp", "$80.99", within=1)


async def test_a_service_page_s_plans_and_contact_details_reach_the_model(site: Site, open_tabs) -> None:
    tc = await _one(open_tabs, site.url("service_plans"), "how much is the seasonal plan and when can i call")
    lines = _lines(tc.text)
    for plan, price in (("One-time", "$189"), ("Seasonal", "$149"), ("Monthly", "$99")):
        assert _after(lines, plan, price, within=1), plan
    # In the site's footer, beside its links: the page's own details, not furniture.
    assert "Office hours: Mon–Fri 8:00–17:30, Sat 9:00–13:00" in tc.text and "(555) 201-9944" in tc.text
    assert "Sitemap" not in tc.text


@pytest.mark.parametrize("question", [None, "do you clean gutters or solar panels, and do you use cookies?"])
async def test_a_cookie_banner_and_a_mega_menu_do_not_reach_the_model(site: Site, open_tabs, question) -> None:
    # The question names the menu's words: furniture stays out however well it matches.
    tc = await _one(open_tabs, site.url("service_plans"), question)
    for furniture in ("We use cookies", "Accept all", "Reject all", "Manage preferences", "Gutter clearing",
                      "Solar panel rinsing", "Rope-access facades", "Homeowners", "Why ClearPane", "Careers"):
        assert furniture not in tc.text, furniture
    assert "$149" in tc.text


async def test_furniture_is_told_by_structure_not_by_words() -> None:
    page = """<html><body>
    <header><a href="/">Acme</a> <a href="/shop">Shop</a><p>Open daily 9–5</p>
      <div><a href="https://maps.example.org/?q=12+Mill+Road">12 Mill Road, Springfield</a></div>
      <div><a href="https://group.example.org/">Our parent company</a></div></header>
    <nav class="main-nav"><span>Our range</span> <a href="/a">Anvils</a>
      <div class="dropdown">Every anvil is forged from a single block of steel and tested to 40 tonnes.</div></nav>
    <main><h1>Anvils</h1><h2>Sizes</h2><p>Our range starts at 20 kg.</p><div><button>Add to cart</button></div>
      <div><button>Why are your anvils heavier than others?</button></div></main>
    <footer><a href="/privacy">Privacy</a><p>© 2026 Acme Ltd</p><p>Call <a href="tel:+15550100">555-0100</a></p></footer>
    </body></html>"""
    lines = read_lines(_parse(page), "https://www.acme.test/anvils")
    furniture = set(lines.furniture)
    content = set(lines.content)
    # Site links, a link off the site that names no figure, a menu's label, a copyright
    # notice and a lone control: furniture.
    for k in ("acme shop", "our parent company", "our range anvils", "privacy", "2026 acme ltd", "add to cart"):
        assert k in furniture, k
    # A landmark's own details (an address linked to a map, a phone number), a drop-down's
    # answer, a long control: content.
    for k in ("open daily 9 5", "12 mill road springfield", "call 555 0100",
              "every anvil is forged from a single block of steel and tested to 40 tonnes",
              "why are your anvils heavier than others", "our range starts at 20 kg"):
        assert k in content, k
    assert lines.paths["our range starts at 20 kg"] == [("Sizes",)]  # below the page's title
    assert {"anvils", "sizes"} <= lines.headings


async def test_a_page_on_one_line_keeps_the_part_around_what_the_question_matches(open_tabs, tmp_path) -> None:
    # Half a megabyte of text in one paragraph with no sentence end, the fact 90% of the way down:
    # kept whole it could only be dropped whole (18 tokens of it were given, without the fact).
    words = "harbour ledger tonnage crane berth pier quay vessel cargo tide".split()
    filler = lambda n, k: " ".join(words[(i * 7 + k) % len(words)] for i in range(n))  # noqa: E731
    fact = "the spare key of the pump house hangs behind the blue door"
    page = tmp_path / "oneline.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>Harbour log</title></head><body><p>{filler(72000, 1)} "
                    f"{fact} {filler(8000, 3)}</p></body></html>")
    tc = await _one(open_tabs, str(page), "where does the spare key of the pump house hang?")
    assert tc.selected and 1000 < tc.tokens <= 2000 < tc.original_tokens
    assert fact in tc.text and "left out" in tc.text
