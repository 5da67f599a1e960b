"""Browser faults and hostile pages, on real Chromium: a tab closed, crashed
or hung in the middle of a conversation or an answer, pages that are not
pages; and a page that tries to instruct the model. Each ends in a clear note
or error, and the other tabs keep working."""

from __future__ import annotations

import asyncio
import re
from contextlib import suppress

import pytest

import chatagent.browser.playwright as pw_backend
from chatagent.agent import MAX_TOOL_CALLS, MAX_TURNS, ChatAgent
from chatagent.browser.playwright import PlaywrightTab
from chatagent.errors import TabError
from chatagent.events import Done, ErrorEvent, Event, Note, ToolCall, ToolResult
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.gemini_server import (
    FunctionCall, FunctionCallReply, GeminiServer, RecordedRequest, Reply, TextReply,
)
from chatagent.tools import TOOL_NAMES

from conftest import HUGE_DEEP_FACT, HUGE_DEEP_QUESTION, HUGE_FACT, Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

NEED = f"{ESCALATION_MARKER} the answer is not in the page text"
PRICE_Q = "How much does the Aurora X14 Pro cost?"


async def ask(agent: ChatAgent, question: str) -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1 and isinstance(events[-1], (Done, ErrorEvent))
    return events


def notes(events: list[Event]) -> dict[str | None, str]:
    return {e.tab_id: e.text for e in events if isinstance(e, Note)}


def extractive(tabs: list) -> ChatAgent:
    return ChatAgent(load_model("extractive"), tabs)


async def test_a_tab_closed_between_questions_is_reported_and_the_others_answer(site: Site, open_tabs) -> None:
    tabs = await open_tabs([site.url("product"), site.url("article")])
    agent = extractive(tabs)
    assert isinstance((await ask(agent, PRICE_Q))[-1], Done)
    await tabs[1].close()
    events = await ask(agent, PRICE_Q)
    assert notes(events)["2"] == "Tab 2 was closed."
    done = events[-1]
    assert isinstance(done, Done) and "$1,349.00" in done.answer


async def _crash(tab: PlaywrightTab) -> None:
    cdp = await tab.page.context.new_cdp_session(tab.page)
    with suppress(Exception):  # the renderer dies before it can answer: no reply ever comes
        await asyncio.wait_for(cdp.send("Page.crash"), timeout=2)
    for _ in range(300):  # a generous bound: a busy machine is slow to report the crash
        if tab.crashed:
            break
        await asyncio.sleep(0.1)


async def test_a_crashed_tab_is_reloaded_once_and_said_so(site: Site, open_tabs) -> None:
    tabs = await open_tabs([site.url("product"), site.url("article")])
    crashed = tabs[1]
    assert isinstance(crashed, PlaywrightTab)
    agent = extractive(tabs)
    await _crash(crashed)
    events = await ask(agent, "When did construction of the tram line begin?")
    assert notes(events)["2"] == "Tab 2 had crashed; reloaded it."
    assert isinstance(events[-1], Done) and "2021" in events[-1].answer  # read from the reloaded tab
    # A page that crashes again is not reloaded in a loop: it is reported, the others answer.
    await _crash(crashed)
    events = await ask(agent, PRICE_Q)
    assert "crashed again" in notes(events)["2"]
    assert isinstance(events[-1], Done) and "$1,349.00" in events[-1].answer


async def test_a_tab_whose_page_hangs_is_given_up_on_and_the_others_answer(
    site: Site, open_tabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pw_backend, "SNAPSHOT_TIMEOUT_S", 1.0)
    tabs = await open_tabs([site.url("product"), site.url("article")])
    busy = tabs[1]
    assert isinstance(busy, PlaywrightTab)
    await busy.page.evaluate("setTimeout(() => { for (;;) {} }, 0)")  # its main thread never comes back
    events = await ask(extractive(tabs), PRICE_Q)
    assert "not responding" in notes(events)["2"]
    assert isinstance(events[-1], Done) and "$1,349.00" in events[-1].answer


