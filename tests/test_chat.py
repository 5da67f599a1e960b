"""`chatagent chat` run as a user would (a subprocess reading questions on
stdin) against the local Gemini-compatible server: follow-ups carry the
earlier turns, navigation between questions is noticed, a long conversation
stays within the history budget with no orphaned tool results, repeated
questions come from the answer cache."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from chatagent.browser.playwright import PlaywrightBrowser, PlaywrightTab
from chatagent.history import DEFAULT_HISTORY_BUDGET
from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.gemini_server import (
    FunctionCall, FunctionCallReply, GeminiServer, RecordedRequest, Reply, TextReply,
)
from chatagent.tokens import count_tokens

from conftest import ROOT, Site
from warm_start import command
from test_context_cli import running_chrome  # noqa: F401 - a fixture

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]


class Chat:
    """A running `chatagent chat --json`: one question in, its events out."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, line: str) -> None:
        """A line (a command) that prints no events."""
        assert self.proc.stdin
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def ask(self, question: str) -> list[dict[str, Any]]:
        assert self.proc.stdout
        await self.send(question)
        events: list[dict[str, Any]] = []
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout=60)
            assert line, f"chat exited early: {(await self.proc.stderr.read()).decode()}"  # type: ignore[union-attr]
            events.append(json.loads(line))
            if events[-1]["type"] in ("done", "error"):
                return events


