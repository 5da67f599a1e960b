"""Conversation history: pruned by tokens, oldest turns first, tool calls and
their results kept or dropped together, a summary of what was dropped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from chatagent.history import History
from chatagent.tokens import count_tokens


def turn(i: int, answer_words: int, tool_steps: int = 0, result_words: int = 50) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(f"question {i}?")]
    for k in range(tool_steps):
        call_id = f"c{i}_{k}"
        msgs.append(AIMessage("", tool_calls=[{"name": "scroll_tool", "args": {"tab_id": "1"}, "id": call_id}]))
        msgs.append(ToolMessage("seen " * result_words, tool_call_id=call_id, name="scroll_tool"))
    msgs.append(AIMessage(f"answer {i} " + "word " * answer_words))
    return msgs


def assert_paired(messages: list[BaseMessage]) -> None:
    """Every tool call is answered right after it, and every result answers a call."""
    pending: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in pending, f"orphaned tool result {m.tool_call_id}"
            pending.discard(m.tool_call_id)
            continue
        assert not pending, f"tool calls without results: {pending}"
        if isinstance(m, AIMessage):
            pending = {c["id"] for c in m.tool_calls}
    assert not pending, f"tool calls without results: {pending}"


def sent_tokens(messages: list[BaseMessage]) -> int:
    return sum(count_tokens(str(m.content)) for m in messages)


def test_short_conversation_is_kept_whole() -> None:
    h = History(budget_tokens=1000)
    h.add(turn(1, 10))
    h.add(turn(2, 10, tool_steps=1))
    msgs = h.messages(tools=True)
    assert [type(m).__name__ for m in msgs] == [
        "HumanMessage", "AIMessage", "HumanMessage", "AIMessage", "ToolMessage", "AIMessage",
    ]
    assert not h.dropped and "conversation_summary" not in str(msgs[0].content)


def test_oldest_turns_go_first_and_a_summary_names_them() -> None:
    h = History(budget_tokens=300)
    for i in range(1, 8):
        h.add(turn(i, 40))
    assert h.tokens <= 300
    kept = [t.question for t in h.turns]
    assert kept and kept[-1] == "question 7?"
    assert kept == [f"question {i}?" for i in range(8 - len(kept), 8)], "the newest turns are the ones kept"
    summary = str(h.messages(tools=False)[0].content)
    assert "<conversation_summary>" in summary and "question 1?" not in kept
    assert f"{len(h.dropped)} earlier question(s)" in summary
    assert "answer" in summary  # what was answered, not only what was asked


def test_a_request_without_tools_gets_the_browser_steps_as_text() -> None:
    h = History()
    h.add(turn(1, 10, tool_steps=2))
    msgs = h.messages(tools=False)
    assert not any(isinstance(m, ToolMessage) for m in msgs)
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in msgs)
    assert "scroll_tool(tab_id='1')" in str(msgs[-1].content) and "answer 1" in str(msgs[-1].content)


def test_long_tool_results_are_cut_when_the_turn_is_kept() -> None:
    h = History()
    h.add(turn(1, 5, tool_steps=1, result_words=5000))
    (result,) = [m for m in h.messages(tools=True) if isinstance(m, ToolMessage)]
    assert count_tokens(str(result.content)) < 400 and "cut to keep the conversation short" in str(result.content)


def test_a_smaller_budget_for_one_request_leaves_the_history_alone() -> None:
    h = History(budget_tokens=2000)
    for i in range(6):
        h.add(turn(i, 40))
    before = len(h.turns)
    small = h.messages(tools=True, budget_tokens=200)
    assert sent_tokens(small) <= 200 + 20 and len(h.turns) == before


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=150, max_value=1500),
    turns=st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 3), st.integers(0, 400)), min_size=1, max_size=30,
    ),
)
def test_any_conversation_stays_within_budget_with_no_orphans(budget: int, turns: list[tuple[int, int, int]]) -> None:
    h = History(budget_tokens=budget)
    for i, (answer_words, steps, result_words) in enumerate(turns):
        h.add(turn(i, answer_words, steps, result_words))
        assert h.tokens <= budget
        for tools in (True, False):
            msgs = h.messages(tools=tools)
            assert_paired(msgs)
            assert sent_tokens(msgs) <= budget
    assert len(h.turns) + len(h.dropped) == len(turns), "every turn is either kept or summarised"