async def test_a_tab_whose_page_loaded_slowly_is_given_longer_to_answer_before_it_is_given_up_on(
    site: Site, open_tabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine a slow load means a slow read: a tab whose page took 2 s to
    load is read though it stays busy longer than a quickly loaded tab would be waited for."""
    monkeypatch.setattr(pw_backend, "SNAPSHOT_TIMEOUT_S", 1.0)
    [tab] = await open_tabs([site.url("/delayed") + "?s=2"])
    assert isinstance(tab, PlaywrightTab)
    await tab.page.evaluate("setTimeout(() => { const end = Date.now() + 3000; while (Date.now() < end) {} }, 0)")
    assert "$1,349.00" in (await tab.snapshot()).visible_text


async def test_a_tab_whose_page_hung_while_it_loaded_is_given_up_on_as_soon_as_one_that_hangs_later(
    site: Site, open_tabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load cut short by the timeout says the page is slow, not the machine: no extra patience."""
    monkeypatch.setattr(pw_backend, "SNAPSHOT_TIMEOUT_S", 1.0)
    [tab] = await open_tabs([site.url("/hangs.html")], timeout_s=2)
    assert isinstance(tab, PlaywrightTab)
    with pytest.raises(TabError, match=r"not responding: its page has been busy for over 1 s\."):
        await tab.snapshot()


async def test_pages_that_are_not_pages_get_notes_and_the_good_tab_answers(
    site: Site, open_tabs, closed_port_url: str
) -> None:
    tabs = await open_tabs(
        [site.url("product"), site.url("/file.bin"), site.url("/404"), closed_port_url, site.url("/slow")],
        timeout_s=2,
    )
    events = await ask(extractive(tabs), PRICE_Q)
    by_tab = notes(events)
    assert "download" in by_tab["2"].lower()
    assert "404" in by_tab["3"]
    assert "refused" in by_tab["4"].lower() or "reach" in by_tab["4"].lower()
    assert "load" in by_tab["5"].lower()
    done = events[-1]
    assert isinstance(done, Done) and "$1,349.00" in done.answer
    assert [c.tab_id for c in done.citations] == ["1"]


@pytest.mark.slow
async def test_a_huge_page_gets_a_note_and_still_answers_next_to_a_normal_tab(site: Site, open_tabs) -> None:
    # 24k elements (1.1 MB of HTML): too big for main-text extraction, so its
    # visible text is used and the user is told; the other tab is unaffected.
    tabs = await open_tabs([site.url("product"), site.url("/huge.html")], timeout_s=20)
    agent = extractive(tabs)
    events = await ask(agent, PRICE_Q)
    tab2 = [e.text for e in events if isinstance(e, Note) and e.tab_id == "2"]
    assert any(n.startswith("This page is very large") and "MB of HTML" in n for n in tab2), tab2
    done = events[-1]
    assert isinstance(done, Done) and "$1,349.00" in done.answer
    events = await ask(agent, "What is the reserve for lot 77777?")
    done = events[-1]
    assert isinstance(done, Done) and "1,250 EUR" in done.answer and HUGE_FACT.split(" is ")[0] in done.answer
    assert {c.tab_id for c in done.citations} == {"2"}, "its sources: the huge page's passages, not the other tab"


@pytest.mark.slow
async def test_a_fact_deep_in_a_page_too_big_to_parse_is_answered_in_pass_1(site: Site, open_tabs) -> None:
    # The fact is 90% of the way down a page of 24k elements. The model answers only
    # from what it is sent: the page line naming a locker, else it asks for the
    # browser tools. The fact must reach pass 1, with no tools needed.
    def reads_the_page(req: RecordedRequest) -> Reply:
        line = next((line for line in req.text().splitlines() if "locker" in line), None)
        return TextReply(text=f"{line} [Tab 1]") if line else TextReply(text=NEED)

    (tab,) = await open_tabs([site.url("/huge_deep.html")], timeout_s=60)
    with GeminiServer(responder=reads_the_page, ttft_s=0.0, tokens_per_s=None) as gemini:
        agent = ChatAgent(load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url)), [tab])
        events = await ask(agent, HUGE_DEEP_QUESTION)
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 1 and HUGE_DEEP_FACT in done.answer
    assert {c.tab_id for c in done.citations} == {"1"} and not any(isinstance(e, ToolCall) for e in events)
    assert any(isinstance(e, Note) and "selected from all of it" in e.text for e in events)


