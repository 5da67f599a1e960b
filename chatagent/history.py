"""The conversation so far, kept within a token budget.

A conversation is a list of turns; a turn is every message of one question:
the question, the model's tool calls with their results, any page state shown
to it, and the answer. Pruning drops whole turns, oldest first, so a tool
call and its result are always kept or dropped together (providers reject a
call without its result, and vice versa); a short summary of the dropped
questions and answers takes their place.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .labels import TabLabels
from .prompts import Fence, message_text, reshape_fenced, without_image
from .tokens import OFF_LOOP_CHARS, count_tokens, truncate_to_tokens

DEFAULT_HISTORY_BUDGET = 4000  # tokens of earlier turns sent with each question
TOOL_RESULT_TOKENS = 300  # what a turn keeps of each tool result and page state
SUMMARY_QUESTIONS = 5  # dropped turns the summary names; older ones are only counted
_SUMMARY_CHARS = 120


@dataclass(frozen=True)
class Turn:
    messages: tuple[BaseMessage, ...]
    tokens: int

    @property
    def question(self) -> str:
        return message_text(self.messages[0])

    @property
    def answer(self) -> str:
        last = self.messages[-1]
        return message_text(last) if isinstance(last, AIMessage) else ""


class History:
    """Earlier turns, pruned to `budget_tokens` (oldest first) as they are added."""

    def __init__(self, budget_tokens: int = DEFAULT_HISTORY_BUDGET) -> None:
        self.budget_tokens = budget_tokens
        self.turns: list[Turn] = []
        self.dropped: list[tuple[str, str]] = []  # (question, answer) of pruned turns, oldest first
        # Tab label -> (url, content hash) at the last question: a later question
        # can tell that a tab navigated or changed in between.
        self.pages: dict[str, tuple[str, str]] = {}
        # The conversation's untrusted-data markers: its earlier tool results
        # keep them, so every request of the conversation names the same code.
        self.fence = Fence()
        self.labels = TabLabels()  # tabs keep their numbers for the whole conversation

    def add(self, messages: Sequence[BaseMessage]) -> None:
        """Record one finished turn: the question first, the answer last."""
        question, *rest = messages
        kept = (question, *(_compact(m) for m in rest))
        self.turns.append(Turn(kept, sum(message_tokens(m) for m in kept)))
        self._prune(self.budget_tokens)

    def recall(self, question: str, answer: str) -> None:
        """Record a turn known only by its question and answer (a cached answer, a thread kept elsewhere)."""
        self.add([HumanMessage(question), AIMessage(answer)])

    @property
    def tokens(self) -> int:
        """What the history costs in a request: the kept turns and the summary."""
        summary = count_tokens(_summary(self.dropped, self.budget_tokens)) if self.dropped else 0
        return summary + sum(t.tokens for t in self.turns)

    def messages(self, *, tools: bool, budget_tokens: int | None = None) -> list[BaseMessage]:
        """The history as sent to the model. `tools=False` (a request that binds
        no tools) renders each turn's browser steps as a line of text, since
        providers refuse tool calls in a request that declares no tools.
        `budget_tokens` below the standing budget prunes this request only."""
        turns, dropped, budget = self.turns, self.dropped, self.budget_tokens
        if budget_tokens is not None and budget_tokens < self.tokens:
            turns, more = _split(turns, dropped, budget_tokens)
            dropped, budget = dropped + more, budget_tokens
        out: list[BaseMessage] = [HumanMessage(_summary(dropped, budget))] if dropped else []
        for turn in turns:
            out += list(turn.messages) if tools else _flatten(turn)
        return out

    def _prune(self, budget: int) -> None:
        self.turns, more = _split(self.turns, self.dropped, budget)
        self.dropped += more


def _split(turns: list[Turn], dropped: list[tuple[str, str]], budget: int) -> tuple[list[Turn], list[tuple[str, str]]]:
    """The newest turns that fit in `budget` together with the summary of the
    rest, and the (question, answer) pairs newly left out."""
    keep = _newest_within(turns, budget)
    while True:
        more = [(t.question, t.answer) for t in turns[: len(turns) - keep]]
        if not (dropped or more) or keep == 0:
            return turns[len(turns) - keep:], more
        room = budget - count_tokens(_summary(dropped + more, budget))
        fits = _newest_within(turns[len(turns) - keep:], room)
        if fits == keep:
            return turns[len(turns) - keep:], more
        keep = fits


def _newest_within(turns: Sequence[Turn], budget: int) -> int:
    """How many of the newest turns fit in `budget` tokens."""
    used = n = 0
    for turn in reversed(turns):
        if used + turn.tokens > budget:
            break
        used += turn.tokens
        n += 1
    return n


def _summary(dropped: list[tuple[str, str]], max_tokens: int) -> str:
    """Name the most recent dropped questions, as many as fit in `max_tokens`."""
    named = dropped[-SUMMARY_QUESTIONS:]
    text = _summary_text(dropped, named)
    while named and count_tokens(text) > max_tokens:
        named = named[1:]
        text = _summary_text(dropped, named)
    return text


def _summary_text(dropped: list[tuple[str, str]], named: list[tuple[str, str]]) -> str:
    head = f"{len(dropped)} earlier question(s) of this conversation were dropped to keep it short."
    if named:
        head += " The most recent of them:" if len(named) < len(dropped) else " They were:"
    lines = [head, *(f"- Q: {_clip(q)} A: {_clip(a) or '(no answer)'}" for q, a in named)]
    return "<conversation_summary>\n" + "\n".join(lines) + "\n</conversation_summary>"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _flatten(turn: Turn) -> list[BaseMessage]:
    steps = [
        f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['args'].items())})"
        for m in turn.messages if isinstance(m, AIMessage) for c in m.tool_calls
    ]
    answer = turn.answer
    if steps:
        answer = f"(To answer this I used the browser: {'; '.join(steps)}.)\n{answer}"
    return [HumanMessage(turn.question), AIMessage(answer)]


def _compact(message: BaseMessage) -> BaseMessage:
    """Tool results and page state shown during a turn are kept short: the
    current page context is sent with every question anyway."""
    if isinstance(message, ToolMessage):
        return message.model_copy(update={"content": reshape_fenced(message_text(message), _shorten)})
    if isinstance(message, HumanMessage):
        if isinstance(message.content, list):  # a screenshot
            return without_image(message)
        return HumanMessage(reshape_fenced(message.content, _shorten))
    return message


def _shorten(text: str) -> str:
    cut = truncate_to_tokens(text, TOOL_RESULT_TOKENS)
    return text if cut == text else cut + " […cut to keep the conversation short]"


IMAGE_TOKENS = 258  # what one screenshot costs in a request (Gemini's fixed price per image)


def message_tokens(message: BaseMessage) -> int:
    """An estimate of what `message` costs in a request."""
    text = message_text(message)
    # A tool result travels as a JSON string: its newlines and quotes escaped.
    return count_tokens(json.dumps(text) if isinstance(message, ToolMessage) else text) + message_extra_tokens(message)


async def request_tokens(messages: Sequence[BaseMessage]) -> int:
    """What `messages` cost in a request (`message_tokens`), counted on a thread when they are
    large: a pass-2 request holds every tab's text (20 tabs of 16,000 tokens for the offline model)."""
    def count() -> int:
        return sum(message_tokens(m) for m in messages)

    large = sum(len(message_text(m)) for m in messages) > OFF_LOOP_CHARS
    return await asyncio.to_thread(count) if large else count()


def message_extra_tokens(message: BaseMessage) -> int:
    """What `message` costs besides its text: its role and framing, its images, its tool calls."""
    n = 4
    if isinstance(message.content, list):
        n += IMAGE_TOKENS * sum(1 for b in message.content if isinstance(b, dict) and b.get("type") == "image_url")
    if isinstance(message, AIMessage):
        n += sum(count_tokens(c["name"] + json.dumps(c["args"])) for c in message.tool_calls)
    return n
