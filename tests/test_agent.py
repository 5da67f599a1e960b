"""ChatAgent end to end with the offline `extractive` model on real Chromium:
pass 1 from text, pass 2 through the browser tools, multi-tab, refusal of
unknown tools, the tool budget."""

from __future__ import annotations

import asyncio
import base64

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser import StaticTab
from chatagent.browser.base import ScrollDirection, ScrollResult, Tab
from chatagent.events import Done, ErrorEvent, Event, PassStart, Screenshot, Token, ToolCall, ToolResult
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.tools import TOOL_NAMES, ToolRunner
from chatagent.context import ContextBuilder

from conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def ask(agent: ChatAgent, question: str) -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1
    assert isinstance(events[-1], (Done, ErrorEvent))
    return events


def done(events: list[Event]) -> Done:
    last = events[-1]
    assert isinstance(last, Done), f"run ended with {last!r}"
    return last


async def test_text_question_is_answered_in_pass_1_with_streamed_tokens(site: Site, open_tabs) -> None:
    agent = ChatAgent(load_model("extractive"), await open_tabs([site.url("product")]))
    events = await ask(agent, "How much does the Aurora X14 Pro cost, and what is the warranty?")
    result = done(events)
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert len(tokens) > 1, "the answer should arrive as a stream, not one block"
    assert "".join(tokens).strip() == result.answer
    assert "$1,349.00" in result.answer and "2 years" in result.answer
    assert result.pass_ == 1
    assert [c.tab_id for c in result.citations] == ["1"] or result.citations[0].url.endswith("product.html")
    assert not any(isinstance(e, ToolCall) for e in events), "pass 1 must not use tools"
    assert [e.pass_ for e in events if isinstance(e, PassStart)] == [1]
    assert result.timings.first_token_ms is not None and result.timings.first_token_ms <= result.timings.total_ms
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


async def test_lazy_loaded_fact_is_found_in_pass_2_by_scrolling(site: Site, open_tabs) -> None:
    agent = ChatAgent(load_model("extractive"), await open_tabs([site.url("lazy")]))
    events = await ask(agent, "What is the warehouse code?")
    result = done(events)
    assert result.pass_ == 2
    scrolls = [e for e in events if isinstance(e, ToolCall) and e.name == "scroll_tool"]
    assert scrolls, "the fact is below the fold: the agent must scroll"
    assert "ZX-4471" in result.answer
    assert "[[NEED_BROWSER]]" not in "".join(e.text for e in events if isinstance(e, Token))


async def test_image_only_fact_takes_a_screenshot_and_answers_honestly(site: Site, open_tabs) -> None:
    agent = ChatAgent(load_model("extractive"), await open_tabs([site.url("image_only")]))
    events = await ask(agent, "Which gate is shown on the departure board image?")
    result = done(events)
    assert result.pass_ == 2
    assert any(isinstance(e, ToolCall) and e.name == "screenshot_tool" for e in events)
    shots = [e for e in events if isinstance(e, Screenshot)]
    assert len(shots) == 1
    assert base64.b64decode(shots[0].png_base64)[:8] == b"\x89PNG\r\n\x1a\n"
    results = [e for e in events if isinstance(e, ToolResult)]
    assert all("base64" not in r.text and len(r.text) < 200 for r in results), "tool results stay short"
    assert "cannot read images" in result.answer
    assert "B12" not in result.answer  # it must not pretend to have read it


async def test_two_tab_comparison_gives_evidence_and_citations_from_both(site: Site, open_tabs) -> None:
    tabs = await open_tabs([site.url("two_a"), site.url("two_b")])
    agent = ChatAgent(load_model("extractive"), tabs)
    result = done(await ask(agent, "Which city has more tram lines, Port Averly or Lindqvist Harbor?"))
    assert result.pass_ == 1
    assert {c.tab_id for c in result.citations} == {"1", "2"}
    assert "[Tab 1]" in result.answer and "[Tab 2]" in result.answer
    assert "6" in result.answer.split("[Tab 2]")[0] or "Six tram lines" in result.answer
    assert "no trams" in result.answer or "0 (buses" in result.answer


