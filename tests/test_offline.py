"""The offline `extractive` model: what a user asking about open tabs gets with no API key.

End to end on Chromium (the laptop fixtures) for what a user sees in pass 1; the rest
through the model's own path, the typed page context the agent binds to it."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from chatagent.agent import ChatAgent
from chatagent.context import PageContext, TabContext
from chatagent.events import Done
from chatagent.models import load_model
from chatagent.models.extractive import ExtractiveChatModel
from chatagent.offline.question import Question, quantities, split_parts
from chatagent.prompts import ESCALATION_MARKER, build_messages
from chatagent.tools import TOOL_SCHEMAS

from conftest import Site


def tab(n: int, title: str, text: str, **kw: object) -> TabContext:
    return TabContext(tab_id=str(n), url=f"http://127.0.0.1/{n}.html", title=title, text=text, **kw)  # type: ignore[arg-type]


def ask(question: str, *tabs: TabContext) -> str:
    """Pass 1, as the agent asks it: the prompt, and the typed context bound beside it."""
    context = PageContext(tabs=list(tabs), budget_per_tab=2000, question=question)
    return str(ExtractiveChatModel().invoke(build_messages(context, question), context=context).content)


async def agent_answer(site: Site, open_tabs, pages: list[str], question: str) -> Done:  # noqa: ANN001
    agent = ChatAgent(load_model("extractive"), await open_tabs([site.url(p) for p in pages]))
    events = [e async for e in agent.ask(question)]
    assert isinstance(events[-1], Done), events[-1]
    return events[-1]


# --- comparing tabs: a verdict, both values cited --------------------------------------------


@pytest.mark.asyncio(loop_scope="session")
async def test_which_laptop_is_cheaper_is_answered_with_a_verdict_citing_both_prices(site: Site, open_tabs) -> None:
    done = await agent_answer(site, open_tabs, ["laptop_aurora", "laptop_orion"], "Which one is cheaper?")
    first = done.answer.splitlines()[0]
    assert done.pass_ == 1
    assert first.startswith("Orion 14 is cheaper:"), done.answer
    assert "$1,099 [Tab 2]" in first and "$1,349.00 [Tab 1]" in first
    assert [c.tab_id for c in done.citations if not c.block] == ["1", "2"]
    assert {c.tab_id for c in done.citations if c.block} == {"1", "2"}  # each tab's quoted passage too


@pytest.mark.asyncio(loop_scope="session")
async def test_weights_in_pounds_and_kilograms_are_compared(site: Site, open_tabs) -> None:
    done = await agent_answer(site, open_tabs, ["laptop_aurora", "laptop_orion"], "Which of them is heavier?")
    assert done.answer.startswith("Orion 14 is heavier: 2.9 pounds [Tab 2] against 1.28 kg [Tab 1]."), done.answer


def test_lengths_in_different_units_and_dates_get_a_verdict() -> None:
    east = tab(1, "East Ferry Bridge", "# East Ferry Bridge\n\nThe bridge spans 1.2 km across the estuary. It opened on 3 May 1931.")
    west = tab(2, "Westmoor Viaduct (railway)", "# Westmoor Viaduct\n\nA stone viaduct 900 metres long, opened in 1874.")
    longer = ask("Which crossing is longer?", east, west)
    assert longer.startswith("East Ferry Bridge is longer: 1.2 km [Tab 1] against 900 metres [Tab 2]."), longer
    older = ask("Which of the two is older?", east, west)
    assert older.startswith("Westmoor Viaduct is older: 1874 [Tab 2] against 3 May 1931 [Tab 1]."), older


def test_no_verdict_without_a_value_on_each_tab() -> None:
    east = tab(1, "East Ferry Bridge", "# East Ferry Bridge\n\nThe bridge spans 1.2 km across the estuary.")
    west = tab(2, "Westmoor Viaduct", "# Westmoor Viaduct\n\nA stone viaduct over the river, much admired.")
    answer = ask("Which crossing is longer?", east, west)
    assert " is longer:" not in answer


# --- questions asked at once -----------------------------------------------------------------


@pytest.mark.asyncio(loop_scope="session")
async def test_each_part_of_a_two_part_question_is_answered_or_said_to_be_missing(site: Site, open_tabs) -> None:
    done = await agent_answer(site, open_tabs, ["laptop_orion"], "How much does it cost, and what is the warranty?")
    assert done.pass_ == 1
    assert "$1,099" in done.answer
    assert done.answer.endswith("The page does not say what the warranty is."), done.answer


def test_both_parts_found_are_both_quoted() -> None:
    page = tab(1, "Harbour kettle", "# Harbour kettle\n\nPrice: $49.00\n\nWarranty: 2 years from the day of purchase.\n\n"
                                   "Capacity: 1.7 litres")
    answer = ask("what does the kettle cost and how long is the warranty", page)
    assert "$49.00" in answer and "2 years from the day of purchase" in answer
    assert "does not say" not in answer


def test_a_question_is_split_into_parts_only_where_each_part_asks() -> None:
    assert split_parts("How much is it, and what is the warranty?") == ["How much is it", "what is the warranty"]
    assert split_parts("which towns lie between the river and the hills?") == [
        "which towns lie between the river and the hills?"]
    assert split_parts("who sang and who played drums") == ["who sang", "who played drums"]


# --- one set of words for numbers, units and grades ------------------------------------------


def test_quantities_read_units_durations_and_dates() -> None:
    read = {(q.dimension, round(q.value, 3)) for q in quantities(
        "It lasted 11 hours 5 minutes, weighs 2 lb, costs €1.5 million and shipped on March 3, 2024.")}
    assert read == {("duration", 39900.0), ("weight", 907.184), ("money", 1_500_000.0), ("time", 20240303.0)}
    assert Question.parse("Which is more expensive?").direction == (("money",), 1)
    assert Question.parse("which one came out first").direction == (("time",), -1)


# --- one page: passages and tables -----------------------------------------------------------

ROUTES = """# Cycle routes

