"""The agent loop: pass 1 streams a tool-free answer; pass 2, only when pass 1
could not answer from the text, binds the three browser tools."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage

from .browser.base import Tab, TabFailure
from .context import ContextBuilder, PageContext
from .errors import ChatAgentError
from .escalation import EscalationGate, looks_unanswerable
from .events import (
    Citation, Done, ErrorEvent, Event, Note, PassStart, Screenshot, Timings, Token, ToolCall, ToolResult, Usage,
)
from .prompts import build_messages, render_browser_state
from .tools import ToolRunner, tool_specs

MAX_TURNS = 20  # model calls in pass 2
MAX_TOOL_CALLS = 24  # per question: a page cannot drive the agent into a loop
_CITE = re.compile(r"\[Tab (\d+)\]")

Emit = Callable[[Event], None]


class _Run:
    """Bookkeeping for one question: timings, usage, tool count."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.first_token_ms: float | None = None
        self.usage = Usage()
        self.tool_calls = 0

    def ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000

    def add_usage(self, chunk: AIMessageChunk) -> None:
        meta = chunk.usage_metadata
        if meta:
            self.usage.input_tokens += meta.get("input_tokens", 0)
            self.usage.output_tokens += meta.get("output_tokens", 0)


class ChatAgent:
    """Answers questions about a set of tabs as a stream of typed events.

    `ask()` yields events and always ends with exactly one `done` or `error`;
    `cancel()` (or cancelling the consuming task) stops it promptly.
    """

    def __init__(
        self,
        model: BaseChatModel,
        tabs: Sequence[Tab | TabFailure],
        *,
        builder: ContextBuilder | None = None,
        max_turns: int = MAX_TURNS,
        max_tool_calls: int = MAX_TOOL_CALLS,
    ) -> None:
        self.model = model
        self.tabs = list(tabs)
        self.builder = builder or ContextBuilder()
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.history: list[BaseMessage] = []
        # The model and the user know tabs as 1..N in the order given, whatever
        # ids the backend uses (the extension's tab ids, say).
        self._runner = ToolRunner(
            {str(i): t for i, t in enumerate(self.tabs, 1) if isinstance(t, Tab)}, self.builder
        )
        self._task: asyncio.Task[None] | None = None

    async def ask(self, question: str) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._task = task = asyncio.create_task(self._guarded(question, queue.put_nowait))
        try:
            while True:
                event = await queue.get()
                yield event
                if event.type in ("done", "error"):
                    return
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    def cancel(self) -> None:
        if self._task and not self._task.done():
            self._task.cancel()

    async def _guarded(self, question: str, emit: Emit) -> None:
        try:
            await self._answer(question, emit, _Run())
        except asyncio.CancelledError:
            emit(ErrorEvent(code="aborted", message="Stopped: the question was cancelled."))
        except ChatAgentError as exc:
            emit(ErrorEvent(code=exc.code, message=exc.message))
        except Exception as exc:  # noqa: BLE001 - a run must end with an event, never a hang
            emit(ErrorEvent(code="internal", message=f"{type(exc).__name__}: {exc}"))

    async def _answer(self, question: str, emit: Emit, run: _Run) -> None:
        question = question.strip()
        if not question:
            emit(ErrorEvent(code="bad_input", message="The question is empty."))
            return
        ctx = await self.builder.build(self.tabs, question)
        for label, tab in enumerate(ctx.tabs, 1):
            tab.tab_id = str(label)
        for tab in ctx.tabs:
            for note in tab.notes:
                emit(Note(text=note, tab_id=tab.tab_id))
        if not any(t.ok for t in ctx.tabs):
            emit(ErrorEvent(code="no_readable_tabs", message="None of the tabs could be read; see the notes above."))
            return
        emit(PassStart(pass_=1))
        answer, gate = await self._pass1(ctx, question, emit, run)
        if not gate.escalated and not looks_unanswerable(answer):
            self._finish(question, answer, 1, ctx, emit, run)
            return
        reason = gate.reason.strip() or "the page text did not contain the answer"
        emit(PassStart(pass_=2, reason=reason))
        await self._pass2(ctx, question, emit, run)

    async def _pass1(self, ctx: PageContext, question: str, emit: Emit, run: _Run) -> tuple[str, EscalationGate]:
        gate = EscalationGate()
        parts: list[str] = []
        stream = self.model.astream(build_messages(ctx, question, self.history))
        try:
            async for chunk in stream:
                run.add_usage(chunk)
                self._emit_text(gate.feed(chunk.text), parts, emit, run)
                if gate.escalated:
                    break  # no need to hear the rest
        finally:
            await stream.aclose()
        self._emit_text(gate.finish(), parts, emit, run)
        return "".join(parts), gate

    async def _pass2(self, ctx: PageContext, question: str, emit: Emit, run: _Run) -> None:
        self._runner.question = question
        model = self.model.bind_tools(tool_specs())
        messages = build_messages(ctx, question, self.history, tools=True)
        for _ in range(self.max_turns):
            parts: list[str] = []
            reply: AIMessageChunk | None = None
            async for chunk in model.astream(messages):
                run.add_usage(chunk)
                reply = chunk if reply is None else reply + chunk
                self._emit_text(chunk.text, parts, emit, run)
            _forget_images(messages)  # the model has seen them once; keep the history light
            ai = AIMessage(content=reply.content if reply else "", tool_calls=reply.tool_calls if reply else [])
            messages.append(ai)
            if not ai.tool_calls:
                self._finish(question, "".join(parts), 2, ctx, emit, run)
                return
            await self._run_tools(ai, messages, emit, run)
        self._finish(
            question,
            f"I stopped after {self.max_turns} model turns without finding the answer.",
            2, ctx, emit, run, stop_reason="max_turns",
        )

    async def _run_tools(self, ai: AIMessage, messages: list[BaseMessage], emit: Emit, run: _Run) -> None:
        extra: list[BaseMessage] = []  # images and fresh page text go after all tool results
        for call in ai.tool_calls:  # strictly in order, one at a time
            call_id = call["id"] or f"call_{run.tool_calls}"
            emit(ToolCall(id=call_id, name=call["name"], args=call["args"]))
            if run.tool_calls >= self.max_tool_calls:
                text = f"Error: the tool budget for this question ({self.max_tool_calls} calls) is used up. Answer with what you have."
                emit(ToolResult(id=call_id, name=call["name"], text="tool budget used up", ok=False))
                messages.append(ToolMessage(text, tool_call_id=call_id, name=call["name"]))
                continue
            run.tool_calls += 1
            outcome = await self._runner.run(call["name"], call["args"])
            emit(ToolResult(id=call_id, name=call["name"], text=outcome.summary, ok=outcome.ok))
            messages.append(ToolMessage(outcome.text, tool_call_id=call_id, name=call["name"]))
            if outcome.png_base64:
                tab_id = str(call["args"].get("tab_id", ""))
                emit(Screenshot(tab_id=tab_id, png_base64=outcome.png_base64))
                extra.append(HumanMessage(content=[
                    {"type": "text", "text": f"<browser_state>\nScreenshot of tab {tab_id}:"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{outcome.png_base64}"}},
                ]))
            if outcome.fresh:
                extra.append(HumanMessage(render_browser_state(outcome.fresh)))
        messages.extend(extra)

    def _emit_text(self, text: str, parts: list[str], emit: Emit, run: _Run) -> None:
        if not text:
            return
        if run.first_token_ms is None:
            run.first_token_ms = run.ms()
        parts.append(text)
        emit(Token(text=text))

    def _finish(
        self, question: str, answer: str, pass_: int, ctx: PageContext, emit: Emit, run: _Run,
        stop_reason: str = "answered",
    ) -> None:
        answer = answer.strip()
        self.history += [HumanMessage(question), AIMessage(answer)]
        emit(Done(
            answer=answer,
            pass_=pass_,
            citations=_citations(answer, ctx),
            usage=run.usage,
            timings=Timings(
                first_token_ms=run.first_token_ms, total_ms=run.ms(),
                extraction_ms=ctx.extraction_ms, budget_ms=ctx.budget_ms,
            ),
            tool_calls=run.tool_calls,
            stop_reason=stop_reason,
        ))


def _citations(answer: str, ctx: PageContext) -> list[Citation]:
    cited = dict.fromkeys(_CITE.findall(answer))
    readable = [t for t in ctx.tabs if t.ok]
    if not cited and len(readable) == 1:
        cited = {readable[0].tab_id: None}
    return [Citation(tab_id=t.tab_id, url=t.url, title=t.title) for t in ctx.tabs if t.tab_id in cited]


def _forget_images(messages: list[BaseMessage]) -> None:
    for i, m in enumerate(messages):
        if isinstance(m, HumanMessage) and isinstance(m.content, list):
            text = " ".join(b.get("text", "") for b in m.content if isinstance(b, dict) and b.get("type") == "text")
            messages[i] = HumanMessage(f"{text} [image shown to you earlier, omitted]")
