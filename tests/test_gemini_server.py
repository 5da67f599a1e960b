"""The fake Gemini server against the real ChatGoogleGenerativeAI client (no mocks)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors as genai_errors
from langchain_core.exceptions import ModelAPIError, ModelRateLimitError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_google_genai.chat_models import GoogleAPIError, GoogleRateLimitError

from chatagent.testing import (
    DropReply,
    ErrorReply,
    FunctionCall,
    FunctionCallReply,
    GeminiServer,
    MalformedReply,
    RecordedRequest,
    StallReply,
    TextReply,
    echo_responder,
)
from chatagent.testing.gemini_server import BlockedReply, FinishReply, RawReply

# google-genai sends with httpx before version 3 and with httpx2 (httpx's fork) since:
# its transport errors are one or the other's, whichever release is installed.
READ_TIMEOUT = (httpx.ReadTimeout, httpx2.ReadTimeout)
PROTOCOL_ERROR = (httpx.RemoteProtocolError, httpx2.RemoteProtocolError)

ROOT = Path(__file__).resolve().parents[1]
MODEL = "gemini-2.5-flash"
# A 1x1 PNG whose base64 contains '+', so URL-safe re-encoding by the SDK is exercised.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode()


@pytest.fixture
async def server() -> AsyncIterator[GeminiServer]:
    # No TTFT / pacing by default so the suite stays fast; timing tests set their own.
    async with GeminiServer(ttft_s=0.0, tokens_per_s=None) as s:
        yield s


def new_llm(server: GeminiServer, **kwargs: Any) -> ChatGoogleGenerativeAI:
    # max_retries=1 = a single attempt: the SDK would otherwise retry 429/5xx itself.
    kwargs.setdefault("max_retries", 1)
    return ChatGoogleGenerativeAI(model=MODEL, google_api_key="test", base_url=server.url, **kwargs)


MakeLLM = Callable[..., ChatGoogleGenerativeAI]


@pytest.fixture
async def make_llm() -> AsyncIterator[MakeLLM]:
    # Close each model's async client on this test's loop; otherwise its transports are
    # collected after the loop closed and log "Event loop is closed".
    made: list[ChatGoogleGenerativeAI] = []

    def factory(server: GeminiServer, **kwargs: Any) -> ChatGoogleGenerativeAI:
        made.append(new_llm(server, **kwargs))
        return made[-1]

    yield factory
    for llm in made:
        await llm.aclose()


async def collect(llm: Any, prompt: Any) -> list[str]:
    return [chunk.content async for chunk in llm.astream(prompt)]


# -- basic text ----------------------------------------------------------------


async def test_astream_yields_chunks_in_order(server: GeminiServer, make_llm: MakeLLM) -> None:
    text = "one two three four five six seven eight nine ten"
    server.enqueue(TextReply(text=text, tokens_per_chunk=3))
    llm = make_llm(server)
    chunks = await collect(llm, [SystemMessage("Be brief."), HumanMessage("count to ten")])
    non_empty = [c for c in chunks if c]
    assert non_empty == ["one two three ", "four five six ", "seven eight nine ", "ten"]
    assert "".join(non_empty) == text

    req = server.last_request
    assert req.method == "POST"
    assert req.action == "streamGenerateContent" and req.streamed
    assert req.path.split("/", 2)[2] == f"models/{MODEL}:streamGenerateContent?alt=sse"  # after /v1beta or /v1
    assert req.model == MODEL
    assert req.text() == "count to ten"
    assert req.system_text() == "Be brief."
    assert req.headers["x-goog-api-key"] == "test"
    assert req.status == 200 and req.first_chunk_at is not None and req.completed_at is not None
    assert req.first_chunk_at >= req.arrived_at


async def test_ainvoke_hits_generate_content_with_usage(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(TextReply(text="Paris is the capital."))
    msg = await make_llm(server).ainvoke("What is the capital of France?")
    assert isinstance(msg, AIMessage)
    assert msg.content == "Paris is the capital."
    assert msg.response_metadata["finish_reason"] == "STOP"
    assert msg.usage_metadata is not None and msg.usage_metadata["output_tokens"] > 0
    req = server.last_request
    assert req.action == "generateContent" and not req.streamed
    assert req.path.split("/", 2)[2] == f"models/{MODEL}:generateContent"
    assert req.text() == "What is the capital of France?"
    assert req.generation_config is not None


async def test_default_reply_and_responder(make_llm: MakeLLM) -> None:
    async with GeminiServer(ttft_s=0.0, default_text="default!") as s:
        assert (await make_llm(s).ainvoke("q")).content == "default!"
    async with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=echo_responder) as s:
        s.enqueue(TextReply(text="scripted first"))
        llm = make_llm(s)
        assert (await llm.ainvoke("hello")).content == "scripted first"
        assert (await llm.ainvoke("what is 2+2?")).content == "Echo: what is 2+2?"
        assert s.pending_replies == 0


async def test_env_var_base_url(server: GeminiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    server.enqueue(TextReply(text="via env"))
    llm = ChatGoogleGenerativeAI(model=MODEL, max_retries=1)  # no base_url, no key
    assert (await llm.ainvoke("hi")).content == "via env"
    await llm.aclose()
    assert server.last_request.headers["x-goog-api-key"] == "test"


# -- tools -----------------------------------------------------------------------


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather for a city."""
    return f"sunny in {city}"