| Route | Length | Surface | Opened |
|---|---|---|---|
| Canal towpath | 14 km | gravel | 1998 |
| Orchard loop | 31 km | tarmac | 2004 |
| Quarry climb | 9 km | gravel | 2011 |
| Coast road | 22 km | tarmac | 1992 |
"""


def test_a_table_answers_which_is_longest_and_which_pass_a_test() -> None:
    routes = tab(1, "Cycle routes", ROUTES)
    longest = ask("Which route is the longest?", routes)
    assert "Orchard loop" in longest and "Quarry climb" not in longest
    over = ask("Which routes are longer than 20 km?", routes)
    assert "Orchard loop" in over and "Coast road" in over and "Canal towpath" not in over
    gravel = ask("How many routes have a gravel surface?", routes)
    assert "2 rows" in gravel


CLUBS = """# Club season

| Club | City | Wins | Titles |
|---|---|---|---|
| Harbour Rovers | Portvale | 12 | 2 |
| Mill Lane | Easton | 7 | 0 |
| Ridge United | Portvale | 15 | 3 |
| Old Forge | Westby | 3 | 0 |
"""


def test_a_table_answers_which_rows_have_none_of_a_figure() -> None:
    clubs = ask("Which clubs have no titles?", tab(1, "Club season", CLUBS))
    assert "2 rows" in clubs and "Mill Lane" in clubs and "Old Forge" in clubs and "Ridge United" not in clubs


def test_a_table_sets_aside_the_rows_not_asked_about() -> None:
    clubs = ask("Which clubs are not based in Portvale?", tab(1, "Club season", CLUBS))
    assert "Mill Lane" in clubs and "Old Forge" in clubs and "Harbour Rovers" not in clubs


def test_a_figure_of_the_row_named_is_judged_against_the_questions_number() -> None:
    clubs = tab(1, "Club season", CLUBS)
    assert ask("Is Mill Lane above or below 10 wins?", clubs).startswith("Below: Wins is 7")
    assert ask("Did Old Forge have more than 5 wins?", clubs).startswith("No: Wins is 3")
    assert ask("Did Ridge United get at least 15 wins?", clubs).startswith("Yes: Wins is 15")


def test_two_rows_figures_are_compared_subtracted_and_added() -> None:
    clubs = tab(1, "Club season", CLUBS)
    assert ask("How many more wins did Ridge United have than Mill Lane?", clubs).startswith("Difference: 8, of Wins 15")
    assert ask("Did Old Forge have more wins than Mill Lane?", clubs).startswith("No: Mill Lane: Wins 7, against 3")
    assert ask("Which club has more titles, Harbour Rovers or Mill Lane?", clubs).startswith("Harbour Rovers: Titles 2")
    assert ask("What were the wins of Harbour Rovers and Old Forge combined?", clubs).startswith("Together: 15")
    assert ask("Which club won more titles in total, Mill Lane or Ridge United?", clubs).startswith("Ridge United: Titles 3")
    assert ask("What is the total difference in wins of Old Forge and Mill Lane?", clubs).startswith("Difference: 4")


def test_rows_are_judged_by_the_named_rows_figure_or_value() -> None:
    clubs = tab(1, "Club season", CLUBS)
    ahead = ask("Which clubs had more wins than Harbour Rovers?", clubs)
    assert "Ridge United" in ahead and "Mill Lane" not in ahead and "Old Forge" not in ahead
    same = ask("How many clubs play in the same city as Ridge United?", clubs)
    assert "1 row" in same and "Harbour Rovers" in same and "Mill Lane" not in same


def test_a_column_of_words_is_tallied() -> None:
    clubs = tab(1, "Club season", CLUBS)
    assert ask("Which city is listed most often?", clubs).startswith("Portvale: 2 of 4 rows (City)")
    assert ask("What tally of titles is the most common among the clubs?", clubs).startswith("0: 2 of 4 rows (Titles)")
    assert ask("How many different cities do the clubs come from?", clubs).startswith("3 different City")


def test_two_rows_named_with_a_word_in_common_are_both_shown() -> None:
    squad = """# Relay squad

