"""Replies with nothing to use, through the real ChatGoogleGenerativeAI client
against the local Gemini-compatible server: an empty stream, a prompt the
safety filter blocked, a reply it withheld, a tool call when none was offered,
a reply the client cannot parse. Each ends in exactly one `error` with its own
code and a message saying what happened, never in `done` with an empty answer;
what may be transient is retried within the policy, what is not is not."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser.static import StaticTab
from chatagent.events import Done, ErrorEvent, Event, Note, PassStart, Token
from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.prompts import ESCALATION_MARKER
from chatagent.retry import RetryPolicy
from chatagent.testing.gemini_server import (
    BlockedReply, FinishReply, FunctionCall, FunctionCallReply, GeminiServer, RawReply, Reply, TextReply,
)

from conftest import ROOT, Site
from warm_start import command

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Quick retries; the stall bound only guards against a hang (a loaded machine can be slow to answer at all).
FAST = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05, budget_s=5.0, stall_s=60.0)
PAGE = "<html><body><h1>Aurora X14 Pro</h1><p>Price: $1,349.00. Ships in 2 days.</p></body></html>"
ANSWER = "The Aurora X14 Pro costs $1,349.00 [Tab 1]."
NEED = f"{ESCALATION_MARKER} the answer is not in the page text"


def agent_for(gemini: GeminiServer) -> ChatAgent:
    model = load_model("gemini-2.5-flash", Settings(google_api_key="test", gemini_base_url=gemini.url))
    return ChatAgent(model, [StaticTab("1", "http://shop.test/aurora", PAGE, title="Aurora")], retry=FAST)


async def ask(agent: ChatAgent, question: str = "How much does it cost?") -> list[Event]:
    events = [e async for e in agent.ask(question)]
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1 and isinstance(events[-1], (Done, ErrorEvent))
    return events


def error(events: list[Event], code: str) -> ErrorEvent:
    last = events[-1]
    assert isinstance(last, ErrorEvent), f"expected error {code!r}, the run ended with {last!r}"
    assert last.code == code, last.message
    return last


def notes(events: list[Event]) -> str:
    return "\n".join(e.text for e in events if isinstance(e, Note))


@pytest.mark.parametrize("reply", [
    RawReply(chunks=[[]]),
    RawReply(chunks=[{}]),
    RawReply(chunks=[{}, []]),
    RawReply(),  # the stream ends with no event at all
    RawReply(chunks=[{"candidates": [{"content": {"parts": [{"text": "  "}], "role": "model"},
                                      "finishReason": "STOP"}]}]),
], ids=["list", "object", "both", "no-events", "whitespace"])
async def test_an_empty_reply_is_retried_then_ends_in_model_empty(gemini: GeminiServer, reply: Reply) -> None:
    gemini.enqueue(*[reply] * FAST.attempts)
    events = await ask(agent_for(gemini))
    err = error(events, "model_empty")
    assert "empty reply" in err.message and f"Gave up after {FAST.attempts} tries" in err.message
    assert "Ask again" in err.message and "--model" in err.message
    assert len(gemini.generate_requests) == FAST.attempts, "an empty reply may be transient: retried, bounded"
    assert "empty reply" in notes(events) and "Retrying" in notes(events)


async def test_an_empty_reply_then_an_answer_is_answered(gemini: GeminiServer) -> None:
    gemini.enqueue(RawReply(chunks=[{}]), TextReply(text=ANSWER))
    events = await ask(agent_for(gemini))
    assert isinstance(events[-1], Done) and events[-1].answer == ANSWER
    assert "empty reply" in notes(events)


async def test_a_prompt_blocked_by_the_safety_filter_is_a_model_blocked_error_not_retried(gemini: GeminiServer) -> None:
    gemini.enqueue(BlockedReply(reason="SAFETY"), TextReply(text=ANSWER))
    err = error(await ask(agent_for(gemini)), "model_blocked")
    assert "safety filter blocked" in err.message
    assert "block reason SAFETY" in err.message and "dangerous content" in err.message
    assert "rephrase" in err.message
    assert len(gemini.generate_requests) == 1, "the same request would be blocked again"


async def test_the_providers_block_message_is_passed_on(gemini: GeminiServer) -> None:
    gemini.enqueue(BlockedReply(reason="PROHIBITED_CONTENT", message="Blocked by policy 7.", categories=()))
    err = error(await ask(agent_for(gemini)), "model_blocked")
    assert "content filter blocked" in err.message and "block reason PROHIBITED_CONTENT" in err.message
    assert "Blocked by policy 7." in err.message


async def test_a_reply_withheld_by_the_safety_filter_is_a_model_blocked_error(gemini: GeminiServer) -> None:
    gemini.enqueue(FinishReply(finish_reason="SAFETY", categories=["HARM_CATEGORY_HARASSMENT"]))
    events = await ask(agent_for(gemini))
    err = error(events, "model_blocked")
    assert "safety filter withheld" in err.message
    assert "finish reason SAFETY" in err.message and "harassment" in err.message
    assert len(gemini.generate_requests) == 1
    assert not any(isinstance(e, Token) for e in events)


async def test_pass_1_tool_calls_with_no_text_are_an_error_and_with_text_are_ignored(gemini: GeminiServer) -> None:
    agent = agent_for(gemini)
    gemini.enqueue(FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"})]))
    events = await ask(agent)
    err = error(events, "model_unexpected_tool_call")
    assert "scroll_tool" in err.message and "none was offered" in err.message and "no answer" in err.message
    [req] = gemini.generate_requests
    assert req.tool_names() == [], "pass 1 offers no tools"
    assert [e.pass_ for e in events if isinstance(e, PassStart)] == [1], "no tools were run"
    # With text, the text (already streamed to the user) is the answer; the calls never run.
    gemini.enqueue(FunctionCallReply(text=ANSWER, calls=[FunctionCall("scroll_tool", {"tab_id": "1"})]))
    done = (await ask(agent))[-1]
    assert isinstance(done, Done) and done.answer == ANSWER and done.tool_calls == 0


async def test_gemini_unexpected_tool_call_finish_is_an_unexpected_tool_call_error(gemini: GeminiServer) -> None:
    gemini.enqueue(FinishReply(finish_reason="UNEXPECTED_TOOL_CALL", categories=()))
    err = error(await ask(agent_for(gemini)), "model_unexpected_tool_call")
    assert "none was offered" in err.message
    assert len(gemini.generate_requests) == 1


@pytest.mark.parametrize("body", [{"candidates": 5}, 5, {"candidates": [{"content": {"parts": 5}}]}],
                         ids=["candidates-int", "bare-int", "parts-int"])
async def test_a_reply_the_client_cannot_parse_is_model_malformed_and_retried(gemini: GeminiServer, body: Any) -> None:
    gemini.enqueue(*[RawReply(chunks=[body])] * FAST.attempts)
    events = await ask(agent_for(gemini))
    err = error(events, "model_malformed")
    assert "malformed reply that chatagent could not read" in err.message
    assert f"Gave up after {FAST.attempts} tries" in err.message and "--model" in err.message
    assert len(gemini.generate_requests) == FAST.attempts


async def test_pass_2s_final_reply_empty_is_model_empty(gemini: GeminiServer) -> None:
    gemini.enqueue(
        TextReply(text=NEED),
        FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"})]),
        *[RawReply(chunks=[{}])] * FAST.attempts,
    )
    events = await ask(agent_for(gemini), "What colour is it?")
    err = error(events, "model_empty")
    assert [e.pass_ for e in events if isinstance(e, PassStart)] == [1, 2]
    assert len(gemini.generate_requests) == 2 + FAST.attempts
    assert all(r.tool_names() for r in gemini.generate_requests[1:]), "pass 2 offers the tools"
    assert "empty reply" in err.message


async def test_pass_2s_reply_withheld_by_the_filter_is_model_blocked(gemini: GeminiServer) -> None:
    gemini.enqueue(TextReply(text=NEED), FinishReply(finish_reason="SAFETY"))
    err = error(await ask(agent_for(gemini), "What colour is it?"), "model_blocked")
    assert "safety filter withheld" in err.message
    assert len(gemini.generate_requests) == 2


@pytest.mark.e2e
async def test_cli_ask_exits_1_with_the_block_reason_instead_of_an_empty_answer(site: Site) -> None:
    with GeminiServer(ttft_s=0.0) as gemini:
        gemini.enqueue(BlockedReply())
        env = {**os.environ, "PYTHONPATH": str(ROOT), **gemini.env()}
        proc = await asyncio.to_thread(
            subprocess.run,
            command("ask", site.url("product"), "-q", "How much?", "--model", "gemini-2.5-flash", "--json"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=90,
        )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 1, proc.stderr
    assert events[-1]["type"] == "error" and events[-1]["code"] == "model_blocked"
    assert not any(e["type"] == "done" for e in events)
    assert "Traceback" not in proc.stderr


@pytest.mark.e2e
async def test_cli_ask_cuts_an_answer_that_runs_on_and_says_how_to_allow_longer_ones(site: Site) -> None:
    runaway = " ".join(["and the price is still the price"] * 200)
    with GeminiServer(ttft_s=0.0) as gemini:
        gemini.enqueue(TextReply(text=runaway))
        env = {**os.environ, "PYTHONPATH": str(ROOT), **gemini.env(), "CHATAGENT_MAX_ANSWER_TOKENS": "40"}
        proc = await asyncio.to_thread(
            subprocess.run, command("ask", site.url("product"), "-q", "How much?", "--model", "gemini-2.5-flash"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=90,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("and the price is still the price") and len(proc.stdout) < len(runaway) // 10
    assert "The answer reached its length limit (40 tokens) and was cut there." in proc.stderr
    assert "chatagent config set max_answer_tokens N` allows longer answers" in proc.stderr