@asynccontextmanager
async def chat(gemini: GeminiServer, *args: str, own_group: bool = False, status: int = 0) -> AsyncIterator[Chat]:
    """`own_group`: in a process group of its own, as a terminal's foreground job is;
    `status`: the exit status expected."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": gemini.url}
    proc = await asyncio.create_subprocess_exec(
        *command("chat", "--json", "--model", "gemini-2.5-flash", *args),
        cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=own_group,
    )
    try:
        yield Chat(proc)
        assert proc.stdin
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), timeout=30) == status
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def done(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] == "done", events[-1]
    return events[-1]


def page_context(req: RecordedRequest) -> str:
    first = req.contents[0]
    return "".join(p.get("text", "") for p in first["parts"])


def content_text(content: dict[str, Any]) -> str:
    bits = []
    for p in content.get("parts") or []:
        bits.append(p.get("text") or "")
        for key in ("functionCall", "functionResponse"):
            if key in p:
                bits.append(json.dumps(p[key]))
    return " ".join(bits)


async def test_a_follow_up_carries_the_earlier_turns(gemini: GeminiServer, site: Site) -> None:
    gemini.enqueue(
        TextReply(text="The Aurora X14 Pro costs $1,349.00 [Tab 1]."),
        TextReply(text="Yes, the Volta Sleeve 14\" fits it [Tab 1]."),
    )
    async with chat(gemini, site.url("product")) as c:
        done(await c.ask("How much is the laptop?"))
        done(await c.ask("Is there a sleeve for it?"))
    first, second = gemini.generate_requests
    texts = [content_text(x) for x in second.contents]
    assert texts[-3:] == [
        "How much is the laptop?", "The Aurora X14 Pro costs $1,349.00 [Tab 1].", "Is there a sleeve for it?",
    ]
    # The page context keeps its place and bytes, so providers' prompt caches can reuse it.
    assert page_context(first) == page_context(second) and "<page_context-" in page_context(first)


async def test_ctrl_c_stops_one_answer_and_leaves_the_browser_and_extraction_workers_running(
    gemini: GeminiServer, site: Site
) -> None:
    # A terminal sends Ctrl-C to the whole foreground process group: the
    # browser and the extraction workers must survive it. The page changes
    # itself between the questions, so the second one needs a new extraction.
    gemini.enqueue(
        TextReply(text="It is pending [Tab 1].", ttft_s=30),
        TextReply(text="It has shipped [Tab 1]."),
    )
    # Exit status 0 at the end: an answer the user stopped is not a failure.
    # Two tabs: a session extracts in worker processes only when there are several.
    async with chat(gemini, site.url("changing") + "?gate=shipped", site.url("two_a"), own_group=True) as c:
        assert c.proc.stdin
        c.proc.stdin.write(b"Where is my order?\n")
        await c.proc.stdin.drain()
        for _ in range(1200):  # a generous bound: the browser and the runtime start first
            if gemini.generate_requests:
                break
            await asyncio.sleep(0.05)
        assert gemini.generate_requests, "the first question never reached the model"
        os.killpg(c.proc.pid, signal.SIGINT)
        event = json.loads(await asyncio.wait_for(c.proc.stdout.readline(), timeout=30))  # type: ignore[union-attr]
        while event["type"] not in ("done", "error"):
            event = json.loads(await asyncio.wait_for(c.proc.stdout.readline(), timeout=30))  # type: ignore[union-attr]
        assert event["type"] == "error" and event["code"] == "aborted", event
        await asyncio.to_thread(site.open_gate, "shipped")
        second = done(await c.ask("Where is my order now?"))
        assert "shipped" in second["answer"]
    first, last = gemini.generate_requests[0], gemini.generate_requests[-1]
    assert "Status: pending" in page_context(first) and "Status: shipped" in page_context(last)
    stderr = (await c.proc.stderr.read()).decode()  # type: ignore[union-attr]
    assert "extraction workers are gone" not in stderr, stderr


async def test_navigation_between_questions_is_noticed(gemini: GeminiServer, site: Site, running_chrome: str) -> None:
    users_chrome = await PlaywrightBrowser.connect_cdp(running_chrome)
    try:
        (tab,) = await users_chrome.existing_tabs()
        assert isinstance(tab, PlaywrightTab)
        await tab.page.wait_for_load_state()
        gemini.enqueue(*[TextReply(text="It was founded long ago [Tab 1].")] * 3)
        async with chat(gemini, "--cdp", running_chrome) as c:
            first = done(await c.ask("When was it founded?"))
            await tab.page.goto(site.url("two_a"))  # the user follows a link between questions
            events = await c.ask("When was it founded?")
    finally:
        await users_chrome.close()
    second = done(events)
    notes = [e["text"] for e in events if e["type"] == "note"]
    assert any("is now at " + site.url("two_a") in n for n in notes), notes
    assert not first["cached"] and not second["cached"], "a changed page is never answered from the cache"
    before, after = gemini.generate_requests
    assert "founded in 1791" in page_context(before)
    assert "founded in 1648" in page_context(after) and "founded in 1791" not in page_context(after)
    assert second["citations"][0]["url"] == site.url("two_a")


async def test_a_repeated_question_is_answered_from_the_cache_unless_told_not_to(gemini: GeminiServer, site: Site) -> None:
    gemini.enqueue(*[TextReply(text="The Aurora X14 Pro costs $1,349.00 [Tab 1].")] * 3)
    async with chat(gemini, site.url("product")) as c:
        fresh = done(await c.ask("How much is the laptop?"))
        events = await c.ask("how much is  the laptop?")
    cached = done(events)
    assert not fresh["cached"] and cached["cached"] and cached["answer"] == fresh["answer"]
    assert "".join(e["text"] for e in events if e["type"] == "token") == fresh["answer"], "replayed as a stream"
    assert len(gemini.generate_requests) == 1

    gemini.clear()
    async with chat(gemini, site.url("product"), "--no-cache") as c:
        done(await c.ask("How much is the laptop?"))
        assert not done(await c.ask("How much is the laptop?"))["cached"]
    assert len(gemini.generate_requests) == 2


def _long_conversation_responder() -> Callable[[RecordedRequest], Reply]:
    """Question N: every 5th needs the browser (one scroll, then an answer);
    every answer is long enough that 50 of them overflow the history budget."""

    def respond(req: RecordedRequest) -> Reply:
        last = req.contents[-1]
        n = re.search(r"question (\d+)", req.last_user_text())
        padding = " ".join(f"detail{k}" for k in range(60))
        if any("functionResponse" in p for p in last.get("parts") or []):
            return TextReply(text=f"After scrolling: answer to the question. {padding}")
        if req.tool_names():
            return FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"})])
        if n and int(n.group(1)) % 5 == 0:
            return TextReply(text=f"{ESCALATION_MARKER} the answer may be further down")
        return TextReply(text=f"Answer {n.group(1) if n else '?'} [Tab 1]. {padding}")

    return respond


async def test_fifty_turns_stay_within_the_history_budget_with_no_orphaned_tool_results(site: Site) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=20, responder=_long_conversation_responder()) as gemini:
        async with chat(gemini, site.url("product")) as c:
            for i in range(1, 51):
                # Any orphaned call or result would be a 400 from the server, so an error event here.
                d = done(await c.ask(f"Tell me about question {i} on this page?"))
                assert d["pass"] == (2 if i % 5 == 0 else 1)
        requests = gemini.generate_requests
    assert all(r.status == 200 for r in requests)
    assert len(requests) == 40 + 10 * 3  # pass 1 only, or pass 1 + call + answer
    for req in requests:
        texts = [content_text(x) for x in req.contents]
        question_at = max(i for i, t in enumerate(texts) if re.fullmatch(r"Tell me about question \d+ on this page\?", t))
        history = texts[1:question_at]
        assert sum(count_tokens(t) for t in history) <= DEFAULT_HISTORY_BUDGET
    last = [content_text(x) for x in requests[-1].contents]
    assert "Tell me about question 49 on this page?" in last, "the newest turns are kept"
    assert "Tell me about question 2 on this page?" not in last, "the oldest are dropped"
    assert "<conversation_summary>" in last[1] and "earlier question(s)" in last[1]


async def test_a_page_that_cannot_be_opened_is_said_once_before_the_first_question(
    gemini: GeminiServer, site: Site, tmp_path: Any,
) -> None:
    missing = tmp_path / "gone.html"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = await asyncio.create_subprocess_exec(
        *command("chat", "--model", "extractive", str(missing), site.url("product")),
        cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(plain.communicate(b"How much is it?\nAnd with delivery?\n/tabs\n"), 60)
    stderr = err.decode()
    assert plain.returncode == 0 and "$1,349.00" in out.decode()
    assert stderr.count("gone.html") == 1, stderr
    assert stderr.startswith("Not opened: No such file"), "before anything a question prints"
    # --json: every question's events say it, as a note, and end in one `done` as ever.
    gemini.enqueue(*[TextReply(text="It costs $1,349.00 [Tab 1].")] * 2)
    async with chat(gemini, str(missing), site.url("product")) as c:
        for question in ("How much is it?", "And with delivery?"):
            events = await c.ask(question)
            done(events)
            assert any(e["type"] == "note" and "gone.html" in e["text"] for e in events), events


async def test_commands_on_piped_input_open_close_switch_model_and_forget(gemini: GeminiServer, site: Site) -> None:
    gemini.enqueue(*[TextReply(text="It says a few things [Tab 1].")] * 3)
    async with chat(gemini, site.url("product"), status=1) as c:  # 1: a command failed
        await c.send(f"/open {site.url('two_a')}")
        await c.send("/tabs")
        done(await c.ask("What do these pages say?"))
        await c.send("/close 1")
        await c.send("/no-such-command please")
        done(await c.ask("And now?"))
        await c.send("/model extractive")
        offline = done(await c.ask("When was Port Averly founded?"))
        await c.send("/model gemini-2.5-flash")
        await c.send("/new")
        done(await c.ask("What is this page about?"))
    stderr = (await c.proc.stderr.read()).decode()  # type: ignore[union-attr]
    both, closed, fresh = gemini.generate_requests
    assert "Aurora X14 Pro" in page_context(both) and "founded in 1648" in page_context(both), "/open adds a tab"
    assert "Aurora X14 Pro" not in page_context(closed) and "founded in 1648" in page_context(closed), "/close"
    assert "What do these pages say?" in str(closed.contents), "the conversation goes on"
    assert "1648" in offline["answer"], "/model extractive answered offline: the server saw no request"
    assert fresh.last_user_text() == "What is this page about?" and "these pages" not in str(fresh.contents), "/new"
    assert not any("no-such-command" in str(r.contents) for r in gemini.requests), "a command never reaches the model"
    # In --json mode stdout carries only events: what commands say is on stderr.
    assert "[Tab 1] Aurora X14 Pro" in stderr and "[Tab 2] Port Averly" in stderr
    assert "Unknown command /no-such-command" in stderr


async def test_chat_over_cdp_without_urls_reads_the_tabs_opened_after_it_started(
    gemini: GeminiServer, site: Site, running_chrome: str
) -> None:
    users_chrome = await PlaywrightBrowser.connect_cdp(running_chrome)
    try:
        (tab,) = await users_chrome.existing_tabs()
        assert isinstance(tab, PlaywrightTab)
        await tab.page.wait_for_load_state()
        gemini.enqueue(*[TextReply(text="Long ago [Tab 1].")] * 3)
        async with chat(gemini, "--cdp", running_chrome) as c:
            done(await c.ask("When was it founded?"))
            page = await users_chrome.context.new_page()  # the user opens a tab meanwhile
            await page.goto(site.url("two_a"))
            second = done(await c.ask("When were they founded?"))
            await c.send("/close 2")
            done(await c.ask("When was the first one founded?"))
        still_open = [p.url for p in users_chrome.context.pages]
    finally:
        await users_chrome.close()
    before, after, closed = gemini.generate_requests
    assert "founded in 1791" in page_context(before) and "founded in 1648" not in page_context(before)
    assert "founded in 1791" in page_context(after) and "founded in 1648" in page_context(after)
    assert not second["cached"]
    assert "founded in 1648" not in page_context(closed) and "founded in 1791" in page_context(closed)
    assert site.url("two_a") in still_open, "/close leaves the user's own tab open in their browser"


async def test_the_garbage_collector_runs_again_once_the_prompt_shows(site: Site, tmp_path: Any) -> None:
    """Start-up's objects are frozen once the pages are open (chatagent/startup.py),
    before any question: a session of commands alone, however long, collects as usual."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        proc = await asyncio.create_subprocess_exec(
            *command("-vv", "chat", "--json", "--model", "extractive", site.url("product")),
            cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=errlog,
        )
        for _ in range(300):  # at the prompt, no question asked: not at the exit
            if serving := "start-up over" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert proc.stdin
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
    assert serving, log.read_text()[-3000:]
    frozen = int(re.search(r"start-up over after \d+ garbage collections: (\d+) objects frozen", log.read_text())[1])
    assert frozen > 100_000  # the runtime loaded and the page read
