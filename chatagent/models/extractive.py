"""`extractive`: the offline model, a LangChain chat model over the reader in `chatagent.offline`; it quotes, never generates.

It reads the typed page context the agent binds to it (`context=PageContext`), not the
prompt's text; in pass 2, the typed results of its own tool calls (a `ScrollResult`, a
re-read `TabContext`, on the tool messages' `artifact`). When nothing on the pages
answers, or the question is about how something looks, it asks for the browser (the
escalation marker); with tools bound it re-reads each tab, scrolls each to the bottom,
and for a visual question takes a screenshot, then says it cannot read images.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from pydantic import Field, PrivateAttr

from ..context import PageContext
from ..errors import ModelError, OfflineTimeoutError
from ..limits import DEFAULT_OFFLINE_TIMEOUT_S
from ..offline.reply import Done, Reply, reply, reply_within, warm
from ..offline.worker import Readers, ReaderGone, ReadingTimeout
from ..prompts import ESCALATION_MARKER, message_text
from ..ranking import BM25Ranker, RankerFactory
from ..tokens import count_tokens
from .in_process import InProcessChatModel, pieces

# What a reply's own reading may take beyond `timeout_s` before its worker is killed: a
# question of many parts stops itself between parts (and says so); one part may run on.
GRACE = 1.5


class ExtractiveChatModel(InProcessChatModel):
    """Offline, deterministic extractive answers over the typed page context (see module doc).
    Asked asynchronously (as the agent asks it), it reads in a worker process (`offline.worker`)
    that is killed when the question is cancelled or `timeout_s` has passed; the sync API reads here."""

    ranker: RankerFactory = Field(default=BM25Ranker, exclude=True)
    timeout_s: float = DEFAULT_OFFLINE_TIMEOUT_S  # a reply's reading, at most (the offline_timeout setting)
    _readers: Readers | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "chatagent-extractive"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": "extractive"}

    def _reply(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
               context: PageContext | None = None, **_: Any) -> AIMessage:
        return _message(reply(*self._asked(messages, tools, context), self.ranker, time_s=self.timeout_s))

    async def _areply(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
                      context: PageContext | None = None, **_: Any) -> AIMessage:
        asked = self._asked(messages, tools, context)
        try:
            said = await self.readers.run(reply_within, asked, self.ranker, self.timeout_s,
                                          timeout_s=self.timeout_s * GRACE)
        except ReadingTimeout:
            stopped = (f"The offline model took longer than {self.timeout_s:g} s (the offline_timeout setting) "
                       "to read the pages, so it was stopped.")
            raise OfflineTimeoutError(f"{stopped} Ask about fewer tabs or a shorter question, or raise "
                                      "offline_timeout.", reason=stopped) from None
        except ReaderGone as exc:
            raise ModelError(f"The offline model could not answer: {exc}. Ask again.") from None
        return _message(said)

    @property
    def readers(self) -> Readers:
        """This model's worker processes, started on first use."""
        if self._readers is None:
            self._readers = Readers(preload=["chatagent.offline.reply"])
        return self._readers

    async def warm(self) -> None:
        """Start a reader now: the first question then pays no process start."""
        await self.readers.warm(warm)

    def _asked(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None,
               context: PageContext | None) -> tuple[str, PageContext, list[Done], frozenset[str]]:
        if context is None:
            raise TypeError("The extractive model answers from the page context: call it with context=PageContext.")
        question = context.question or next(
            (message_text(m) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        tool_names = frozenset(t["function"]["name"] for t in tools or [])
        return question, context, _activity(messages, question) if tool_names else [], tool_names

    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
        inp = sum(count_tokens(message_text(m)) for m in messages)
        out = count_tokens(message_text(reply)) + sum(count_tokens(json.dumps(c["args"])) for c in reply.tool_calls)
        return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}

    async def _ausage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
        # The request holds every tab's text (up to 20 of 16,000 tokens): counted off the loop.
        return await asyncio.to_thread(self._usage, messages, reply)

    def _text_pieces(self, reply: AIMessage) -> Iterator[str]:
        text = message_text(reply)
        return iter([text]) if text.startswith(ESCALATION_MARKER) else pieces(text, self.words_per_chunk)  # marker whole


def _message(said: Reply) -> AIMessage:
    if said.tool:
        return AIMessage("", tool_calls=[{"name": said.tool, "args": said.args, "id": f"call_{uuid.uuid4().hex[:12]}",
                                          "type": "tool_call"}])
    return AIMessage(said.text if not said.escalate else f"{ESCALATION_MARKER} {said.escalate}")


def _activity(messages: Sequence[BaseMessage], question: str) -> list[Done]:
    """This question's tool calls so far: (name, args, the result's typed artifact, ok)."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                 and message_text(m).strip() == question.strip()), default=-1)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in messages[start + 1 :]:
        if isinstance(m, AIMessage):
            calls.update({c["id"] or "": (c["name"], c["args"]) for c in m.tool_calls})
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name or "", {}))
            out.append((name, args, m.artifact, m.status != "error"))
    return out
