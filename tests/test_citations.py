"""Citations to passages: the model sees each block of a tab's text with its id
("[1.4]"), cites ids, and `done` carries each as a verbatim quote of the page
with a link that opens the page at it. Through the real Gemini client against
the local Gemini-compatible server, on real Chromium."""

from __future__ import annotations

import re
import threading

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser.playwright import PlaywrightTab
from chatagent.cache import AnswerCache
from chatagent.events import Done, Event
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, TextReply

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _agent(gemini: GeminiServer, tabs: list, **options: object) -> ChatAgent:
    model = load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url))
    return ChatAgent(model, tabs, **options)


async def _done(agent: ChatAgent, question: str) -> Done:
    events: list[Event] = [e async for e in agent.ask(question)]
    assert isinstance(events[-1], Done), events[-1]
    return events[-1]


def _id_of(request: RecordedRequest, words: str) -> str:
    """The id the model was shown in front of the line holding `words`."""
    m = re.search(rf"^\[(\d+\.\d+)\] [^\n]*{re.escape(words)}", request.text(), re.M)
    assert m, f"no block holds {words!r}"
    return m.group(1)


def _normalised(text: str) -> str:
    return " ".join(text.split())


async def _page_text(tab: PlaywrightTab) -> str:
    return _normalised((await tab.snapshot()).visible_text)


async def test_cited_blocks_of_two_tabs_become_verbatim_quotes_with_links_to_them(
    gemini: GeminiServer, site: Site, open_tabs,
) -> None:
    tabs = await open_tabs([site.url("ferry_timetable"), site.url("coastal_bus")])

    def reply(request: RecordedRequest) -> TextReply:
        dogs, row, pass_ = (_id_of(request, w) for w in ("dogs travel for", "|06:15|", "Day pass"))
        return TextReply(text=f"Dogs pay €2 on board [{dogs}], the first boat leaves at 06:15 [{row}], and a "
                              f"day pass for €7 covers both the bus and the ferry [{pass_}][7.99].")

    gemini.responder = reply
    done = await _done(_agent(gemini, tabs), "Can I bring my dog, when is the first boat, is there a day pass?")
    request = gemini.generate_requests[0]
    assert "[1.4]" in request.system_text() and "[Tab N]" in request.system_text()  # the model is told how to cite
    # The answer keeps the ids as the model wrote them; the unknown one is dropped and counted, never a source.
    assert "[7.99]" in done.answer and done.dropped_citations == 1
    assert [c.block for c in done.citations] == [_id_of(request, w) for w in ("dogs travel for", "|06:15|", "Day pass")]
    dogs, row, day_pass = done.citations
    ferry, bus = site.url("ferry_timetable"), site.url("coastal_bus")
    # A long paragraph is quoted by the sentence the claim matches, verbatim; "-", "," and "€" encoded in its link.
    assert dogs.tab_id == "1" and dogs.title.startswith("Brenna lake ferry")
    assert dogs.quote == "Bicycles ride free on weekdays, and dogs travel for €2 - pay the deckhand on board."
    assert dogs.url == f"{ferry}#:~:text=Bicycles%20ride%20free%20on,the%20deckhand%20on%20board."
    # A table row reads as the page shows its cells, no pipes; its link runs from its first cell to its last.
    assert row.quote == "06:15 06:55 North-2" and "|" not in row.quote
    assert row.url == f"{ferry}#:~:text=06%3A15,North%2D2"
    assert day_pass.tab_id == "2" and day_pass.quote == "Day pass: €7, valid on bus 7 and on the Brenna ferry"
    assert day_pass.url == f"{bus}#:~:text=Day%20pass%3A%20%E2%82%AC7%2C%20valid%20on%20bus%207%20and%20on%20the%20Brenna%20ferry"
    pages = {"1": await _page_text(tabs[0]), "2": await _page_text(tabs[1])}
    for c in done.citations:
        assert _normalised(c.quote) in pages[c.tab_id], c


