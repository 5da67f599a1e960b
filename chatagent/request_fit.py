"""Every request within the window of the model that answers it.

A model reads its prompt and writes its answer in one window (`models.window.Window`):
Ollama runs a model with 4,096 tokens unless told otherwise and drops the start of a
longer prompt without a word (the instructions and the first tabs go first); llama.cpp's
server refuses it. So before a question is sent, its request is held to the window:

- `Room.of`: of the window, WINDOW_USE is the request's (counted with the model's own
  tokenizer where its server has one, llama.cpp's /tokenize; else cl100k, which counts
  other tokenizers' tokens only about: the rest is the margin), and of that, room for the answer
  (`max_answer_tokens`, at most ANSWER_SHARE of a small window); the prompt gets the rest.
- `fit`: when the prompt is over its room, the conversation so far is pruned first (oldest
  turns first, whole turns: no tool result without its call), then every tab's budget
  shrinks, never below MIN_TAB_BUDGET (a tab's title and its best lines). A note says what
  was shrunk, once. A window too small for even that is `WindowTooSmallError`, naming the
  model and the `context_window` setting.

A prompt well within its room (a hosted model's window of a million tokens) is not
counted at all: an upper bound from the tabs' own counts decides, so no first token
waits on tokenizing ten tabs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from langchain_core.messages import AIMessage, BaseMessage

from .context import ContextBuilder, PageContext
from .errors import ChatAgentError
from .history import message_extra_tokens, request_tokens
from .limits import MIN_TAB_BUDGET
from .models.window import Window
from .prompts import message_text

WINDOW_USE = 0.9  # of the window, what a request (prompt and answer) may take
ANSWER_SHARE = 0.25  # of the request's room, the answer's at most: a small window keeps most of it for the pages
MIN_ANSWER_TOKENS = 64  # ...but never less than this
ANSWER_FLOOR = 128  # when the tabs cannot shrink further, the answer's room gives way down to this (~100 words)
TAB_FRAME_TOKENS = 24  # a tab's header and tags in the prompt, besides its url, title and notes
SURE_SHARE = 0.8  # a prompt whose upper bound is within this share of its room is not counted exactly
MAX_REFITS = 4  # tabs fitted again into a smaller budget at most this many times
KEEP_SHARE = 0.95  # of what a refit would leave of the pages, what it aims at
PASS2_RESERVE = 0.25  # of the prompt's room, kept in pass 2 for the tools' schemas, results and screenshots


class WindowTooSmallError(ChatAgentError):
    """Not even each tab's title and best lines fit the model's window with the question."""

    code = "window_too_small"
    setting = "context_window"


@dataclass(frozen=True)
class Room:
    """What a request may take of `window`: `prompt` tokens (cl100k), `answer` tokens for the reply."""

    window: Window
    prompt: int
    answer: int

    @classmethod
    def of(cls, window: Window, max_answer_tokens: int) -> "Room":
        usable = int(window.tokens * WINDOW_USE)
        answer = max(min(max_answer_tokens, int(usable * ANSWER_SHARE)), min(MIN_ANSWER_TOKENS, usable // 2))
        return cls(window, max(usable - answer, 0), answer)


@dataclass(frozen=True)
class Fitted:
    context: PageContext
    history_tokens: int | None  # the history budget of this request (None: the conversation's own)
    note: str | None  # what was shrunk to fit, in words; None: nothing was
    answer_tokens: int | None = None  # the answer's room, where it gave way to the prompt (None: as it was)


# Builds the page context at a per-tab budget; makes the request's messages from a context
# and a history budget (None: the conversation's own).
Build = Callable[[ContextBuilder], Awaitable[PageContext]]
Request = Callable[[PageContext, "int | None"], list[BaseMessage]]


# A request's tokens by the model's own tokenizer; None: it cannot say (cl100k counts then).
Count = Callable[[list[BaseMessage]], Awaitable["int | None"]]


def own_count(count_text: Callable[[str], Awaitable["int | None"]]) -> Count:
    """A request counted by the model's own tokenizer (`count_text`: its server's, llama.cpp's
    /tokenize), message by message, so a caller that remembers each text's count asks once
    for a message resent; each message's framing, images and tool calls as cl100k counts them."""

    async def count(messages: list[BaseMessage]) -> int | None:
        total = 0
        for m in messages:
            text = message_text(m)
            n = await count_text(text)
            if n is None:
                return None
            total += n + message_extra_tokens(m)
        return total

    return count


def upper_bound(ctx: PageContext, fixed: int) -> int:
    """The prompt's tokens at most, from what is already counted: each tab's text with its ids,
    its frame, and `fixed` (the instructions, the question, the history)."""
    tabs = sum(t.prompt_tokens + len(f"{t.url} {t.title} {' '.join(t.notes)}".encode()) + TAB_FRAME_TOKENS
               for t in ctx.tabs)  # a token is at least a byte
    return tabs + fixed