async def test_function_call_becomes_tool_calls(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(FunctionCallReply(calls=[FunctionCall("get_weather", {"city": "Oslo"})]))
    llm = make_llm(server).bind_tools([get_weather])
    msg = await llm.ainvoke("Weather in Oslo?")
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [("get_weather", {"city": "Oslo"})]
    req = server.last_request
    assert req.tool_names() == ["get_weather"]
    decl = req.function_declarations()[0]
    assert "city" in json.dumps(decl)

    # The tool result goes back as a functionResponse part.
    server.enqueue(TextReply(text="It is sunny."))
    follow = await llm.ainvoke(
        [HumanMessage("Weather in Oslo?"), msg, ToolMessage("sunny", tool_call_id=msg.tool_calls[0]["id"])]
    )
    assert follow.content == "It is sunny."
    assert [fr["name"] for fr in server.last_request.function_responses()] == ["get_weather"]


async def test_streamed_text_then_several_function_calls(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(
        FunctionCallReply(
            text="Let me check both.",
            calls=[
                FunctionCall("get_weather", {"city": "Oslo"}, id="call-1"),
                FunctionCall("get_weather", {"city": "Rome", "unit": "fahrenheit"}, id="call-2"),
            ],
        )
    )
    llm = make_llm(server).bind_tools([get_weather])
    full: Any = None
    async for chunk in llm.astream("Weather in Oslo and Rome?"):
        full = chunk if full is None else full + chunk
    assert full.text.startswith("Let me check both.")
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome", "unit": "fahrenheit"}),
    ]
    assert server.last_request.streamed


async def test_no_tools_declared_without_bind_tools(server: GeminiServer, make_llm: MakeLLM) -> None:
    await make_llm(server).ainvoke("hi")
    assert server.last_request.tool_names() == []
    assert server.last_request.tools == []


# -- images ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        {"type": "image_url", "image_url": f"data:image/png;base64,{PNG_B64}"},
        {"type": "image", "base64": PNG_B64, "mime_type": "image/png"},
        {"type": "image", "source_type": "base64", "data": PNG_B64, "mime_type": "image/png"},
    ],
    ids=["image_url-dict", "image_url-str", "image-v1", "image-source_type"],
)
async def test_image_blocks_arrive_inline(server: GeminiServer, block: dict[str, Any], make_llm: MakeLLM) -> None:
    await make_llm(server).ainvoke([HumanMessage(content=[{"type": "text", "text": "What is this?"}, block])])
    req = server.last_request
    assert req.has_image()
    [image] = req.images()
    assert image.mime_type == "image/png"
    assert image.data == PNG
    assert req.text() == "What is this?"


async def test_text_only_request_has_no_image(server: GeminiServer, make_llm: MakeLLM) -> None:
    await make_llm(server).ainvoke("no pictures")
    assert not server.last_request.has_image()


# -- HTTP errors -------------------------------------------------------------------


