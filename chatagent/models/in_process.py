"""A chat model whose reply is made here, in this process, and streamed as a provider streams one:
its text a few words at a time, then its tool calls, then the usage. The offline `extractive`
model and the tests' scripted model are both one; each says only what it replies."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

_WORD = re.compile(r"\S+\s*|\s+")


def pieces(text: str, words: int) -> Iterator[str]:
    """`text` in pieces of `words` words, each with the space after it."""
    found = _WORD.findall(text)
    for i in range(0, len(found), max(words, 1)):
        yield "".join(found[i : i + words])


class InProcessChatModel(BaseChatModel):
    """Subclasses say what they reply (`_reply`) and what it cost (`_usage`); this streams it."""

    words_per_chunk: int = 4

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: Sequence[BaseMessage], **kwargs: Any) -> AIMessage:
        raise NotImplementedError

    async def _areply(self, messages: Sequence[BaseMessage], **kwargs: Any) -> AIMessage:
        """The reply, asked from the event loop: where its making is work, off it (the offline model's)."""
        return self._reply(messages, **kwargs)

    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata | None:
        return None  # as a server that reports none

    async def _ausage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata | None:
        return self._usage(messages, reply)

    def _text_pieces(self, reply: AIMessage) -> Iterator[str]:
        return pieces(reply.text, self.words_per_chunk)

    def _chunks(self, messages: Sequence[BaseMessage], reply: AIMessage,
                usage: UsageMetadata | None = None) -> Iterator[AIMessageChunk]:
        """`usage`: counted already (off the loop), else counted here."""
        for piece in self._text_pieces(reply):
            yield AIMessageChunk(content=piece)
        if reply.tool_calls:
            yield AIMessageChunk(content="", tool_call_chunks=[
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
                for i, c in enumerate(reply.tool_calls)])
        if (usage := usage or self._usage(messages, reply)) is not None:
            yield AIMessageChunk(content="", usage_metadata=usage)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        reply = self._reply(messages, **kwargs)
        reply.usage_metadata = self._usage(messages, reply)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, self._reply(messages, **kwargs)):
            yield ChatGenerationChunk(message=chunk)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        reply = await self._areply(messages, **kwargs)
        reply.usage_metadata = await self._ausage(messages, reply)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        reply = await self._areply(messages, **kwargs)
        for chunk in self._chunks(messages, reply, await self._ausage(messages, reply)):
            yield ChatGenerationChunk(message=chunk)
            # A chunk at a time, as a server's stream comes: a long answer read out in one step of
            # the loop would hold every other call sharing it (an MCP server's, the deadline's timer).
            await asyncio.sleep(0)
