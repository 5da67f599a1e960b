"""ChatAgent through the real ChatGoogleGenerativeAI client against the local
Gemini-compatible server, on real Chromium: what each pass sends, the tool
pass, refresh of a changed page, abort, MAX_TURNS, serialised tool calls."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from chatagent.agent import MAX_TURNS, ChatAgent
from chatagent.browser.base import PageSnapshot, ScrollDirection, ScrollResult, Tab
from chatagent.browser.playwright import PlaywrightTab
from chatagent.events import Done, ErrorEvent, Event, PassStart, Screenshot, Token, ToolCall, ToolResult
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
    [req] = gemini.requests
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
    p1, *p2 = gemini.requests
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
    first, _, last = gemini.requests
    assert "NP-7730-2291-SE" not in first.text()
    assert "NP-7730-2291-SE" in last.text() and "Status: shipped" in last.text()
    assert any(isinstance(e, ToolResult) and e.name == "refresh_browser_state_tool" and e.ok for e in events)


async def test_abort_mid_stream_ends_with_aborted_and_leaves_the_browser_usable(site: Site, open_tabs) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=20, tokens_per_chunk=1) as gemini:
        gemini.enqueue(TextReply(text=" ".join(f"word{i}" for i in range(400))))
        [tab] = await open_tabs([site.url("article")])
        agent = agent_for(gemini, [tab])
        events: list[Event] = []
        t0 = time.monotonic()
        async for event in agent.ask("Summarise the article."):
            events.append(event)
            if isinstance(event, Token) and len(events) < 50:
                agent.cancel()
        assert time.monotonic() - t0 < 10, "400 words at 20/s would take 20 s: the stream was not stopped"
        assert isinstance(events[-1], ErrorEvent) and events[-1].code == "aborted"
        assert sum(isinstance(e, Token) for e in events) < 20
        snap = await tab.snapshot()  # the browser still works
        assert "Harbour Line" in snap.visible_text
        gemini.enqueue(TextReply(text="Trams are back [Tab 1]."))
        again = await ask(agent, "And in one line?")
        assert isinstance(again[-1], Done) and again[-1].answer == "Trams are back [Tab 1]."


async def test_cancelling_the_consumer_task_stops_the_run(site: Site, open_tabs) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=20, tokens_per_chunk=1) as gemini:
        gemini.enqueue(TextReply(text=" ".join(f"w{i}" for i in range(400))))
        agent = agent_for(gemini, await open_tabs([site.url("article")]))
        first = asyncio.Event()

        async def consume() -> None:
            async for event in agent.ask("Summarise."):
                if isinstance(event, Token):
                    first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert agent._task is not None and agent._task.done()


async def test_max_turns_ends_with_a_clear_done(site: Site, open_tabs) -> None:
    def respond(request: RecordedRequest) -> Reply:
        return call("scroll_tool", tab_id="1", direction="down") if request.tool_names() else TextReply(text=NEED)

    with GeminiServer(responder=respond, ttft_s=0.0, tokens_per_s=None) as gemini:
        # The input-token budget would stop it sooner (tests/test_untrusted_pages.py): lifted here.
        agent = agent_for(gemini, await open_tabs([site.url("article")]), input_budget_factor=1000)
        events = await ask(agent, "What is on the last line?")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.stop_reason == "max_turns" and str(MAX_TURNS) in done.answer
    assert len([r for r in gemini.requests if r.tool_names()]) == MAX_TURNS
    assert len([e for e in events if isinstance(e, ToolCall)]) == MAX_TURNS


class RecordingTab(Tab):
    """Wraps a real tab and logs when each browser operation starts and ends."""

    def __init__(self, inner: Tab, log: list[tuple[str, str, float]]) -> None:
        self.inner, self.log, self.tab_id = inner, log, inner.tab_id

    async def _timed(self, what: str, coro):  # type: ignore[no-untyped-def]
        self.log.append(("start", what, time.perf_counter()))
        try:
            return await coro
        finally:
            self.log.append(("end", what, time.perf_counter()))

    async def snapshot(self) -> PageSnapshot:
        return await self._timed("snapshot", self.inner.snapshot())

    async def screenshot(self) -> bytes:
        return await self._timed("screenshot", self.inner.screenshot())

    async def scroll(self, direction: ScrollDirection = "down", to_text: str | None = None) -> ScrollResult:
        return await self._timed("scroll", self.inner.scroll(direction, to_text))


async def test_parallel_tool_calls_run_one_at_a_time_in_order(gemini: GeminiServer, site: Site, open_tabs) -> None:
    log: list[tuple[str, str, float]] = []
    tabs = [RecordingTab(t, log) for t in await open_tabs([site.url("lazy"), site.url("article")])]
    gemini.enqueue(
        TextReply(text=NEED),
        FunctionCallReply(calls=[
            FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"}),
            FunctionCall("screenshot_tool", {"tab_id": "2"}),
            FunctionCall("refresh_browser_state_tool", {"tab_id": "1"}),
            FunctionCall("scroll_tool", {"tab_id": "2", "direction": "bottom"}),
        ]),
        TextReply(text="Done [Tab 1]."),
    )
    events = await ask(agent_for(gemini, tabs), "Where do I send my parcel?")
    assert isinstance(events[-1], Done)
    ops = [what for kind, what, _ in log if kind == "start"]
    # pass-1 context snapshots of both tabs first, then the four tools in order
    assert ops[-4:] == ["scroll", "screenshot", "snapshot", "scroll"]
    depth = 0
    for kind, _, _ in log[-8:]:  # the four tool operations (context snapshots may run together)
        depth += 1 if kind == "start" else -1
        assert depth in (0, 1), "two browser operations overlapped"
    calls = [e.name for e in events if isinstance(e, ToolCall)]
    assert calls == ["scroll_tool", "screenshot_tool", "refresh_browser_state_tool", "scroll_tool"]
    # Every tool call got its result before the next one started.
    kinds = [e.type for e in events if e.type in ("tool_call", "tool_result")]
    assert kinds == ["tool_call", "tool_result"] * 4


async def test_tool_errors_and_unknown_tools_go_back_to_the_model(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(
        TextReply(text=NEED),
        call("scroll_tool", tab_id="1", to_text="no such sentence anywhere"),
        call("delete_everything_tool", confirm=True),
        TextReply(text="I could not find it."),
    )
    events = await ask(agent_for(gemini, await open_tabs([site.url("instructions")])), "What is the secret?")
    done = events[-1]
    assert isinstance(done, Done) and done.answer == "I could not find it."
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.ok for r in results] == [False, False]
    second, third = gemini.requests[2], gemini.requests[3]
    assert "not found" in str(second.function_responses())
    assert "does not exist" in str(third.function_responses())
