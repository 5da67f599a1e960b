"""The agent loop: pass 1 streams a tool-free answer; pass 2, only when pass 1
could not answer from the text, binds the three browser tools."""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from langchain_core.messages import (
    AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage, message_chunk_to_message,
)

from .browser.base import Tab, TabFailure
from .cache import AnswerCache, CachedAnswer
from .citations import resolve
from .context import ContextBuilder, PageContext, TabContext
from .deadline import QUESTION_CONNECTIONS, Connections, stop as stop_task
from .errors import ChatAgentError, ContextOverflowError, ModelError
from .escalation import EscalationGate, looks_unanswerable
from .events import (
    Done, ErrorEvent, Event, Note, Overview, PassStart, Screenshot, StopReason, TabShare, Timings, Token, ToolCall,
    ToolResult, Usage,
)
from .history import History, request_tokens
from .hooks import RunHooks
from .models import Model
from .models.window import Window
from .prompts import (
    browser_state_message, build_messages, message_text, screenshot_message, system_prompt, tool_result_text,
    without_image,
)
from .request_fit import PASS2_RESERVE, Room, drop_oldest_step, fit as fit_request, own_count
from .retry import RetryPolicy, stream_reply
from .selection import Selection
from .limits import (
    DEFAULT_DEADLINE_S, DEFAULT_MAX_ANSWER_TOKENS, INPUT_BUDGET_FACTOR, MAX_QUESTION_CHARS, MIN_INPUT_BUDGET,
)
from .tokens import count_tokens, count_tokens_off_loop
from .tools import ToolRunner, tool_specs

MAX_TURNS = 20  # model calls in pass 2
MAX_TOOL_CALLS = 24  # per question: a page cannot drive the agent into a loop
MIN_OVERFLOW_BUDGET = 250  # tokens per tab: below this, shrinking cannot help
# Every question ends within the deadline (DEFAULT_DEADLINE_S), with `done` or
# `error`. Its input tokens, all model calls together, stay within
# `input_budget` (INPUT_BUDGET_FACTOR) times its pass-1 request (pass 2 resends
# the growing conversation every turn), but never below MIN_INPUT_BUDGET: a
# small page's request is mostly fixed overhead (instructions, tool schemas),
# and three scrolls would use up 8 times it.

Emit = Callable[[Event], None]


class _Run:
    """Bookkeeping for one question: timings, usage, tool count."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.first_token_ms: float | None = None
        self.usage = Usage()
        self.tool_calls = 0
        self.sent_tokens = 0  # our estimate of the input tokens sent so far
        self.input_budget = 0  # set from the pass-1 request when pass 2 starts
        self.pass1_request: list[BaseMessage] = []
        self.counted: dict[str, int | None] = {}  # a message's text → its tokens by the model's tokenizer
        self.answer_tokens = 0  # of the text shown, as the budgets count tokens (tiktoken)
        self.cut = False  # the answer reached its limit
        self.room: Room | None = None  # what the model's window leaves each request (None: not bounded by one)
        self.history_tokens: int | None = None  # the history budget of this question's requests (None: the standing one)
        self.selection: Selection | None = None

    def spent(self) -> int:
        """Input tokens so far: the provider's count, or our estimate where that is higher."""
        return max(self.sent_tokens, self.usage.input_tokens)

    def ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000

    def add_usage(self, chunk: AIMessageChunk) -> None:
        meta = chunk.usage_metadata
        if meta:
            self.usage.input_tokens += meta.get("input_tokens", 0)
            self.usage.output_tokens += meta.get("output_tokens", 0)

    async def own_tokens(self, model: Model, text: str) -> int | None:
        """`text`'s tokens by the model's own tokenizer (its server's), None where it cannot
        say. Message by message, each counted once per question: fitting the request to the
        window counts it, a pass-2 turn resends every earlier message, and a local server's
        tokenizer is a request each."""
        if text not in self.counted:
            self.counted[text] = await model.own_tokens(text)
        return self.counted[text]

    async def count_usage(self, model: Model, request: list[BaseMessage], output: str) -> None:
        """A reply the server reported no usage for (or that was cut short
        before it did): count it ourselves, by the model's own tokenizer where
        its server has one, and say so."""
        for text in (message_text(m) for m in request):
            own = await self.own_tokens(model, text)
            self.usage.input_tokens += own if own is not None else await count_tokens_off_loop(text)
        self.usage.output_tokens += await model.count_tokens(output) if output else 0
        self.usage.counted = True


