"""What one model reply may carry, checked chunk by chunk as it streams
(`retry.stream_reply`), so that a broken or hostile model server cannot make
the process hold or compute without bound: tool calls (beyond
`MAX_REPLY_TOOL_CALLS` they are ignored, and a note says so), their
arguments' bytes, and chunks that carry nothing (each one is kept by the
client until the reply ends). Bytes on the wire are bounded below it
(`models.http_bounds`)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessageChunk

from .errors import ModelReplyTooLargeError
from .limits import MAX_EMPTY_CHUNKS, MAX_REPLY_TOOL_ARGS_BYTES, MAX_REPLY_TOOL_CALLS

CALLS_CUT_NOTE = (f"The model asked for more than {MAX_REPLY_TOOL_CALLS} tool calls in one reply: "
                  f"the first {MAX_REPLY_TOOL_CALLS} are used, the rest ignored.")


class ReplyMeter:
    """One reply's tool calls, argument bytes and empty chunks so far."""

    def __init__(self) -> None:
        self.calls: set[Any] = set()
        self.arg_bytes = 0
        self.empty = 0

    def admit(self, chunk: AIMessageChunk) -> bool:
        """Whether `chunk` belongs to the reply: False when it starts a tool call past
        the bound (the reply ends before it). Raises `ModelReplyTooLargeError` past the others."""
        pieces = chunk.tool_call_chunks
        if pieces:
            # A piece without an index is a whole call (Gemini's): each is one more.
            new = {p.get("index") if p.get("index") is not None else ("whole", len(self.calls) + i)
                   for i, p in enumerate(pieces)} - self.calls
            if len(self.calls) + len(new) > MAX_REPLY_TOOL_CALLS:
                return False
            self.calls |= new
            self.arg_bytes += sum(len(p.get("args") or "") + len(p.get("name") or "") for p in pieces)
            if self.arg_bytes > MAX_REPLY_TOOL_ARGS_BYTES:
                raise ModelReplyTooLargeError(
                    f"The model's reply asked for tool calls with more than {MAX_REPLY_TOOL_ARGS_BYTES:,} bytes "
                    "of arguments: it was stopped there, and none of its calls was run.")
            return True
        if chunk.content or chunk.usage_metadata or chunk.response_metadata.get("finish_reason"):
            return True
        self.empty += 1
        if self.empty > MAX_EMPTY_CHUNKS:
            raise ModelReplyTooLargeError(
                f"The model service sent more than {MAX_EMPTY_CHUNKS:,} chunks with nothing in them in one "
                "reply: it was stopped there.")
        return True
