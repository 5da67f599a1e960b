"""Model servers that misbehave, through the real ChatOpenAI client against the
OpenAI-compatible stand-ins (`chatagent.testing.openai_server`) and through
`chatagent ask`: a stream that floods chunks with nothing in them or stalls,
a reply of thousands of tool calls or with a huge argument, a `/tokenize`
answer that never ends, a client that loses its cancellation. Each question
ends as its user is told: its deadline kept (the `deadline` error), a typed
error or a note saying what happened, or its answer; the connection to the
misbehaving server is closed; what it held is bounded.

No timings are asserted: each test's own timeout (far past its deadline)
trips only if a deadline or bound does not hold."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk

from chatagent import reply_bounds
from chatagent.agent import ChatAgent
from chatagent.browser.static import StaticTab
from chatagent.events import Done, ErrorEvent, Event, Note, ToolCall
from chatagent.limits import MAX_EMPTY_CHUNKS, MAX_REPLY_TOOL_CALLS
from chatagent.models import load_model
from chatagent.prompts import ESCALATION_MARKER
from chatagent.retry import RetryPolicy
from chatagent.settings import Settings
from chatagent.testing.openai_server import (
    ChatReply, EmptyChunkFlood, HugeArgument, LlamaCppServer, OpenAICompatibleServer, StallReply, ToolCallFlood,
)

from conftest import ROOT, Site
from test_mcp import server as stdio_server
from warm_start import command

pytest.importorskip("langchain_openai")
pytestmark = pytest.mark.asyncio(loop_scope="session")

PAGE = "<html><head><title>Aurora</title></head><body><h1>Aurora X14 Pro</h1><p>Price: $1,349.00.</p></body></html>"
ANSWER = "The Aurora X14 Pro costs $1,349.00 [Tab 1]."
NEED = ChatReply(text=f"{ESCALATION_MARKER} the answer is not in the page text")
ONCE = RetryPolicy(attempts=1, stall_s=60.0)


def agent_for(server: OpenAICompatibleServer, *, window: int | None = None, **kwargs: Any) -> ChatAgent:
    model = load_model("openai:local", Settings(openai_base_url=server.url, context_window=window))
    kwargs.setdefault("retry", ONCE)
    return ChatAgent(model, [StaticTab("1", "http://shop.test/aurora", PAGE, title="Aurora")], **kwargs)


async def ask(agent: ChatAgent, question: str = "How much does it cost?") -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1 and isinstance(events[-1], (Done, ErrorEvent))
    return events


def ended_with(events: list[Event], code: str) -> ErrorEvent:
    last = events[-1]
    assert isinstance(last, ErrorEvent) and last.code == code, last
    return last


def notes(events: list[Event]) -> str:
    return "\n".join(e.text for e in events if isinstance(e, Note))


@pytest.mark.e2e
@pytest.mark.timeout(90)
async def test_ask_keeps_its_deadline_against_a_server_flooding_empty_chunks(tmp_path: Any) -> None:
    """`chatagent ask --deadline 8` against a server streaming chunks with nothing in them,
    fast but (in 8 s) short of the empty-chunk bound: the client's per-chunk timer lost the
    cancellation, and the question ran on past 120 s. Now the deadline's error, exit 1,
    no traceback, and the server saw the connection closed."""
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    with OpenAICompatibleServer(replies=[EmptyChunkFlood(per_write=16, pace_s=0.01)]) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_OPENAI_BASE_URL": server.url}
        proc = await asyncio.to_thread(
            subprocess.run, command("ask", str(page), "-q", "How much?", "--model", "openai:local", "--deadline", "8"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=80,
        )
        chats = server.chat_requests
    assert proc.returncode == 1, proc.stderr
    assert "error (deadline): No complete answer within 8 s" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert chats and chats[0].hung_up, "the flooding stream was never closed"


@pytest.mark.timeout(120)
async def test_a_flood_of_empty_chunks_ends_at_its_bound_not_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """At full speed, a flood of empty chunks (each kept by the client until the reply ends:
    930 MB before) is stopped at its bound with a typed error, long before the deadline. The
    bound is a tenth of MAX_EMPTY_CHUNKS here: the client reads ~1,500 chunks a second idle,
    and a tenth of that on the suite's busy machine."""
    bound = MAX_EMPTY_CHUNKS // 10
    monkeypatch.setattr(reply_bounds, "MAX_EMPTY_CHUNKS", bound)
    async with OpenAICompatibleServer(replies=[EmptyChunkFlood()]) as server:
        events = await ask(agent_for(server, deadline_s=100))
        [chat] = server.chat_requests
    err = ended_with(events, "model_reply_too_large")
    assert f"more than {bound:,} chunks with nothing in them" in err.message
    assert chat.hung_up