class ChatAgent:
    """Answers questions about a set of tabs as a stream of typed events.

    `ask()` yields events and always ends with exactly one `done` or `error`,
    within `deadline_s`; `cancel()` (or cancelling the consuming task) stops
    it promptly. The conversation is kept in `history` (pruned by tokens);
    with a `cache`, a repeated question about unchanged pages is answered
    from it.
    """

    def __init__(
        self,
        model: Model | Any,
        tabs: Sequence[Tab | TabFailure],
        *,
        builder: ContextBuilder | None = None,
        max_turns: int = MAX_TURNS,
        max_tool_calls: int = MAX_TOOL_CALLS,
        history: History | None = None,
        cache: AnswerCache | None = None,
        retry: RetryPolicy | None = None,
        deadline_s: float | None = DEFAULT_DEADLINE_S,
        input_budget_factor: float = INPUT_BUDGET_FACTOR,
        max_answer_tokens: int = DEFAULT_MAX_ANSWER_TOKENS,
        hooks: RunHooks | None = None,
    ) -> None:
        self.model = Model.of(model)  # a bare chat model gets generic error handling
        self.tabs = list(tabs)
        builder = builder or ContextBuilder()
        self.builder = builder.with_budget(max(builder.budget_per_tab, self.model.provider.reads_per_tab or 0))
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.history = history or History()
        self.cache = cache
        self.retry = retry or RetryPolicy()
        if self.model.on_this_machine and self.retry.first_chunk_s is None:
            # A local model's first token waits for its reading of the prompt: minutes on a laptop's
            # cores for a few tabs. Not a stall: bounded by the question's deadline.
            self.retry = replace(self.retry, first_chunk_s=deadline_s or None)
        self.deadline_s = deadline_s
        self.input_budget_factor = input_budget_factor
        self.max_answer_tokens = max_answer_tokens
        self.hooks = hooks or RunHooks()
        # The model and the user know tabs by the conversation's labels, whatever
        # ids the backend uses (the extension's tab ids, say).
        self.history.labels.assign(self.tabs)
        self._runner = ToolRunner({t.label: t for t in self.tabs if isinstance(t, Tab)}, self.builder)
        self._task: asyncio.Task[None] | None = None
        self._abandoned: set[asyncio.Task[None]] = set()  # questions past their deadline that ran on (`deadline`)

    async def ask(self, question: str, *, selection: Selection | None = None) -> AsyncIterator[Event]:
        """`selection`: text the person selected in one of the tabs, which the question is about."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        # The question's own task, with its own model connections (closed if it must be abandoned).
        connections = Connections()
        context = contextvars.copy_context()
        context.run(QUESTION_CONNECTIONS.set, connections)
        self._task = task = asyncio.create_task(self._guarded(question, queue.put_nowait, selection), context=context)
        loop = asyncio.get_running_loop()
        # The deadline is kept here, outside the question's task, by a timer of its own: the
        # libraries the task runs in may lose its cancellation (`deadline`).
        ends_at = loop.time() + self.deadline_s if self.deadline_s else None
        try:
            while True:
                try:
                    async with asyncio.timeout_at(ends_at):
                        event = await queue.get()
                except TimeoutError:
                    break
                yield event
                if event.type in ("done", "error"):
                    return
            await self._stop(task, connections)
            while not queue.empty():  # what it said before it stopped, up to its own end (an `aborted` error)
                if (event := queue.get_nowait()).type == "error":
                    break
                yield event
                if event.type == "done":  # answered as the time ran out
                    return
            stopped = f"No complete answer within {self.deadline_s:g} s, so I stopped."
            yield ErrorEvent(code="deadline", message=f"{stopped} Ask again, or allow more time with --deadline.",
                             reason=stopped, setting="deadline")
        finally:
            if not task.done() and task not in self._abandoned:
                await self._stop(task, connections)

    async def _stop(self, task: asyncio.Task[None], connections: Connections) -> None:
        """Cancel the question's task; if it runs on regardless, close its model connections and leave it."""
        if not await stop_task(task):
            self._abandoned.add(task)  # held until it ends: a task nobody references may be collected mid-run
            task.add_done_callback(self._abandoned.discard)
            await connections.close_all()

    def cancel(self) -> None:
        if self._task and not self._task.done():
            self._task.cancel()

    async def _guarded(self, question: str, emit: Emit, selection: Selection | None = None) -> None:
        try:
            await self._answer(question, emit, _Run(), selection)
        except asyncio.CancelledError:
            emit(ErrorEvent(code="aborted", message="Stopped: the question was cancelled."))
        except ChatAgentError as exc:
            emit(ErrorEvent.of(exc))
        except Exception as exc:  # noqa: BLE001 - a run must end with an event, never a hang
            emit(ErrorEvent(code="internal", message=f"{type(exc).__name__}: {exc}"))

    async def _answer(self, question: str, emit: Emit, run: _Run, selection: Selection | None = None) -> None:
        question = question.strip()
        if not question:
            emit(ErrorEvent(code="bad_input", message="The question is empty."))
            return
        if len(question) > MAX_QUESTION_CHARS:
            emit(ErrorEvent(code="bad_input", message=(
                f"The question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. Shorten it."
            )))
            return
        run.selection = selection
        # Asked while the tabs are read (a server's answer, the first time only: then it is remembered).
        window: Window | asyncio.Future[Window] | None = None
        if not self.model.provider.reads_context:
            window = self.model.known_window() or asyncio.ensure_future(self.model.window())
        try:
            ctx = await self._context(self.builder, question, emit, selection=selection)
            if window is not None and any(t.ok for t in ctx.tabs):
                known = window if isinstance(window, Window) else await window
                ctx = await self._within_window(ctx, known, question, emit, run, selection)
        finally:
            if isinstance(window, asyncio.Future) and not window.done():
                window.cancel()
        self.hooks.context_built(ctx)
        if not any(t.ok for t in ctx.tabs):
            emit(ErrorEvent(code="no_readable_tabs", message="None of the tabs could be read; the notes say why."))
            return
        key = AnswerCache.key(self.model.identity, question, ctx) if self.cache is not None else ""
        if self.cache is not None and (hit := self.cache.get(key)):
            self._replay(question, hit, ctx, emit, run)
            return
        try:
            done = await self._passes(ctx, question, emit, run, run.history_tokens)
        except ContextOverflowError:
            if run.first_token_ms is not None or self.builder.budget_per_tab // 2 < MIN_OVERFLOW_BUDGET:
                raise
            emit(Note(text="The pages and the conversation were too long for the model: "
                      "trying once more with half as much of each."))
            smaller = self.builder.with_budget(self.builder.budget_per_tab // 2)
            ctx = await self._context(smaller, question, emit, notes=False, selection=selection)
            done = await self._passes(ctx, question, emit, run, history_tokens=self.history.budget_tokens // 2)
        if self.cache is not None and done.stop_reason == "answered" and done.answer:
            self.cache.put(key, CachedAnswer(done.answer, done.pass_, done.citations, done.dropped_citations))

    async def _within_window(
        self, ctx: PageContext, window: Window | None, question: str, emit: Emit, run: _Run, selection: Selection | None,
        *, tools: bool = False,
    ) -> PageContext:
        """`ctx`, or a smaller one, and the history this question keeps, so that its request
        and its answer fit the model's `window` (`request_fit`); in pass 2 (`tools`), with
        room kept for the tools' schemas and results."""
        if window is not None:
            run.room = Room.of(window, self.max_answer_tokens)
        assert run.room is not None
        room = run.room
        if tools:
            room = replace(room, prompt=int(room.prompt * (1 - PASS2_RESERVE)))
        fence = self.history.fence
        # An upper bound (a token is at least a byte): counted exactly only where it is close.
        fixed = len(system_prompt(ctx, fence, tools=tools).encode()) + len(question.encode()) + self.history.tokens + 16

        def request(c: PageContext, history_tokens: int | None) -> list[BaseMessage]:
            history = self.history.messages(tools=tools, budget_tokens=history_tokens)
            return build_messages(c, question, history, fence=fence, tools=tools)

        async def build(builder: ContextBuilder) -> PageContext:
            return await self._context(builder, question, emit, notes=False, selection=selection)

        builder = self.builder.with_budget(ctx.budget_per_tab)
        count = own_count(partial(run.own_tokens, self.model)) if self.model.counts_own_tokens else None
        fitted = await fit_request(room, self.model.name, builder, ctx, build, request, fixed=fixed, count=count,
                                   history_tokens=self.history.tokens if run.history_tokens is None
                                   else min(run.history_tokens, self.history.tokens))
        run.history_tokens = fitted.history_tokens
        if fitted.answer_tokens is not None:  # the answer gave way to the tabs: for the rest of the question
            run.room = replace(run.room, prompt=run.room.prompt + run.room.answer - fitted.answer_tokens,
                               answer=fitted.answer_tokens)
        if fitted.note:
            emit(Note(text=fitted.note))
        return fitted.context

    async def _context(
        self, builder: ContextBuilder, question: str, emit: Emit, *, notes: bool = True,
        selection: Selection | None = None,
    ) -> PageContext:
        """Build the page context (every tab re-read; unchanged ones come from
        the extraction cache) and say which tabs changed since the last question."""
        ctx = await builder.build(self.tabs, question, selection=selection)
        for tab in ctx.tabs:  # tab_id: the tab's label
            before = self.history.pages.get(tab.tab_id)
            if tab.ok and before and before[0] != tab.url:
                tab.notes = [*tab.notes, f"Tab {tab.tab_id} is now at {tab.url} (it was at {before[0]} "
                             "at the last question); reading the new page."]
            elif tab.ok and before and before[1] != tab.content_hash:
                tab.notes = [*tab.notes, f"Tab {tab.tab_id} changed since the last question; reading it again."]
            if tab.ok:
                self.history.pages[tab.tab_id] = (tab.url, tab.content_hash)
            for note in tab.notes if notes else ():
                emit(Note(text=note, tab_id=tab.tab_id))
        return ctx

    async def _passes(
        self, ctx: PageContext, question: str, emit: Emit, run: _Run, history_tokens: int | None = None,
    ) -> Done:
        emit(PassStart(pass_=1))
        answer, gate = await self._pass1(ctx, question, emit, run, history_tokens)
        if run.cut or (not gate.escalated and not looks_unanswerable(answer)):
            return self._finish([HumanMessage(question), AIMessage(answer)], 1, ctx, emit, run)
        reason = gate.reason.strip() or "the page text did not contain the answer"
        emit(PassStart(pass_=2, reason=reason))
        return await self._pass2(ctx, question, emit, run, history_tokens)

    def _replay(self, question: str, hit: CachedAnswer, ctx: PageContext, emit: Emit, run: _Run) -> None:
        """A cached answer streams like a fresh one (tokens, then `done` marked
        cached); no pass starts, since no model is asked."""
        for word in re.findall(r"\S+\s*", hit.answer):
            self._emit_text(word, [], emit, run)
        self.history.recall(question, hit.answer)
        emit(Done(
            answer=hit.answer, pass_=hit.pass_, citations=hit.citations, dropped_citations=hit.dropped_citations,
            cached=True, model=self.model.name,
            overviews=Overview.of(ctx.tabs), shares=TabShare.of(ctx.tabs),
            timings=Timings(first_token_ms=run.first_token_ms, total_ms=run.ms(),
                            extraction_ms=ctx.extraction_ms, budget_ms=ctx.budget_ms),
        ))

    async def _stream(
        self, model: Any, messages: list[BaseMessage], emit: Emit, *, pass_: int, turn: int = 1,
    ) -> AsyncGenerator[AIMessageChunk, None]:
        """One reply; it ends in a typed error unless it carries text, or tool
        calls when tools are bound in pass 2 (see `stream_reply`)."""
        def on_retry(err: ModelError, attempt: int, delay: float) -> None:
            emit(Note(text=f"{err.message} Retrying in {delay:.1f} s "
                      f"(try {attempt + 1} of {self.retry.attempts})."))

        def start() -> AsyncIterator[AIMessageChunk]:
            self.hooks.request_sent(pass_, turn, messages)
            return model.astream(messages)

        first = True
        stream = stream_reply(start, self.retry, tools_bound=pass_ == 2, classify=self.model.classify,
                              on_retry=on_retry,
                              # Pass 1 runs no calls: there, a reply of calls alone is an error of its own.
                              on_cut=(lambda why: emit(Note(text=why))) if pass_ == 2 else None)
        try:
            async for chunk in stream:
                if first:
                    first = False
                    self.hooks.first_chunk(pass_, turn)
                yield chunk
        finally:
            await stream.aclose()

    async def _pass1(
        self, ctx: PageContext, question: str, emit: Emit, run: _Run, history_tokens: int | None,
    ) -> tuple[str, EscalationGate]:
        gate = EscalationGate()
        parts: list[str] = []
        history = self.history.messages(tools=False, budget_tokens=history_tokens)
        # Counted only if pass 2 needs its budget: tokenizing ten tabs' text here
        # would delay every first token by milliseconds.
        run.pass1_request = build_messages(ctx, question, history, fence=self.history.fence)
        stream = self._stream(self._reading(self.model.chat, ctx), run.pass1_request, emit, pass_=1)
        heard: list[str] = []  # what the model said, the escalation marker included
        reported = False
        try:
            async for chunk in stream:
                run.add_usage(chunk)
                reported = reported or bool(chunk.usage_metadata)
                heard.append(chunk.text)
                self._emit_text(gate.feed(chunk.text), parts, emit, run)
                if gate.escalated or self._cut(run, emit):
                    break  # no need to hear the rest
        finally:
            await stream.aclose()
        if not run.cut:
            self._emit_text(gate.finish(), parts, emit, run)
        if self.model.provider.metered and not reported:  # every model but the offline reader: its tokens are what it cost
            await run.count_usage(self.model, run.pass1_request, "".join(heard))
        return "".join(parts), gate

    async def _pass2(
        self, ctx: PageContext, question: str, emit: Emit, run: _Run, history_tokens: int | None,
    ) -> Done:
        if run.room is not None:  # the tools' schemas and results need room in the window too
            ctx = await self._within_window(ctx, None, question, emit, run, run.selection, tools=True)
            history_tokens = run.history_tokens
        self._runner.builder = self.builder.with_budget(ctx.budget_per_tab)  # a re-read tab: no larger
        self._runner.start(question, ctx)
        prompt_tokens = await request_tokens(run.pass1_request)
        run.sent_tokens += prompt_tokens
        run.input_budget = max(int(self.input_budget_factor * prompt_tokens), MIN_INPUT_BUDGET)
        model = self._reading(self.model.chat.bind_tools(tool_specs()), ctx)
        history = self.history.messages(tools=True, budget_tokens=history_tokens)
        messages = build_messages(ctx, question, history, fence=self.history.fence, tools=True)
        turn_start = len(messages) - 1  # this question's messages: kept in the history afterwards
        for turn in range(1, self.max_turns + 1):
            need = await request_tokens(messages)
            # Over the window: this question's oldest browser steps go first, then it stops.
            while run.room is not None and need > run.room.prompt and drop_oldest_step(messages, turn_start):
                need = await request_tokens(messages)
            if run.room is not None and need > run.room.prompt:
                stop = AIMessage(
                    f"I stopped looking: another step would not fit {self.model.name}'s window of "
                    f"{run.room.window.tokens:,} tokens. Ask about fewer tabs, or a more specific question."
                )
                return self._finish([*messages[turn_start:], stop], 2, ctx, emit, run, stop_reason="window")
            if self.model.provider.metered and run.spent() + need > run.input_budget:
                stop = AIMessage(
                    f"I stopped looking: another step would take this question past its input-token budget "
                    f"of {run.input_budget:,} tokens. Ask a more specific question."  # the CLI adds its flag (render.py)
                )
                return self._finish([*messages[turn_start:], stop], 2, ctx, emit, run, stop_reason="input_budget")
            run.sent_tokens += need
            parts: list[str] = []
            chunks: list[AIMessageChunk] = []
            stream = self._stream(model, messages, emit, pass_=2, turn=turn)
            try:
                async for chunk in stream:
                    run.add_usage(chunk)
                    chunks.append(chunk)
                    self._emit_text(chunk.text, parts, emit, run)
                    if self._cut(run, emit):
                        break
            finally:
                await stream.aclose()
            # Joined once at the end: adding chunk to chunk remakes the message (its calls'
            # arguments parsed again) each time, which is quadratic in the chunks.
            reply = chunks[0] + chunks[1:] if len(chunks) > 1 else chunks[0] if chunks else None
            if self.model.provider.metered and reply is not None and not reply.usage_metadata:
                calls = "".join(c["name"] + json.dumps(c["args"]) for c in reply.tool_calls)
                await run.count_usage(self.model, messages, str(reply.text) + calls)
            if run.cut:  # what was said so far is the answer; calls it was making are not run
                return self._finish([*messages[turn_start:], AIMessage("".join(parts))], 2, ctx, emit, run)
            _forget_images(messages)  # the model has seen them once; keep the history light
            # The whole message, not just text and calls: providers put what they
            # need to see again (Gemini's thought signatures) in its extra fields.
            ai = message_chunk_to_message(reply) if reply is not None else AIMessage("")
            messages.append(ai)
            if not ai.tool_calls:
                return self._finish(messages[turn_start:], 2, ctx, emit, run)
            await self._run_tools(ai, messages, emit, run)
        stop = AIMessage(f"I stopped after {self.max_turns} model turns without finding the answer.")
        return self._finish([*messages[turn_start:], stop], 2, ctx, emit, run, stop_reason="max_turns")

    async def _run_tools(self, ai: AIMessage, messages: list[BaseMessage], emit: Emit, run: _Run) -> None:
        fence = self.history.fence
        extra: list[BaseMessage] = []  # images and fresh page text go after all tool results
        for call in ai.tool_calls:  # strictly in order, one at a time
            call_id = call["id"] or f"call_{run.tool_calls}"
            emit(ToolCall(id=call_id, name=call["name"], args=call["args"]))
            if run.tool_calls >= self.max_tool_calls:
                text = f"The tool budget for this question ({self.max_tool_calls} calls) is used up. Answer with what you have."
                emit(ToolResult(id=call_id, name=call["name"], text="tool budget used up", ok=False))
                messages.append(ToolMessage(text, tool_call_id=call_id, name=call["name"], status="error"))
                continue
            run.tool_calls += 1
            outcome = await self._runner.run(call["name"], call["args"])
            self.hooks.tool_called(call["name"], outcome.ok)
            emit(ToolResult(id=call_id, name=call["name"], text=outcome.summary, ok=outcome.ok))
            # Tool results carry page text (and errors quoting URLs): fenced as untrusted.
            messages.append(ToolMessage(
                tool_result_text(outcome.text, fence), tool_call_id=call_id, name=call["name"],
                status="success" if outcome.ok else "error",
                # Typed (where a scroll left the tab, a re-read tab): for a model that reads
                # context and for code reading the conversation; never sent as text.
                artifact=outcome.scroll or outcome.fresh,
            ))
            if outcome.png_base64:
                emit(Screenshot(tab_id=outcome.tab_id, png_base64=outcome.png_base64))
                extra.append(screenshot_message(outcome.tab_id, outcome.png_base64, fence))
            if outcome.fresh:
                extra.append(browser_state_message(outcome.fresh, fence))
        messages.extend(extra)

    def _reading(self, model: Any, ctx: PageContext) -> Any:
        """The model, given the typed page context when its provider reads it (the offline model)."""
        return model.bind(context=ctx) if self.model.provider.reads_context else model

    def _emit_text(self, text: str, parts: list[str], emit: Emit, run: _Run) -> None:
        if not text:
            return
        if run.first_token_ms is None:
            run.first_token_ms = run.ms()
        parts.append(text)
        run.answer_tokens += count_tokens(text)
        emit(Token(text=text))

    def _cut(self, run: _Run, emit: Emit) -> bool:
        """Whether the answer has reached `max_answer_tokens`: then its stream is
        closed (a provider stops generating when its stream is) and a note says so."""
        limit = min(self.max_answer_tokens, run.room.answer) if run.room else self.max_answer_tokens
        if run.cut or run.answer_tokens < limit:
            return run.cut
        run.cut = True
        emit(Note(text=f"The answer reached its length limit ({limit:,} tokens) and was cut there."))
        return True

    def _finish(
        self, turn: list[BaseMessage], pass_: int, ctx: PageContext, emit: Emit, run: _Run,
        stop_reason: StopReason = "answered",
    ) -> Done:
        """End the question: the turn joins the history; `done` goes out."""
        answer = str(turn[-1].text).strip()
        self.history.add([*turn[:-1], AIMessage(answer)])
        # Pass 2's re-read tabs (tool artifacts) have blocks of their own, numbered after the context's.
        reread = [m.artifact for m in turn if isinstance(m, ToolMessage) and isinstance(m.artifact, TabContext)]
        citations, dropped = resolve(answer, [*ctx.tabs, *reread])
        done = Done(
            answer=answer,
            pass_=pass_,
            citations=citations,
            dropped_citations=dropped,
            usage=run.usage,
            timings=Timings(
                first_token_ms=run.first_token_ms, total_ms=run.ms(),
                extraction_ms=ctx.extraction_ms, budget_ms=ctx.budget_ms,
            ),
            tool_calls=run.tool_calls,
            stop_reason=stop_reason,
            truncated=run.cut,
            model=self.model.name,
            overviews=Overview.of(ctx.tabs),
            shares=TabShare.of(ctx.tabs),
        )
        emit(done)
        return done


def _forget_images(messages: list[BaseMessage]) -> None:
    for i, m in enumerate(messages):
        if isinstance(m, HumanMessage) and isinstance(m.content, list):
            messages[i] = without_image(m)