async def test_a_whole_tab_citation_is_unchanged_and_a_cached_answer_keeps_its_citations(
    gemini: GeminiServer, site: Site, open_tabs,
) -> None:
    tabs = await open_tabs([site.url("ferry_timetable"), site.url("coastal_bus")])
    gemini.responder = lambda request: TextReply(
        text=f"It takes 1 hour 25 minutes [Tab 2] [{_id_of(request, 'whole trip takes')}] [2.404].")
    agent = _agent(gemini, tabs, cache=AnswerCache())
    first = await _done(agent, "How long is the bus ride?")
    whole, passage = first.citations
    assert (whole.tab_id, whole.block, whole.quote, whole.url) == ("2", "", "", site.url("coastal_bus"))
    assert passage.quote == "The whole trip takes 1 hour 25 minutes, and buses leave every half hour from 06:00 to 23:30."
    again = await _done(agent, "How long is the bus ride?")
    assert again.cached and again.citations == first.citations and again.dropped_citations == 1


@pytest.mark.parametrize(("question", "quoted"), [
    ("how much does a dog pay on the ferry", "dogs travel for €2 - pay the deckhand on board"),
    ("when does the first ferry leave", "06:15 06:55 North-2"),
    ("how much is a day pass", "Day pass: €7, valid on bus 7 and on the Brenna ferry"),
])
async def test_the_offline_answerer_cites_the_blocks_it_quotes(site: Site, open_tabs, question: str, quoted: str) -> None:
    tabs = await open_tabs([site.url("ferry_timetable"), site.url("coastal_bus")])
    done = await _done(ChatAgent(load_model("extractive"), tabs), question)
    passages = [c for c in done.citations if c.block]
    assert passages and done.dropped_citations == 0
    assert all(f"[{c.block}]" in done.answer for c in passages)
    assert any(quoted in c.quote for c in passages), passages
    pages = {"1": await _page_text(tabs[0]), "2": await _page_text(tabs[1])}
    for c in passages:
        assert _normalised(c.quote) in pages[c.tab_id] and "#:~:text=" in c.url, c


async def test_a_tab_re_read_in_pass_2_numbers_its_blocks_after_those_the_model_was_given(site: Site, open_tabs) -> None:
    from chatagent.testing.gemini_server import FunctionCall, FunctionCallReply

    from chatagent.prompts import ESCALATION_MARKER

    bumped = threading.Event()
    seen: list[str] = []

    def respond(request: RecordedRequest) -> TextReply | FunctionCallReply:
        seen.append(request.text())
        if len(seen) == 1:
            bumped.wait(10)  # pass 1 answers once the page has changed under it
            return TextReply(text=f"{ESCALATION_MARKER} the status may be stale")
        if len(seen) == 2:
            return FunctionCallReply(calls=[FunctionCall("refresh_browser_state_tool", {"tab_id": "1"})])
        return TextReply(text=f"It has shipped [{_id_of(request, 'Status: shipped')}].")

    with GeminiServer(responder=respond, ttft_s=0.0, tokens_per_s=None) as gemini:
        [tab] = await open_tabs([site.url("changing")])
        assert isinstance(tab, PlaywrightTab)
        events: list[Event] = []
        async for event in _agent(gemini, [tab]).ask("Has the parcel shipped?"):
            events.append(event)
            if getattr(event, "type", "") == "pass_start" and event.pass_ == 1:  # type: ignore[attr-defined]
                await tab.page.evaluate("window.bump()")
                bumped.set()
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 2 and done.dropped_citations == 0
    first_ids = [int(i) for i in re.findall(r"^\[1\.(\d+)\] ", seen[0], re.M)]
    [passage] = [c for c in done.citations if c.block]
    assert int(passage.block.split(".")[1]) > max(first_ids), "no id names two passages in one request"
    assert "Status: shipped" in passage.quote and "Status: shipped" in await _page_text(tab)


# --- a quote is text the reader finds on the page ---------------------------------


def _lines_without_id(request: RecordedRequest) -> list[str]:
    return [line for line in request.text().split("\n") if line.strip() and not re.match(r"\[\d+\.\d+\] ", line)]