@pytest.mark.timeout(60)
async def test_a_stall_mid_answer_with_keepalives_fires_the_stall_timer() -> None:
    """Part of an answer, then SSE keep-alive comments and no chunk: the stall timer fires
    (keep-alives are bytes, not chunks), the answer is said to be cut, the connection closed."""
    async with OpenAICompatibleServer(replies=[StallReply(text="The Aurora ", keepalive_s=0.2)]) as server:
        events = await ask(agent_for(server, retry=RetryPolicy(attempts=2, stall_s=2.0), deadline_s=600))
        [chat] = server.chat_requests
    err = ended_with(events, "model_interrupted")
    assert "sent nothing for 2 s" in err.message
    assert chat.hung_up


class _Deaf:
    """A chat model whose stream loses every cancellation (as a library might): it says a
    word, then goes on waiting for 30 s whatever it is told."""

    def __init__(self) -> None:
        self.ignored = 0
        self.released = False  # the test is over: stop waiting
        self.gone = asyncio.Event()  # its stream has ended

    async def astream(self, messages: Any, **kwargs: Any) -> AsyncIterator[AIMessageChunk]:
        try:
            yield AIMessageChunk(content="The ")
            end = time.monotonic() + 30
            while time.monotonic() < end and not self.released:
                try:
                    await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    self.ignored += 1
            yield AIMessageChunk(content="answer, too late.")
        finally:
            self.gone.set()


@pytest.mark.timeout(40)
async def test_the_deadline_holds_when_the_model_client_ignores_cancellation() -> None:
    """The question's own timer cancels, cancels again, then leaves the task: the deadline's
    error comes (the words said before it too), though the model's stream never stopped.
    The deadline leaves a busy machine time to read the tab before the model is asked."""
    deaf = _Deaf()
    agent = ChatAgent(deaf, [StaticTab("1", "http://shop.test/aurora", PAGE, title="Aurora")], retry=ONCE,
                      deadline_s=6)
    events = await ask(agent)
    err = ended_with(events, "deadline")
    assert "within 6 s" in err.message
    assert deaf.ignored > 1, "cancelled again after it lost the first cancellation"
    # The task it left runs on the test's loop: ended here, not by the loop's own teardown.
    deaf.released = True
    await asyncio.wait_for(deaf.gone.wait(), 10)


@pytest.mark.timeout(90)
async def test_a_reply_of_thousands_of_tool_calls_is_cut_to_its_bound_and_said() -> None:
    """5,000 tool calls in one reply (2,000 cost 104 s of CPU on the event loop before):
    the first MAX_REPLY_TOOL_CALLS are used, a note says the rest were ignored, and the
    question goes on to its answer."""
    async with OpenAICompatibleServer(replies=[NEED, ToolCallFlood(calls=5000), ChatReply(text=ANSWER)]) as server:
        # A window for all the calls' results: the stand-in's default would stop the search first.
        events = await ask(agent_for(server, window=64_000, deadline_s=80))
        calls = server.chat_requests
    assert isinstance(events[-1], Done) and "$1,349.00" in events[-1].answer, events[-1]
    assert f"more than {MAX_REPLY_TOOL_CALLS} tool calls in one reply" in notes(events)
    assert len([e for e in events if isinstance(e, ToolCall)]) <= MAX_REPLY_TOOL_CALLS
    assert calls[1].hung_up, "the rest of the reply was not read"


