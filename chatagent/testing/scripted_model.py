"""An in-process chat model that replies by a script, for tests of the agent loop.

``ScriptedChatModel`` is a LangChain ``BaseChatModel`` (as pydantic-ai's
``FunctionModel`` or openai-agents' fake model): each call takes the next
scripted reply (streamed text, tool calls, an error, a stream that never ends)
or asks a ``responder`` function, and records what it was sent (the messages
and the names of the tools bound). No sockets, no threads, no pacing: a test
of what the loop does (turn limits, tool order, cancellation, retries) runs in
milliseconds and never depends on timing.

Tests of the real LangChain clients keep the Gemini-compatible server
(``gemini_server``), which checks what goes over the wire.

    model = ScriptedChatModel(replies=[Text("NEED"), Calls.one("scroll_tool", tab_id="1"), Text("Found it [Tab 1].")])
    agent = ChatAgent(model, tabs)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr


@dataclass(frozen=True)
class Text:
    """A text reply, streamed `words_per_chunk` words at a time."""

    text: str
    words_per_chunk: int = 2


@dataclass(frozen=True)
class Call:
    """One tool call; without an id, one is made up (`call_<n>`), as LangChain does for Gemini."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Calls:
    """Tool calls in one reply, optionally after some streamed text."""

    calls: Sequence[Call]
    text: str = ""

    @classmethod
    def one(cls, name: str, **args: Any) -> Calls:
        return cls([Call(name, dict(args))])


@dataclass(frozen=True)
class Fail:
    """The call raises `error`, after streaming `text` first if any (then the
    stream breaks mid-reply). Raise LangChain's standard errors
    (`langchain_core.exceptions.ModelRateLimitError`, ...) to test how a
    provider's failure is classified and retried."""

    error: BaseException
    text: str = ""


@dataclass(frozen=True)
class Hang:
    """Stream `text`, then nothing until the caller stops listening (a stalled
    or endless reply): for tests of cancellation and stall detection."""

    text: str = ""


Reply = Union[Text, Calls, Fail, Hang]


@dataclass
class Request:
    """What one model call was sent."""

    messages: list[BaseMessage]
    tools: list[str]  # names of the bound tools; empty in pass 1
    closed: bool = False  # the caller stopped reading the reply (cancelled, or enough heard)

    def text(self) -> str:
        """All the text of all messages, in order."""
        return "\n".join(_text(m) for m in self.messages)

    def tool_results(self) -> list[ToolMessage]:
        return [m for m in self.messages if isinstance(m, ToolMessage)]


Responder = Callable[[Request], Reply]


def _text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in message.content
    )


def _words(text: str) -> int:
    return len(text.split())


class ScriptedChatModel(BaseChatModel):
    """Replies with `replies` in order, then with `responder` (if given);
    with neither left, a call fails with a message saying the script ran out."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[Any] = Field(default_factory=list)
    responder: Callable[[Request], Any] | None = None
    model: str = "scripted"
    reports_usage: bool = True  # False: as llama.cpp's server, a stream carries no usage
    _requests: list[Request] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[Request]:
        """Every call so far, first first."""
        return self._requests

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any]], **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _next(self, messages: list[BaseMessage], tools: list[dict[str, Any]] | None) -> tuple[Request, Reply]:
        request = Request(list(messages), [t["function"]["name"] for t in tools or []])
        self._requests.append(request)
        if self.replies:
            return request, self.replies.pop(0)
        if self.responder is not None:
            return request, self.responder(request)
        return request, Fail(AssertionError(f"the script has no reply left for call {len(self._requests)}"))

    def _chunks(self, request: Request, reply: Reply) -> Iterator[AIMessageChunk]:
        """The reply's chunks; usage (words as tokens) rides on the last one."""
        text = reply.text
        words = text.split(" ") if text else []
        per = reply.words_per_chunk if isinstance(reply, Text) else 2
        pieces = [" ".join(words[i:i + per]) + (" " if i + per < len(words) else "") for i in range(0, len(words), per)]
        for piece in pieces:
            yield AIMessageChunk(content=piece)
        if isinstance(reply, Calls):
            yield AIMessageChunk(content="", tool_call_chunks=[
                {"name": c.name, "args": json.dumps(c.args), "id": c.id, "index": i}
                for i, c in enumerate(reply.calls)
            ])
        if isinstance(reply, Text | Calls) and self.reports_usage:
            sent = _words(request.text())
            out = _words(text) + (len(reply.calls) if isinstance(reply, Calls) else 0)
            yield AIMessageChunk(content="", usage_metadata={
                "input_tokens": sent, "output_tokens": out, "total_tokens": sent + out,
            })

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        *,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request, reply = self._next(messages, tools)
        try:
            for chunk in self._chunks(request, reply):
                yield ChatGenerationChunk(message=chunk)
            if isinstance(reply, Fail):
                raise reply.error
            if isinstance(reply, Hang):
                await asyncio.Event().wait()  # until cancelled or closed
        finally:
            request.closed = True

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, reply = self._next(messages, tools)
        if isinstance(reply, Fail):
            raise reply.error
        if isinstance(reply, Hang):
            raise NotImplementedError("a hanging reply needs a streaming call")
        message: AIMessageChunk | None = None
        for chunk in self._chunks(request, reply):
            message = chunk if message is None else message + chunk
        request.closed = True
        assert message is not None
        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content=message.content, tool_calls=message.tool_calls, usage_metadata=message.usage_metadata,
        ))])


__all__ = ["Call", "Calls", "Fail", "Hang", "Reply", "Request", "Responder", "ScriptedChatModel", "Text"]