| Runner | Club | Height |
|---|---|---|
| Maria Luisa Santos Vela | Northgate | 1.71 |
| Ines Vela Ortiz | Riverside | 1.78 |
| Carla Mendes | Northgate | 1.65 |
"""
    said = ask("Who is taller, Maria Luisa Santos Vela or Ines Vela Ortiz?", tab(1, "Relay squad", squad))
    assert "1.71" in said and "1.78" in said and "Carla" not in said


def test_a_passage_is_quoted_with_its_tab() -> None:
    page = tab(1, "Greyfield library", "# Greyfield library\n\nThe reading room seats 120 people.\n\n"
                                      "Opening hours: Monday to Friday, 9:00–17:30.")
    # Cited by its block (the title line is the tab's, not a block): [1.1].
    assert ask("how many people fit in the reading room", page) == "The reading room seats 120 people. [1.1]"


def test_the_page_itself_by_its_markup() -> None:
    page = tab(1, "Notes on tides", "# Notes on tides\n\nTides rise twice a day.", authors=["Ines Marlow"],
               published="2024-06-02")
    answer = ask("Who wrote this and when was it published?", page)
    assert "Ines Marlow" in answer and "2 June 2024" in answer


# --- asking for the browser, and pass 2 from typed tool results --------------------------------


def test_nothing_matching_and_visual_questions_ask_for_the_browser() -> None:
    page = tab(1, "Greyfield library", "# Greyfield library\n\nThe reading room seats 120 people.")
    assert ask("Who designed the lighthouse?", page).startswith(ESCALATION_MARKER)
    assert ask("What does the logo look like?", page).startswith(ESCALATION_MARKER)


def test_pass_two_answers_from_a_re_read_tab_given_as_a_typed_result() -> None:
    old = tab(1, "Greyfield library", "# Greyfield library\n\nThe reading room seats 120 people.")
    question = "Who designed the lighthouse?"
    context = PageContext(tabs=[old], budget_per_tab=2000, question=question)
    fresh = old.model_copy(update={"text": "# Greyfield library\n\nThe lighthouse was designed by Agnes Trevelyan."})
    messages = [
        *build_messages(context, question, tools=True),
        AIMessage("", tool_calls=[{"name": "refresh_browser_state_tool", "args": {"tab_id": "1"}, "id": "c1",
                                   "type": "tool_call"}]),
        # Its words are the tool's report; the page's text is only in the typed artifact.
        ToolMessage("Tab 1 re-read; its fresh text follows.", tool_call_id="c1", artifact=fresh),
    ]
    reply = ExtractiveChatModel().bind_tools(list(TOOL_SCHEMAS)).invoke(messages, context=context)
    assert not reply.tool_calls and "designed by Agnes Trevelyan. [1.1]" in str(reply.content)


def test_without_the_typed_context_the_model_says_what_it_needs() -> None:
    with pytest.raises(TypeError, match="context=PageContext"):
        ExtractiveChatModel().invoke("How much is it?")



@pytest.mark.asyncio(loop_scope="session")
async def test_the_price_asked_for_is_not_followed_by_another_items_price(site: Site, open_tabs) -> None:
    """A list item is its words, not its bullet and dashes: an accessory's short
    "- Sleeve — $39.00" is not a second passage worth quoting beside the laptop's price."""
    done = await agent_answer(site, open_tabs, ["product"], "How much is it?")
    assert "$1,349.00" in done.answer and "$39.00" not in done.answer, done.answer
