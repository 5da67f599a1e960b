"""ChatAgent through the real ChatGoogleGenerativeAI client against the local
Gemini-compatible server, on real Chromium: what each pass sends, the tool
pass, refresh of a changed page. The loop's own rules (abort, MAX_TURNS,
serialised tool calls) are tested with the scripted model in test_agent_loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser.playwright import PlaywrightTab
from chatagent.events import Done, ErrorEvent, Event, PassStart, Screenshot, Token, ToolResult
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.gemini_server import (
    FunctionCall,
    FunctionCallReply,
    GeminiServer,
    RecordedRequest,
    Reply,
    TextReply,
)
from chatagent.tools import TOOL_NAMES

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

NEED = f"{ESCALATION_MARKER} the answer is not in the page text"



def agent_for(gemini: GeminiServer, tabs: list, **options: Any) -> ChatAgent:
    model = load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url))
    return ChatAgent(model, tabs, **options)


async def ask(agent: ChatAgent, question: str) -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1 and isinstance(events[-1], (Done, ErrorEvent))
    return events


def call(name: str, **args: object) -> FunctionCallReply:
    return FunctionCallReply(calls=[FunctionCall(name, dict(args))])


async def test_pass_1_streams_with_no_tools_and_carries_the_page_text(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(TextReply(text="The Aurora X14 Pro costs $1,349.00 [Tab 1]."))
    events = await ask(agent_for(gemini, await open_tabs([site.url("product")])), "How much is it?")
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 1
    assert done.answer == "The Aurora X14 Pro costs $1,349.00 [Tab 1]."
    assert len([e for e in events if isinstance(e, Token)]) > 1
    [req] = gemini.generate_requests
    assert req.action == "streamGenerateContent"
    assert req.tool_names() == [] and not req.tools
    assert "$1,349.00" in req.text() and "<page_context-" in req.text()
    assert "untrusted" in req.system_text()
    assert done.usage.input_tokens > 0


async def test_pass_2_declares_exactly_the_three_tools_and_the_image_is_sent_once(
    gemini: GeminiServer, site: Site, open_tabs
) -> None:
    gemini.enqueue(
        TextReply(text=NEED),
        call("screenshot_tool", tab_id="1"),
        call("scroll_tool", tab_id="1", direction="down"),
        TextReply(text="The board shows Gate B12 [Tab 1]."),
    )
    events = await ask(agent_for(gemini, await open_tabs([site.url("image_only")])), "Which gate is on the board?")
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 2 and "B12" in done.answer
    assert ESCALATION_MARKER not in "".join(e.text for e in events if isinstance(e, Token))
    assert [e.pass_ for e in events if isinstance(e, PassStart)] == [1, 2]
    p1, *p2 = gemini.generate_requests
    assert p1.tool_names() == []
    assert len(p2) == 3
    assert all(sorted(r.tool_names()) == sorted(TOOL_NAMES) for r in p2)
    assert [r.has_image() for r in p2] == [False, True, False], "the image goes to the model exactly once"
    assert p2[1].images()[0].data[:4] == b"\x89PNG"
    assert len([e for e in events if isinstance(e, Screenshot)]) == 1


async def test_a_page_changed_after_load_is_picked_up_by_refresh(site: Site, open_tabs) -> None:
    bumped = threading.Event()
    calls = iter([
        TextReply(text=NEED),
        call("refresh_browser_state_tool", tab_id="1"),
        TextReply(text="It has shipped [Tab 1]."),
    ])

    def respond(request: RecordedRequest) -> Reply:
        reply = next(calls)
        if isinstance(reply, TextReply) and reply.text == NEED:
            bumped.wait(10)  # answer pass 1 only once the page has changed under it
        return reply

    with GeminiServer(responder=respond, ttft_s=0.0, tokens_per_s=None) as gemini:
        [tab] = await open_tabs([site.url("changing")])
        assert isinstance(tab, PlaywrightTab)
        agent = agent_for(gemini, [tab])
        events: list[Event] = []
        async for event in agent.ask("What is the tracking number of the parcel?"):
            events.append(event)
            if isinstance(event, PassStart) and event.pass_ == 1:
                await tab.page.evaluate("window.bump()")
                bumped.set()
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 2
    first, _, last = gemini.generate_requests
    assert "NP-7730-2291-SE" not in first.text()
    assert "NP-7730-2291-SE" in last.text() and "Status: shipped" in last.text()
    assert any(isinstance(e, ToolResult) and e.name == "refresh_browser_state_tool" and e.ok for e in events)