async def test_a_failed_tab_is_reported_and_the_good_tab_still_answers(site: Site, open_tabs, closed_port_url: str) -> None:
    tabs = await open_tabs([closed_port_url, site.url("product")])
    events = await ask(ChatAgent(load_model("extractive"), tabs), "How much does the Aurora X14 Pro cost?")
    notes = [e for e in events if e.type == "note"]
    assert any(n.tab_id == "1" for n in notes)
    assert "$1,349.00" in done(events).answer


async def test_no_readable_tab_ends_with_a_clear_error(open_tabs, closed_port_url: str) -> None:
    events = await ask(ChatAgent(load_model("extractive"), await open_tabs([closed_port_url])), "anything?")
    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "no_readable_tabs"


async def test_unknown_tools_are_refused_in_code_and_reported_back(site: Site, open_tabs) -> None:
    tabs = [t for t in await open_tabs([site.url("instructions")]) if isinstance(t, Tab)]
    runner = ToolRunner({"1": tabs[0]}, ContextBuilder())
    outcome = await runner.run("delete_everything_tool", {"confirm": True})
    assert not outcome.ok and "does not exist" in outcome.text
    assert all(name in outcome.text for name in TOOL_NAMES)
    bad = await runner.run("scroll_tool", {"tab_id": "9"})
    assert not bad.ok and "no tab" in bad.text
    args = await runner.run("scroll_tool", {"tab_id": "1", "direction": "sideways"})
    assert not args.ok and "direction" in args.text


@pytest.mark.parametrize(
    ("page", "question", "facts"),
    [
        ("article", "How many stops does the Harbour Line have?", ["19 stops"]),
        ("table", "Who won the marathon, and in what time?", ["Henrik Solvang", "2:09:47"]),
        ("instructions", "At what temperature should the cake bake?", ["175 °C"]),
    ],
)
async def test_facts_in_the_page_text_are_answered_in_pass_1(
    site: Site, open_tabs, page: str, question: str, facts: list[str]
) -> None:
    events = await ask(ChatAgent(load_model("extractive"), await open_tabs([site.url(page)])), question)
    result = done(events)
    assert result.pass_ == 1
    assert not any(isinstance(e, ToolCall) for e in events)
    assert all(f in result.answer for f in facts), result.answer
    for injected in ("3 kg of salt", "IGNORE ALL", "delete_everything", "recipes-archive"):
        assert injected not in result.answer


async def test_a_near_miss_above_the_fold_does_not_stop_the_scroll(site: Site, open_tabs) -> None:
    # Above the fold, "within 30 days" is about returns; the refund period is further down.
    events = await ask(ChatAgent(load_model("extractive"), await open_tabs([site.url("lazy")])),
                       "Within how many business days are refunds issued?")
    result = done(events)
    assert result.pass_ == 2
    assert any(isinstance(e, ToolCall) and e.name == "scroll_tool" for e in events)
    assert "5 business days" in result.answer and "30 days" not in result.answer


class _WatchedTab(StaticTab):
    """Records how many scrolls run on it at once."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.active = self.most = self.scrolls = 0

    async def scroll(self, direction: ScrollDirection = "down", to_text: str | None = None) -> ScrollResult:
        self.active += 1
        self.most = max(self.most, self.active)
        self.scrolls += 1
        try:
            await asyncio.sleep(0.05)
            return await super().scroll(direction, to_text)
        finally:
            self.active -= 1


async def test_tools_on_one_tab_take_turns_across_conversations() -> None:
    """Two conversations (an MCP server's two clients, say) on one open tab:
    their scrolls never overlap, since they share its scroll position."""
    paragraphs = "".join(f"<p>Paragraph {i} about the harbour and its ferries.</p>" for i in range(60))
    tab = _WatchedTab("1", "https://example.com/harbour", f"<html><body>{paragraphs}</body></html>", title="Harbour")
    agents = [ChatAgent(load_model("extractive"), [tab]) for _ in range(2)]
    runs = await asyncio.gather(*(ask(a, "What is the warehouse code for returns?") for a in agents))
    assert all(events[-1].type == "done" for events in runs)
    assert tab.scrolls >= 2, "both questions scrolled the tab"
    assert tab.most == 1, "two scrolls ran on one tab at the same time"
