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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict, Field, PrivateAttr

from ..models.in_process import InProcessChatModel, pieces


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


class ScriptedChatModel(InProcessChatModel):
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

    def _next(self, messages: list[BaseMessage], tools: list[dict[str, Any]] | None) -> tuple[Request, Reply]:
        request = Request(list(messages), [t["function"]["name"] for t in tools or []])
        self._requests.append(request)
        if self.replies:
            return request, self.replies.pop(0)
        if self.responder is not None:
            return request, self.responder(request)
        return request, Fail(AssertionError(f"the script has no reply left for call {len(self._requests)}"))

    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata | None:
        """Words as tokens, when the script's server reports usage."""
        if not self.reports_usage:
            return None
        sent = sum(len(_text(m).split()) for m in messages)
        out = len(reply.text.split()) + len(reply.tool_calls)
        return {"input_tokens": sent, "output_tokens": out, "total_tokens": sent + out}

    def _message(self, reply: Reply) -> AIMessage:
        calls = reply.calls if isinstance(reply, Calls) else ()
        message = AIMessage(reply.text, tool_calls=[
            {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in calls])
        message.response_metadata["words_per_chunk"] = reply.words_per_chunk if isinstance(reply, Text) else 2
        return message

    def _text_pieces(self, reply: AIMessage) -> Iterator[str]:
        return pieces(reply.text, reply.response_metadata["words_per_chunk"])

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
            if isinstance(reply, Fail | Hang):  # its text, then it breaks or stalls
                for piece in self._text_pieces(self._message(reply)):
                    yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
                if isinstance(reply, Fail):
                    raise reply.error
                await asyncio.Event().wait()  # until cancelled or closed
            for chunk in self._chunks(messages, self._message(reply)):
                yield ChatGenerationChunk(message=chunk)
        finally:
            request.closed = True

    def _reply(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
               **kwargs: Any) -> AIMessage:
        request, reply = self._next(list(messages), tools)
        request.closed = True
        if isinstance(reply, Fail):
            raise reply.error
        if isinstance(reply, Hang):
            raise NotImplementedError("a hanging reply needs a streaming call")
        return self._message(reply)


__all__ = ["Call", "Calls", "Fail", "Hang", "Reply", "Request", "Responder", "ScriptedChatModel", "Text"]