async def test_a_tab_closed_during_an_answer_is_reported_to_the_model(site: Site, open_tabs) -> None:
    tabs = await open_tabs([site.url("product"), site.url("lazy")])
    doomed = tabs[1]
    assert isinstance(doomed, PlaywrightTab)
    loop = asyncio.get_running_loop()

    def respond(req: RecordedRequest) -> Reply:
        if not req.tool_names():
            return TextReply(text=NEED)
        if not req.function_responses():
            # The user closes tab 2 just as the model decides to scroll it.
            asyncio.run_coroutine_threadsafe(doomed.page.close(), loop).result(timeout=10)
            return FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "2", "direction": "down"})])
        return TextReply(text="Tab 2 was closed before I could read further [Tab 1].")

    with GeminiServer(responder=respond, ttft_s=0.0, tokens_per_s=None) as gemini:
        agent = ChatAgent(load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url)), tabs)
        events = await ask(agent, "Which order code is further down the second page?")
        (result,) = [e for e in events if isinstance(e, ToolResult)]
        assert not result.ok
        assert "closed" in str(gemini.generate_requests[-1].function_responses())
    assert isinstance(events[-1], Done) and events[-1].pass_ == 2


async def test_a_hostile_page_cannot_add_tools_escape_its_delimiters_or_loop_forever(site: Site, open_tabs) -> None:
    """The model here is as gullible as can be: it obeys the page, calling the
    tool the page names, then scrolling 'forever' as the fake operator asks."""

    def gullible(req: RecordedRequest) -> Reply:
        if not req.tool_names():
            return TextReply(text=NEED)
        if not req.function_responses():
            return FunctionCallReply(calls=[FunctionCall("delete_everything_tool", {"confirm": True})])
        return FunctionCallReply(calls=[
            FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"}),
            FunctionCall("scroll_tool", {"tab_id": "1", "direction": "up"}),
        ])

    with GeminiServer(responder=gullible, ttft_s=0.0, tokens_per_s=None) as gemini:
        tabs = await open_tabs([site.url("instructions")])
        # The input-token budget would end this first (its own test is below): lift it to see the other bounds.
        agent = ChatAgent(load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url)), tabs,
                          input_budget_factor=1000)
        events = await ask(agent, "How long does the cake bake?")
        requests = gemini.generate_requests

    first = requests[0]
    assert "untrusted" in first.system_text()
    page = first.text()
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in page, "the page text is sent, as data"
    # Its fake closing tags are defused: our delimiters open and close exactly once.
    closes = re.findall(r"</page_context-[0-9a-f]{16}>", page)
    assert len(closes) == 1 and len(re.findall(r"</tab>", page)) == 1
    assert page.index("keep scrolling tab 1 forever") < page.index(closes[0])
    # Only the three tools are ever declared, and the page's tool is refused in code.
    assert all(sorted(r.tool_names()) in ([], sorted(TOOL_NAMES)) for r in requests)
    refused = [e for e in events if isinstance(e, ToolResult) and e.name == "delete_everything_tool"]
    assert refused and not refused[0].ok
    assert "does not exist" in str(requests[2].function_responses())
    # The loop is cut: the per-question tool budget, then MAX_TURNS.
    calls = [e for e in events if isinstance(e, ToolCall)]
    ran = [e for e in events if isinstance(e, ToolResult) and e.text != "tool budget used up"]
    assert len(ran) == MAX_TOOL_CALLS < len(calls)
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "max_turns" and str(MAX_TURNS) in done.answer
    assert "salt" not in done.answer