async def test_429_then_success_without_sdk_retries(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(ErrorReply(code=429, retry_delay_s=7), TextReply(text="recovered"))
    llm = make_llm(server, max_retries=1)
    with pytest.raises(GoogleRateLimitError) as info:
        await llm.ainvoke("q")
    assert isinstance(info.value, ModelRateLimitError)
    cause = info.value.__cause__
    assert isinstance(cause, genai_errors.ClientError)
    assert cause.code == 429 and cause.status == "RESOURCE_EXHAUSTED"
    assert "retryDelay" in json.dumps(cause.details)
    assert len(server.generate_requests) == 1  # no retry by the SDK
    assert (await llm.ainvoke("q")).content == "recovered"


async def test_max_retries_zero_also_means_one_attempt(server: GeminiServer, make_llm: MakeLLM) -> None:
    # google-genai 2.x maps attempts=0 to 1 (LangChain's docstring still warns otherwise).
    server.enqueue(ErrorReply(code=429))
    with pytest.raises(GoogleRateLimitError):
        await make_llm(server, max_retries=0).ainvoke("q")
    assert len(server.generate_requests) == 1


async def test_sdk_retries_429_when_allowed(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(ErrorReply(code=429), TextReply(text="second try"))
    llm = make_llm(server, max_retries=3)
    # Per-request retry options make the SDK's backoff short (default starts at ~1-2 s).
    fast = {"retry_options": {"attempts": 3, "initial_delay": 0.05, "jitter": 0}}
    msg = await llm.ainvoke("q", http_options=fast)
    assert msg.content == "second try"
    assert [r.status for r in server.generate_requests] == [429, 200]


async def test_500_is_classified_server_error(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(ErrorReply(code=500), ErrorReply(code=503, message="overloaded"))
    llm = make_llm(server)
    with pytest.raises(GoogleAPIError) as info:
        await llm.ainvoke("q")
    assert isinstance(info.value, genai_errors.ServerError) and isinstance(info.value, ModelAPIError)
    assert info.value.code == 500 and info.value.status == "INTERNAL"
    with pytest.raises(genai_errors.ServerError) as info2:
        await collect(llm, "q")  # streaming raises the same classification
    assert info2.value.code == 503 and info2.value.message == "overloaded"


@pytest.mark.parametrize("code", [400, 401, 403, 404])
async def test_client_errors_are_classified(server: GeminiServer, code: int, make_llm: MakeLLM) -> None:
    from langchain_core import exceptions as lc

    expected = {
        400: lc.ModelInvalidRequestError,
        401: lc.ModelAuthenticationError,
        403: lc.ModelPermissionDeniedError,
        404: lc.ModelNotFoundError,
    }[code]
    server.enqueue(ErrorReply(code=code))
    with pytest.raises(expected) as info:
        await make_llm(server).ainvoke("q")
    assert isinstance(info.value.__cause__, genai_errors.ClientError)
    assert info.value.__cause__.code == code


async def test_unknown_model_is_404(make_llm: MakeLLM) -> None:
    async with GeminiServer(ttft_s=0.0, models=["gemini-2.5-pro"]) as s:
        from langchain_core.exceptions import ModelNotFoundError

        with pytest.raises(ModelNotFoundError):
            await make_llm(s).ainvoke("q")  # MODEL is gemini-2.5-flash


# -- timing --------------------------------------------------------------------------


async def test_ttft_and_token_rate_are_honoured(make_llm: MakeLLM) -> None:
    ttft = 0.25
    async with GeminiServer(ttft_s=ttft, tokens_per_s=100.0, tokens_per_chunk=2) as s:
        s.enqueue(TextReply(text="a b c d e f g h i j"))  # 5 chunks, 20 ms apart
        llm = make_llm(s)
        started = time.perf_counter()
        first_seen: float | None = None
        async for chunk in llm.astream("q"):
            if chunk.content and first_seen is None:
                first_seen = time.perf_counter()
        req = s.last_request
        assert req.first_chunk_at is not None and req.completed_at is not None
        # Lower bounds only: a busy machine may be late, never early.
        assert req.server_ttft_s is not None and req.server_ttft_s >= ttft
        assert req.completed_at - req.first_chunk_at >= 4 * 0.02 * 0.9
        # Server timestamps share the caller's perf_counter clock.
        assert started <= req.arrived_at <= req.first_chunk_at <= (first_seen or 0.0)

        # Per-reply override beats the server default.
        s.enqueue(TextReply(text="slow", ttft_s=3 * ttft))
        await llm.ainvoke("q")
        assert (s.last_request.server_ttft_s or 0.0) >= 3 * ttft


async def test_concurrent_requests_overlap(make_llm: MakeLLM) -> None:
    async with GeminiServer(ttft_s=1.0, tokens_per_s=None, responder=echo_responder) as s:
        llm = make_llm(s)
        results = await asyncio.gather(*(collect(llm, f"question {i}") for i in range(8)))
        assert sorted("".join(r) for r in results) == sorted(f"Echo: question {i}" for i in range(8))
        reqs = s.generate_requests
        assert len(reqs) == 8
        # Server-side proof of overlap: some request arrived while another was in flight.
        assert any(
            a is not b and a.arrived_at < (b.completed_at or 0.0) and b.arrived_at < (a.completed_at or 0.0)
            for a in reqs
            for b in reqs
        )


# -- broken streams --------------------------------------------------------------------


async def test_stall_hits_client_read_timeout(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(StallReply(stall_s=30, text_before="Partial answer"))
    llm = make_llm(server, timeout=0.5)  # seconds; httpx applies it per read
    got: list[str] = []
    started = time.perf_counter()
    with pytest.raises(READ_TIMEOUT):
        async for chunk in llm.astream("q"):
            got.append(str(chunk.content))
    assert time.perf_counter() - started < 20  # bounded, not a timing claim: the stall alone is 30 s
    assert "".join(got).startswith("Partial")


async def test_stall_then_finish_without_timeout(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(StallReply(stall_s=0.3, text_before="before ", text_after="after"))
    chunks = await collect(make_llm(server), "q")
    assert "".join(chunks) == "before after"


async def test_stall_unary_hits_read_timeout(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(StallReply(stall_s=30))
    with pytest.raises(READ_TIMEOUT):
        await make_llm(server, timeout=0.5).ainvoke("q")


async def test_malformed_stream_raises(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(MalformedReply(text_before="fine so far"))
    with pytest.raises(genai_errors.UnknownApiResponseError):
        await collect(make_llm(server), "q")
    server.enqueue(MalformedReply())
    with pytest.raises(ValueError):  # json.JSONDecodeError for generateContent
        await make_llm(server).ainvoke("q")


async def test_raw_chunks_reach_the_client_as_sent(server: GeminiServer, make_llm: MakeLLM) -> None:
    llm = make_llm(server)
    for body in ([], {}):  # no candidates: the client yields an empty message
        server.enqueue(RawReply(chunks=[body]))
        assert [c for c in await collect(llm, "q") if c] == []
    server.enqueue(RawReply(chunks=[{"candidates": 5}]))
    with pytest.raises(TypeError):  # the SDK's parser chokes, as on the real API
        await collect(llm, "q")
    server.enqueue(RawReply())
    with pytest.raises(ValueError, match="No generation chunks"):
        await collect(llm, "q")
    server.enqueue(RawReply(chunks=[{"candidates": 5}]))
    with pytest.raises(TypeError):
        await llm.ainvoke("q")
    assert [r.status for r in server.generate_requests] == [200] * 5


async def test_blocked_prompt_arrives_as_prompt_feedback(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(BlockedReply(reason="PROHIBITED_CONTENT", message="Not allowed."))
    [chunk] = [c async for c in make_llm(server).astream("q") if c.response_metadata]
    feedback = chunk.response_metadata["prompt_feedback"]
    assert chunk.content == "" and not chunk.tool_call_chunks
    assert feedback["block_reason"] == "PROHIBITED_CONTENT" and feedback["block_reason_message"] == "Not allowed."
    assert [(r["category"], r["blocked"]) for r in feedback["safety_ratings"]] == [
        ("HARM_CATEGORY_DANGEROUS_CONTENT", True)
    ]
    server.enqueue(BlockedReply())
    client = genai.Client(api_key="test", http_options={"base_url": server.url})
    response = await client.aio.models.generate_content(model=MODEL, contents="q")
    assert not response.candidates
    assert response.prompt_feedback is not None and response.prompt_feedback.block_reason == "SAFETY"


async def test_finish_reply_ends_with_the_reason_and_no_content(server: GeminiServer, make_llm: MakeLLM) -> None:
    server.enqueue(FinishReply(text_before="Partial answer ", categories=["HARM_CATEGORY_HARASSMENT"]))
    chunks = [c async for c in make_llm(server).astream("q")]
    assert "".join(str(c.content) for c in chunks) == "Partial answer "
    [last] = [c for c in chunks if c.response_metadata.get("finish_reason")]
    assert last.response_metadata["finish_reason"] == "SAFETY" and last.content == ""
    assert [(r["category"], r["blocked"]) for r in last.response_metadata["safety_ratings"]] == [
        ("HARM_CATEGORY_HARASSMENT", True)
    ]
    server.enqueue(FinishReply(finish_reason="UNEXPECTED_TOOL_CALL", categories=()))
    msg = await make_llm(server).ainvoke("q")
    assert msg.content == "" and msg.response_metadata["finish_reason"] == "UNEXPECTED_TOOL_CALL"


async def test_dropped_connection_raises(server: GeminiServer, make_llm: MakeLLM) -> None:
    llm = make_llm(server)
    server.enqueue(DropReply(text_before="half an ans"))
    with pytest.raises(PROTOCOL_ERROR):
        await collect(llm, "q")
    server.enqueue(DropReply(send_headers=False))
    with pytest.raises(PROTOCOL_ERROR):
        await collect(llm, "q")
    server.enqueue(DropReply())
    with pytest.raises(PROTOCOL_ERROR):
        await llm.ainvoke("q")
    # The client recovers on a fresh connection.
    assert (await llm.ainvoke("q")).content == "OK"


# -- other endpoints, sync use, CLI ------------------------------------------------------


def test_sync_context_manager_and_sdk_endpoints() -> None:
    with GeminiServer(ttft_s=0.0) as s:
        client = genai.Client(api_key="test", http_options={"base_url": s.url})
        assert client.models.get(model=MODEL).name == f"models/{MODEL}"
        assert [m.name for m in client.models.list()]
        count = client.models.count_tokens(model=MODEL, contents="hello world, how are you?")
        assert (count.total_tokens or 0) > 0
        s.enqueue(TextReply(text="sync works"))
        assert new_llm(s).invoke("hi").content == "sync works"
        assert [r.action for r in s.requests][-1] == "generateContent"
        url = s.url
    with pytest.raises(OSError):  # stopped: nothing listens any more
        urllib.request.urlopen(f"{url}/v1beta/models", timeout=1)


def test_recorded_request_helpers_on_raw_body() -> None:
    req = RecordedRequest(
        method="POST",
        path="/v1beta/models/m:generateContent",
        model="m",
        action="generateContent",
        streamed=False,
        body={
            "contents": [
                {"role": "user", "parts": [{"text": "a"}, {"inline_data": {"mime_type": "image/jpeg", "data": "AAE="}}]},
                {"role": "model", "parts": [{"text": "b"}]},
                {"role": "user", "parts": [{"text": "c"}]},
            ],
            "system_instruction": {"parts": [{"text": "sys"}]},
            "tools": [{"function_declarations": [{"name": "t1"}, {"name": "t2"}]}],
        },
        headers={},
        arrived_at=0.0,
        arrived_wall=0.0,
    )
    assert req.text() == "a\nb\nc"
    assert req.last_user_text() == "c"
    assert req.system_text() == "sys"
    assert req.tool_names() == ["t1", "t2"]
    assert [(i.mime_type, i.data) for i in req.images()] == [("image/jpeg", b"\x00\x01")]


def test_stop_does_not_wait_for_a_stalled_request() -> None:
    s = GeminiServer(ttft_s=0.0).start()
    s.enqueue(StallReply(stall_s=60))
    client = httpx.Client(timeout=10)
    with client.stream("POST", f"{s.url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", json={}) as resp:
        assert resp.status_code == 200
        started = time.perf_counter()
        s.stop()
        assert time.perf_counter() - started < 30  # bounded, not a timing claim: the stall alone is 60 s
    client.close()


@pytest.mark.e2e
def test_cli_serves_until_interrupted() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "chatagent.testing.gemini_server", "--port", "0", "--ttft-ms", "0", "--text", "cli says hi"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "http://127.0.0.1:" in line
        url = line.split()[-1]
        req = urllib.request.Request(
            f"{url}/v1beta/models/{MODEL}:generateContent",
            data=json.dumps({"contents": [{"role": "user", "parts": [{"text": "x"}]}]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        # Bounds against a hang only: a loaded machine answers and stops in seconds, not at once.
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = json.load(resp)
        assert body["candidates"][0]["content"]["parts"][0]["text"] == "cli says hi"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        if proc.stderr is not None:
            proc.stderr.close()
