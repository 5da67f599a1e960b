"""Model faults, injected through the local Gemini-compatible server and met by
the real ChatGoogleGenerativeAI client: every run ends with `done` or a clear
`error`, within bounded time, and what can be retried is."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from chatagent.agent import ChatAgent
from chatagent.events import Done, ErrorEvent, Event, Note, PassStart, Token
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.retry import RetryPolicy
from chatagent.testing.gemini_server import (
    DropReply, ErrorReply, GeminiServer, MalformedReply, StallReply, TextReply,
)

from conftest import ROOT, Site
from warm_start import command
from test_models_catalog import serving

pytestmark = pytest.mark.asyncio(loop_scope="session")

ANSWER = "The Aurora X14 Pro costs $1,349.00 [Tab 1]."
# Quick retries; a stall only where a test makes one (a loaded machine can take seconds to answer).
FAST = RetryPolicy(attempts=4, base_delay_s=0.05, max_delay_s=0.2, budget_s=5.0, stall_s=30.0)
STALLS = replace(FAST, stall_s=2.0)  # for the tests of stalls: their server holds back for 30 s
OVERFLOW = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."



async def agent(gemini: GeminiServer, open_tabs, site: Site, **kwargs: object) -> ChatAgent:
    model = load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url))
    kwargs.setdefault("retry", FAST)
    return ChatAgent(model, await open_tabs([site.url("product")]), **kwargs)  # type: ignore[arg-type]


async def ask(a: ChatAgent, question: str = "How much does it cost?") -> list[Event]:
    events = [e async for e in a.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1
    assert isinstance(events[-1], (Done, ErrorEvent))
    return events


def notes(events: list[Event]) -> str:
    return "\n".join(e.text for e in events if isinstance(e, Note))


async def test_rate_limits_then_success_the_answer_arrives(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(ErrorReply(code=429, retry_delay_s=0.3), ErrorReply(code=429), TextReply(text=ANSWER))
    events = await ask(await agent(gemini, open_tabs, site))
    done = events[-1]
    assert isinstance(done, Done) and done.answer == ANSWER
    assert len(gemini.generate_requests) == 3
    assert "rate-limiting" in notes(events) and "try 2 of 4" in notes(events), "each retry is announced"
    first, second = gemini.generate_requests[:2]
    assert second.arrived_at - first.arrived_at >= 0.3, "the provider's RetryInfo delay is honoured"


async def test_persistent_server_errors_end_with_a_clear_error_after_bounded_tries(
    gemini: GeminiServer, site: Site, open_tabs
) -> None:
    gemini.enqueue(*[ErrorReply(code=500)] * 10)
    events = await ask(await agent(gemini, open_tabs, site))
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "model_unavailable"
    assert "500" in err.message and "Gave up after 4 tries" in err.message
    assert len(gemini.generate_requests) == FAST.attempts
    assert not any(isinstance(e, Token) for e in events)


async def test_a_stream_that_stalls_before_answering_times_out_and_is_retried(
    gemini: GeminiServer, site: Site, open_tabs
) -> None:
    gemini.enqueue(StallReply(stall_s=30), TextReply(text=ANSWER))
    events = await ask(await agent(gemini, open_tabs, site, retry=STALLS))
    assert isinstance(events[-1], Done) and events[-1].answer == ANSWER
    assert "stalled" in notes(events)
    assert len(gemini.generate_requests) == 2


async def test_a_stream_that_stalls_mid_answer_ends_with_a_clear_error(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(StallReply(stall_s=30, text_before="The Aurora X14 Pro"))
    events = await ask(await agent(gemini, open_tabs, site, retry=STALLS))
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "model_interrupted"
    assert "stalled" in err.message and "Ask again" in err.message
    assert "".join(e.text for e in events if isinstance(e, Token)) == "The Aurora X14 Pro"
    assert len(gemini.generate_requests) == 1, "no retry once part of the answer was shown"


async def test_a_malformed_stream_is_retried(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(MalformedReply(), TextReply(text=ANSWER))
    events = await ask(await agent(gemini, open_tabs, site))
    assert isinstance(events[-1], Done) and events[-1].answer == ANSWER
    assert "malformed" in notes(events)


async def test_a_dropped_connection_is_retried(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(DropReply(send_headers=False), DropReply(), TextReply(text=ANSWER))
    events = await ask(await agent(gemini, open_tabs, site))
    assert isinstance(events[-1], Done) and events[-1].answer == ANSWER
    assert len(gemini.generate_requests) == 3


async def test_a_connection_dropped_mid_answer_says_the_answer_was_cut(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(DropReply(text_before="The Aurora"))
    events = await ask(await agent(gemini, open_tabs, site))
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "model_interrupted" and "broke off" in err.message


@pytest.mark.parametrize(("code", "error", "says"), [
    (401, "model_auth", "GOOGLE_API_KEY"),
    (403, "model_auth", "GOOGLE_API_KEY"),
    (404, "model_not_found", "--model"),
])
async def test_configuration_errors_stop_at_once_naming_the_setting(
    gemini: GeminiServer, site: Site, open_tabs, code: int, error: str, says: str
) -> None:
    gemini.enqueue(ErrorReply(code=code))
    events = await ask(await agent(gemini, open_tabs, site))
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == error and says in err.message
    assert len(gemini.generate_requests) == 1, "retrying cannot fix a key or a model name"


async def test_context_overflow_shrinks_the_page_budget_and_retries_once(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(ErrorReply(code=400, message=OVERFLOW), TextReply(text=ANSWER))
    from chatagent.context import ContextBuilder

    a = await agent(gemini, open_tabs, site, builder=ContextBuilder(budget_per_tab=600))
    events = await ask(a)
    assert isinstance(events[-1], Done) and events[-1].answer == ANSWER
    assert "too long for the model" in notes(events)
    first, second = gemini.generate_requests
    assert len(second.text()) < len(first.text()), "the retry sends less page text"
    assert [e.pass_ for e in events if isinstance(e, PassStart)] == [1, 1]


async def test_context_overflow_twice_is_a_clear_error(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(ErrorReply(code=400, message=OVERFLOW), ErrorReply(code=400, message=OVERFLOW))
    events = await ask(await agent(gemini, open_tabs, site))
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "context_overflow" and "context window" in err.message
    assert len(gemini.generate_requests) == 2


async def test_the_question_deadline_ends_a_run_that_would_hang(gemini: GeminiServer, site: Site, open_tabs) -> None:
    gemini.enqueue(StallReply(stall_s=30))
    slow_stall = RetryPolicy(stall_s=60)
    a = await agent(gemini, open_tabs, site, retry=slow_stall, deadline_s=1.5)
    t0 = time.monotonic()
    events = await ask(a)
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "deadline" and "--deadline" in err.message
    assert time.monotonic() - t0 < 20  # bounded, not a timing claim: the stall alone is 30 s
    # Nothing is lost: the same agent answers the next question (given the time a loaded machine may need).
    a.deadline_s = 120
    gemini.enqueue(TextReply(text=ANSWER))
    assert isinstance((await ask(a))[-1], Done)


@pytest.mark.e2e
async def test_cli_auth_error_exits_1_with_the_setting_to_fix_and_no_traceback(site: Site) -> None:
    with GeminiServer(ttft_s=0.0) as gemini:
        gemini.enqueue(ErrorReply(code=401))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "wrong",
               "GOOGLE_GEMINI_BASE_URL": gemini.url}
        proc = await asyncio.to_thread(
            subprocess.run,
            command("ask", site.url("product"), "-q", "How much?", "--model", "gemini-2.5-flash"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=90,
        )
    assert proc.returncode == 1
    assert "GOOGLE_API_KEY" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


@contextlib.contextmanager
def local_openai_server(reading_s: float) -> Iterator[str]:
    """An OpenAI-compatible server on loopback that, like a local model, reads
    its prompt for `reading_s` before its first chunk, then streams an answer."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            if self.path != "/v1/chat/completions":  # no tokenizer route: the agent counts the tokens itself
                self.send_error(404)
                return
            time.sleep(reading_s)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for piece, finish in (("The Aurora X14 Pro costs ", None), ("$1,349.00 [Tab 1].", "stop")):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece},
                                      "finish_reason": finish}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    with serving(Handler) as url:
        yield url


async def test_a_local_model_reading_its_prompt_longer_than_a_stall_still_answers(site: Site, open_tabs) -> None:
    # Before its first token a model on this machine is reading the prompt, not stalled:
    # only the question's deadline bounds that wait (a remote model's is a stall, above).
    pytest.importorskip("langchain_openai")
    with local_openai_server(reading_s=5.0) as url:
        model = load_model("openai:m", Settings(openai_base_url=url))
        a = ChatAgent(model, await open_tabs([site.url("product")]), retry=RetryPolicy(attempts=1, stall_s=2.0),
                      deadline_s=60)
        events = await ask(a)
    done = events[-1]
    assert isinstance(done, Done) and "$1,349.00" in done.answer, events[-1]
