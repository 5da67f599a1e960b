"""The agent loop itself, with the in-process scripted chat model: cancellation,
the turn limit, tool calls run one at a time in order, tool errors sent back.
What the real Gemini client sends for the same passes is in test_agent_gemini."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from chatagent.agent import MAX_TURNS, ChatAgent
from chatagent.browser.base import PageSnapshot, ScrollDirection, ScrollResult, Tab
from chatagent.events import Done, ErrorEvent, Event, Note, ToolCall, ToolResult, Token
from chatagent.prompts import ESCALATION_MARKER, message_text
from chatagent.testing.scripted_model import Call, Calls, Hang, Request, ScriptedChatModel, Text
from chatagent.tokens import count_tokens

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

NEED = f"{ESCALATION_MARKER} the answer is not in the page text"
ENDLESS = " ".join(f"word{i}" for i in range(40))


async def ask(agent: ChatAgent, question: str) -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1 and isinstance(events[-1], (Done, ErrorEvent))
    return events


async def test_abort_mid_stream_ends_with_aborted_and_leaves_the_browser_usable(site: Site, open_tabs) -> None:
    model = ScriptedChatModel(replies=[Hang(ENDLESS)])  # a reply that never ends on its own
    [tab] = await open_tabs([site.url("article")])
    agent = ChatAgent(model, [tab])
    events: list[Event] = []
    async for event in agent.ask("Summarise the article."):
        events.append(event)
        if isinstance(event, Token):
            agent.cancel()
    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "aborted"
    assert model.requests[0].closed, "the model's stream was left open"
    snap = await tab.snapshot()  # the browser still works
    assert "Harbour Line" in snap.visible_text
    model.enqueue(Text("Trams are back [Tab 1]."))
    again = await ask(agent, "And in one line?")
    assert isinstance(again[-1], Done) and again[-1].answer == "Trams are back [Tab 1]."


async def test_cancelling_the_consumer_task_stops_the_run(site: Site, open_tabs) -> None:
    model = ScriptedChatModel(replies=[Hang(ENDLESS)])
    agent = ChatAgent(model, await open_tabs([site.url("article")]))
    first = asyncio.Event()

    async def consume() -> None:
        async for event in agent.ask("Summarise."):
            if isinstance(event, Token):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent._task is not None and agent._task.done()
    assert model.requests[0].closed


async def test_max_turns_ends_with_a_clear_done(site: Site, open_tabs) -> None:
    def respond(request: Request) -> Any:
        return Calls.one("scroll_tool", tab_id="1", direction="down") if request.tools else Text(NEED)

    # The input-token budget would stop it sooner (tests/test_untrusted_pages.py): lifted here.
    model = ScriptedChatModel(responder=respond)
    agent = ChatAgent(model, await open_tabs([site.url("article")]), input_budget_factor=1000)
    events = await ask(agent, "What is on the last line?")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.stop_reason == "max_turns" and str(MAX_TURNS) in done.answer
    assert len([r for r in model.requests if r.tools]) == MAX_TURNS
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


async def test_parallel_tool_calls_run_one_at_a_time_in_order(site: Site, open_tabs) -> None:
    log: list[tuple[str, str, float]] = []
    tabs = [RecordingTab(t, log) for t in await open_tabs([site.url("lazy"), site.url("article")])]
    model = ScriptedChatModel(replies=[
        Text(NEED),
        Calls([
            Call("scroll_tool", {"tab_id": "1", "direction": "down"}),
            Call("screenshot_tool", {"tab_id": "2"}),
            Call("refresh_browser_state_tool", {"tab_id": "1"}),
            Call("scroll_tool", {"tab_id": "2", "direction": "bottom"}),
        ]),
        Text("Done [Tab 1]."),
    ])
    events = await ask(ChatAgent(model, tabs), "Where do I send my parcel?")
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
    # The model's next turn gets the four results, in the order of its calls.
    results = model.requests[-1].tool_results()
    assert [m.name for m in results] == calls


async def test_tool_errors_and_unknown_tools_go_back_to_the_model(site: Site, open_tabs) -> None:
    model = ScriptedChatModel(replies=[
        Text(NEED),
        Calls.one("scroll_tool", tab_id="1", to_text="no such sentence anywhere"),
        Calls.one("delete_everything_tool", confirm=True),
        Text("I could not find it."),
    ])
    events = await ask(ChatAgent(model, await open_tabs([site.url("instructions")])), "What is the secret?")
    done = events[-1]
    assert isinstance(done, Done) and done.answer == "I could not find it."
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.ok for r in results] == [False, False]

    def last_result(request: Request) -> ToolMessage:
        return request.tool_results()[-1]

    second, third = model.requests[2], model.requests[3]
    assert last_result(second).status == "error" and "not found" in str(last_result(second).content)
    assert last_result(third).status == "error" and "does not exist" in str(last_result(third).content)


async def test_a_server_that_reports_no_usage_has_its_tokens_counted_and_said_so(site: Site, open_tabs) -> None:
    tabs = await open_tabs([site.url("article")])
    silent = ScriptedChatModel(reports_usage=False, replies=[  # pass 1 stops listening at the marker
        Text(ESCALATION_MARKER), Calls.one("scroll_tool", tab_id="1", direction="down"), Text("It opened in spring [Tab 1]."),
    ])
    events = await ask(ChatAgent(silent, tabs), "When did it open?")
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 2 and done.usage.counted
    # Every request was counted with the tokenizer, message by message, as was everything the model said.
    sent = sum(count_tokens(message_text(m)) for r in silent.requests for m in r.messages)
    assert done.usage.input_tokens == sent
    said = [ESCALATION_MARKER, 'scroll_tool{"tab_id": "1", "direction": "down"}', "It opened in spring [Tab 1]."]
    assert done.usage.output_tokens == sum(count_tokens(s) for s in said)

    reporting = ScriptedChatModel(replies=[Text("It opened in spring [Tab 1].")])
    done = (await ask(ChatAgent(reporting, tabs), "When did it open?"))[-1]
    assert isinstance(done, Done) and not done.usage.counted
    assert done.usage.output_tokens == 6, "the server's own figure (the script counts words)"


async def test_counting_a_pass_2_run_sends_each_message_to_the_servers_tokenizer_once(
    site: Site, open_tabs: Any,
) -> None:
    """A server that reports no usage but counts tokens (llama.cpp's): each
    turn of pass 2 resends every earlier message, which is not counted again."""
    from chatagent.models.base import Model, Provider

    heard: list[str] = []

    class Counter:
        available = True

        async def count(self, text: str) -> int:
            heard.append(text)
            return count_tokens(text)

    class Counting(Provider):
        name = "counting"

        def tokenizer(self, endpoint: str) -> Counter:
            return Counter()

    silent = ScriptedChatModel(reports_usage=False, replies=[
        Text(ESCALATION_MARKER), Calls.one("scroll_tool", tab_id="1", direction="down"),
        Calls.one("scroll_tool", tab_id="1", direction="down"), Text("It opened in spring [Tab 1]."),
    ])
    model = Model(silent, Counting(), "counting:x", endpoint="http://127.0.0.1:9/v1")
    done = (await ask(ChatAgent(model, await open_tabs([site.url("article")])), "When did it open?"))[-1]
    assert isinstance(done, Done) and done.pass_ == 2 and done.usage.counted
    assert len(silent.requests) == 4
    system = message_text(silent.requests[-1].messages[0])
    assert sum(system in text for text in heard) == 1, "the page context went to the tokenizer once"
    pages = [text for text in heard if text.startswith("<page_context-")]
    assert len(pages) == 1, "counted once, though fitting the window counted it first"
    assert done.usage.input_tokens == sum(count_tokens(message_text(m)) for r in silent.requests for m in r.messages)


@pytest.mark.parametrize("pass_", [1, 2])
async def test_an_answer_that_runs_on_is_cut_at_its_length_limit_and_says_so(site: Site, open_tabs, pass_: int) -> None:
    """A model that never stops (a small local one repeating itself): the answer
    ends at max_answer_tokens, its stream is closed, and a note says where."""
    runaway = Hang(ENDLESS)  # streams its words, then never ends
    model = ScriptedChatModel(replies=[runaway] if pass_ == 1 else [Text(NEED), runaway])
    agent = ChatAgent(model, await open_tabs([site.url("article")]), max_answer_tokens=20, deadline_s=60)
    events = await ask(agent, "Tell me everything.")
    done = events[-1]
    assert isinstance(done, Done), done
    assert done.truncated and done.stop_reason == "answered" and done.pass_ == pass_
    # Counted chunk by chunk as it streams; the chunk that reaches the limit is the last shown.
    assert done.answer and ENDLESS.startswith(done.answer) and count_tokens(done.answer) <= 20 + 4 < count_tokens(ENDLESS)
    assert [e.text for e in events if isinstance(e, Note)][-1] == (
        "The answer reached its length limit (20 tokens) and was cut there.")
    for _ in range(100):  # a bound model's stream (pass 2's tools) is closed by the event loop, a moment later
        if all(r.closed for r in model.requests):
            break
        await asyncio.sleep(0.05)
    assert [r.closed for r in model.requests] == [True] * len(model.requests), "a model stream was left open"