async def fit(
    room: Room, model: str, builder: ContextBuilder, ctx: PageContext, build: Build, request: Request, *,
    fixed: int, history_tokens: int, count: Count | None = None,
) -> Fitted:
    """`ctx` (built by `builder`), or the context and history budget that fit `room`.
    `fixed`: the tokens of the request besides its tabs, history included (an upper bound);
    `history_tokens`: what the history costs of it; `count`: the model's own tokenizer, where
    its server has one (else cl100k counts)."""

    async def tokens(messages: list[BaseMessage]) -> int:
        own = await count(messages) if count is not None else None
        return own if own is not None else await request_tokens(messages)

    # The bound is in cl100k's tokens for the tabs: a model's own tokenizer may count more.
    if count is None and upper_bound(ctx, fixed) <= room.prompt * SURE_SHARE:
        return Fitted(ctx, None, None)
    need = await tokens(request(ctx, None))
    if need <= room.prompt:
        return Fitted(ctx, None, None)
    shrunk: list[str] = []
    # The conversation so far goes first: this request keeps only what the room leaves of it.
    keep = max(history_tokens - (need - room.prompt), 0) if history_tokens else None
    if keep is not None:
        need = await tokens(request(ctx, keep))
        shrunk.append("the earlier turns")
        if need <= room.prompt:
            return Fitted(ctx, keep, _note(room, model, shrunk, ctx, builder.budget_per_tab))
    budget = builder.budget_per_tab
    readable = max(sum(t.ok for t in ctx.tabs), 1)
    for _ in range(MAX_REFITS):
        pages = sum(t.prompt_tokens for t in ctx.tabs if t.ok)
        over = need - room.prompt
        if count is not None:  # in the pages' tokens (cl100k's), not the model's own
            over = over * await request_tokens(request(ctx, keep)) / max(need, 1)
        if budget <= MIN_TAB_BUDGET:
            break
        # The pages' part shrinks by what is over, and a little more of what is left (KEEP_SHARE):
        # block ids and cuts do not shrink exactly. The budget bounds a tab's text (its ids come
        # on top) and is shared (a short tab leaves the rest to the others): so from the text the
        # tabs hold, not from the budget they had.
        text = sum(t.tokens for t in ctx.tabs if t.ok)
        smaller = int(KEEP_SHARE * text * max(pages - over, 0) / max(pages, 1) / readable)
        budget = max(min(smaller, budget - 1), MIN_TAB_BUDGET)
        ctx = await build(builder.with_budget(budget))
        need = await tokens(request(ctx, keep))
        if need <= room.prompt:
            return Fitted(ctx, keep, _note(room, model, [*shrunk, "the tabs"], ctx, budget))
    # Last, the answer's room, down to ANSWER_FLOOR: in a small window, a shorter answer over every tab.
    if room.answer - ANSWER_FLOOR >= need - room.prompt > 0:
        given = replace(room, prompt=need, answer=room.answer - (need - room.prompt))
        return Fitted(ctx, keep, _note(given, model, [*shrunk, "the tabs", "the answer's room"], ctx, budget),
                      answer_tokens=given.answer)
    raise WindowTooSmallError(
        f"{model} reads {room.window.describe()}: too few for this question with {readable} tab"
        f"{'s' if readable != 1 else ''}, even at {MIN_TAB_BUDGET} tokens a tab ({need:,} tokens, "
        f"room for {room.prompt:,} with {room.answer:,} kept for the answer). Ask about fewer tabs, or set "
        "--context-window (context_window) to the window the server really runs the model with.",
        reason=f"{model}'s window ({room.window.tokens:,} tokens) is too small for this question with "
               f"{readable} tab{'s' if readable != 1 else ''}.",
    )


def _note(room: Room, model: str, shrunk: list[str], ctx: PageContext, budget: int) -> str:
    tabs = [t for t in ctx.tabs if t.ok]
    what = " and ".join(shrunk) if len(shrunk) < 3 else f"{', '.join(shrunk[:-1])} and {shrunk[-1]}"
    each = (f"; the tabs got about {budget:,} tokens each ({sum(t.tokens for t in tabs):,} in all)"
            if "the tabs" in shrunk else "")
    return (f"{model} reads {room.window.describe()}: to fit it, {what} were shortened, "
            f"with {room.answer:,} tokens kept for the answer{each}.")


def drop_oldest_step(messages: list[BaseMessage], question_at: int) -> bool:
    """Drop this question's oldest browser step from `messages` (its model turn with its tool
    calls, their results and what they showed, up to the next model turn), never the latest;
    False when there is no older step to drop. A call never loses its result, nor a result its call."""
    turns = [i for i in range(question_at + 1, len(messages)) if isinstance(messages[i], AIMessage)]
    if len(turns) < 2:
        return False
    del messages[turns[0]:turns[1]]
    return True