async def test_only_what_the_page_shows_is_quoted_and_what_it_hides_has_no_id(
    gemini: GeminiServer, site: Site, open_tabs,
) -> None:
    [tab] = await open_tabs([site.url("kayak_care")])

    def reply(request: RecordedRequest) -> TextReply:
        sealed, guarantee = (_id_of(request, w) for w in ("marine silicone", "guaranteed for five years"))
        return TextReply(text=f"Seal the fittings yearly [{sealed}]; the hull is guaranteed for five years [{guarantee}].")

    gemini.responder = reply
    done = await _done(_agent(gemini, [tab]), "How do I look after the kayak?")
    request = gemini.generate_requests[0]
    unnumbered = _lines_without_id(request)
    # The model still reads what the page collapses or shows otherwise, but cannot cite it:
    # a closed <details>' text, a paragraph the page shows in capitals, extraction's own heading.
    assert any(line.startswith("Store the kayak upside down") for line in unnumbered)
    assert any(line.startswith("keep the spray deck") for line in unnumbered)
    assert "## Other text on the page" in unnumbered
    sealed, guarantee = (c for c in done.citations if c.block)
    # Markdown's escapes are extraction's: the page shows three asterisks.
    assert sealed.quote == "Seal the deck fittings with marine silicone once a season, as the warranty asks.***"
    # A paragraph part of which the page hides (a stylesheet's display: none) quotes the part it shows.
    assert guarantee.quote == "The hull is guaranteed for five years against cracks in normal use."
    page = await _page_text(tab)
    for c in done.citations:
        assert _normalised(c.quote) in page, c


@pytest.mark.parametrize(("question", "answered", "quoted"), [
    # Read, answered, but not cited: the page collapses it.
    ("where should I store the kayak over winter", "upside down on padded racks", None),
    ("how long is the hull guaranteed", "five years", "The hull is guaranteed for five years against cracks in normal use."),
    ("how do I unpack the repair kit", "tar -xzf", "Unpack the repair kit with tar -xzf kit-*.tar.gz before your first trip"),
    ("what should I seal once a season", "marine silicone", "as the warranty asks.***"),
])
async def test_the_offline_answerer_quotes_only_what_the_page_shows(
    site: Site, open_tabs, question: str, answered: str, quoted: str | None,
) -> None:
    [tab] = await open_tabs([site.url("kayak_care")])
    done = await _done(ChatAgent(load_model("extractive"), [tab]), question)
    assert answered in done.answer
    passages = [c for c in done.citations if c.block]
    assert any(quoted in c.quote for c in passages) if quoted else not passages, passages
    page = await _page_text(tab)
    for c in passages:
        assert _normalised(c.quote) in page, c


async def test_a_term_and_its_value_are_one_passage(site: Site, open_tabs) -> None:
    [tab] = await open_tabs([site.url("laptop_aurora")])
    done = await _done(ChatAgent(load_model("extractive"), [tab]), "how heavy is it")
    [weight] = [c for c in done.citations if c.block]
    assert weight.quote == "Weight: 1.28 kg" and _normalised(weight.quote) in await _page_text(tab)
    # A text fragment's words never run across the page's blocks: the link names the term and the value.
    assert weight.url == f"{site.url('laptop_aurora')}#:~:text=Weight%3A,1.28%20kg"


async def test_a_listing_card_of_short_lines_is_one_passage_cited_by_one_id(
    gemini: GeminiServer, site: Site, open_tabs,
) -> None:
    # An id costs about as many tokens as a line of a card ("$129.00"): the card's lines share one.
    [tab] = await open_tabs([site.url("listing")])
    seen: list[list[tuple[str, str]]] = []

    def reply(request: RecordedRequest) -> TextReply:
        lines = [(m.group(1) or "", m.group(2)) for m in re.finditer(r"^(?:\[(\d+\.\d+)\] )?(.*)$", request.text(), re.M)]
        seen.append(lines)
        rating = next(i for i, (_, line) in enumerate(lines) if line == "4.3 ★ (642)")
        card = next(bid for bid, _ in reversed(lines[:rating + 1]) if bid)
        return TextReply(text=f"The Trailhead Low has 642 ratings [{card}].")

    gemini.responder = reply
    done = await _done(_agent(gemini, [tab]), "How many ratings does the Trailhead Low have?")
    lines = dict((line, bid) for bid, line in seen[0])
    # The card's name leads it with the id; its rating and price follow with none of their own.
    assert lines["Kestrel Outdoor"] and lines["4.3 ★ (642)"] == "" and lines["$129.00"] == "", seen[0]
    [card] = [c for c in done.citations if c.block]
    assert card.quote == "Kestrel Outdoor 4.3 ★ (642) $129.00"
    assert _normalised(card.quote) in await _page_text(tab)
    # Its words run across the page's blocks: the link names its first line and its last.
    assert card.url == f"{site.url('listing')}#:~:text=Kestrel%20Outdoor,%24129.00"