@pytest.mark.timeout(60)
async def test_a_tool_call_with_a_huge_argument_ends_in_a_clear_error() -> None:
    """A tool argument of 20 MB (50 MB took 2.8 GB before; more than the connection's buffers
    hold, and less than the wire's bound): the reply is stopped at the bound on arguments, none
    of its calls run, the question ends in its typed error."""
    async with OpenAICompatibleServer(replies=[NEED, HugeArgument(mb=20)]) as server:
        events = await ask(agent_for(server, deadline_s=50))
        calls = server.chat_requests
    err = ended_with(events, "model_reply_too_large")
    assert "bytes of arguments" in err.message and "none of its calls was run" in err.message
    assert not any(isinstance(e, ToolCall) for e in events)
    assert calls[1].hung_up


@pytest.mark.timeout(60)
async def test_an_endless_tokenize_answer_falls_back_to_cl100k() -> None:
    """A llama.cpp-like server whose /tokenize answer never ends (read whole before: 3 GB in
    50 s): it is read within its bound, given up, and the question is answered, counted by cl100k."""
    async with LlamaCppServer(endless_tokenize=True, replies=[ChatReply(text=ANSWER)]) as server:
        events = await ask(agent_for(server, deadline_s=40))
        tokenize = [r for r in server.requests if r.path.endswith("/tokenize")]
    assert isinstance(events[-1], Done) and "$1,349.00" in events[-1].answer, events[-1]
    assert tokenize and all(r.hung_up for r in tokenize)
    assert len(tokenize) == 1, "a server whose answer had no end is not asked again"
    assert sum(r.sent_bytes for r in tokenize) < 64_000_000


@pytest.mark.e2e
@pytest.mark.timeout(120)
async def test_mcp_ask_pages_keeps_its_deadline_against_a_flood_and_the_server_answers_on(site: Site) -> None:
    """`chatagent mcp` (the real MCP client over stdio), deadline 8 s, a model server flooding
    empty chunks: `ask_pages` ends in the deadline's error (it ran on without end before),
    and the same server then reads a page as usual."""
    with OpenAICompatibleServer(replies=[EmptyChunkFlood(per_write=16, pace_s=0.01)]) as server:
        async with stdio_server(CHATAGENT_MODEL="openai:local", CHATAGENT_OPENAI_BASE_URL=server.url,
                                CHATAGENT_DEADLINE="8") as s:
            asked = await s.call_tool("ask_pages", {"urls": [site.url("product")], "question": "How much?"})
            read = await s.call_tool("read_pages", {"urls": [site.url("product")]})
        chats = server.chat_requests
    said = " ".join(getattr(c, "text", "") for c in asked.content)
    assert asked.is_error and "No complete answer within 8 s" in said, said
    assert "Traceback" not in said
    assert chats and chats[0].hung_up
    assert not read.is_error and "$1,349.00" in read.structured_content["pages"][0]["text"]


@pytest.mark.timeout(60)
async def test_a_response_past_its_bound_on_the_wire_is_stopped_there() -> None:
    """One chunk of 2 MB in a single line (a line without end would be buffered whole): the
    body is cut at its bound in bytes, as it arrives, in the real client, with the typed error."""
    from langchain_openai import ChatOpenAI

    from chatagent.errors import ModelReplyTooLargeError
    from chatagent.models.http_bounds import bounded_client

    async with OpenAICompatibleServer(replies=[ChatReply(text="x" * 2_000_000)]) as server:
        chat = ChatOpenAI(model="local", base_url=server.url, api_key="none", streaming=True, max_retries=0,
                          stream_chunk_timeout=None, http_async_client=bounded_client(max_bytes=500_000))
        got = []
        with pytest.raises(ModelReplyTooLargeError, match="passed 0.5 MB"):
            async for chunk in chat.astream("How much?"):
                got.append(chunk.text)
    assert not "".join(got), "nothing of the oversized line was read as text"
