"""No offline question holds another call (issue 54 row 9): the offline model
reads in a worker process, off the event loop, for at most `offline_timeout`.
A question of many parts over many tabs names the parts it did not reach;
one cancelled (its deadline) has its worker killed; in the MCP server a
one-page call is answered while such a question is still reading. Each test
watches the loop (`loop_watch`): none may hold it."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from langchain_core.messages import BaseMessage
from mcp.client import Client

from chatagent.agent import ChatAgent
from chatagent.browser import StaticTab
from chatagent.events import Done, ErrorEvent, Event
from chatagent.hooks import RunHooks
from chatagent.mcp_server import running
from chatagent.models import load_model
from chatagent.runtime import Runtime
from chatagent.settings import Settings
from chatagent.testing.many_parts import TABS, ledger, ledger_lines, many_parts, serving

from loop_watch import LoopWatch, loop_watch  # noqa: F401 - the fixture, by name

ASYNC = pytest.mark.asyncio(loop_scope="session")
# Parts in the question the tests ask: read whole, 18 s or more over TABS tabs, however quiet the machine.
PARTS = 150


def static_tabs(n: int = TABS) -> list[StaticTab]:
    return [StaticTab(str(i + 1), f"http://127.0.0.1/ledger/{i}", ledger(i), title=f"Ledger {i}",
                      visible_text="\n".join([f"Ledger {i}", *ledger_lines(i)])) for i in range(n)]


def last(events: list[Event]) -> Event:
    assert sum(isinstance(e, (Done, ErrorEvent)) for e in events) == 1, events
    return events[-1]


@ASYNC
async def test_a_question_of_many_parts_stops_reading_at_its_limit_and_names_the_rest(loop_watch: LoopWatch) -> None:
    """150 parts over 10 tabs with offline_timeout 10 (a busy machine reads the first parts in
    seconds): the first parts are answered, a line says how many were not reached and which
    setting allows more, and the loop was never held."""
    model = await asyncio.to_thread(load_model, "extractive", Settings(offline_timeout=10))  # its imports: off the loop
    events = [e async for e in ChatAgent(model, static_tabs()).ask(many_parts(PARTS))]
    done = last(events)
    assert isinstance(done, Done), done
    assert "I stopped reading after 10 s (the offline_timeout setting)" in done.answer
    assert f"of the question's {PARTS} parts" in done.answer
    assert "[Tab" in done.answer, "the parts reached are answered, citing their tabs"


class _Reading(RunHooks):
    """Set when the model is asked: from then on, the offline model is reading."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    def request_sent(self, pass_: int, turn: int, messages: list[BaseMessage]) -> None:
        self.asked.set()


def _readers() -> list[int]:
    """The pids of the offline model's worker processes alive now."""
    import multiprocessing

    return [p.pid for p in multiprocessing.active_children() if p.name == "chatagent-offline-reader"]


@ASYNC
async def test_a_question_past_its_deadline_has_its_reading_stopped(loop_watch: LoopWatch) -> None:
    """Deadline 8 s, a reading that would take 18 s or more (offline_timeout 120): the question ends
    with the deadline error, the worker that read is gone, and the next question is answered."""
    model = await asyncio.to_thread(load_model, "extractive", Settings(offline_timeout=120))
    tabs = static_tabs()
    before = set(_readers())  # other tests' workers
    agent = ChatAgent(model, tabs, deadline_s=8)  # reading 10 tabs on a busy machine takes some of it
    reading = _Reading()
    agent.hooks = reading
    events = [e async for e in agent.ask(many_parts(PARTS))]
    stopped = last(events)
    assert isinstance(stopped, ErrorEvent) and stopped.code == "deadline", stopped
    assert reading.asked.is_set(), "the deadline passed before the model was asked: the test proves nothing"
    for _ in range(100):  # the kill is sent at once; the process is reaped on a thread
        if not set(_readers()) - before:
            break
        await asyncio.sleep(0.05)
    assert not set(_readers()) - before, "the worker that was reading is still alive"
    again = [e async for e in ChatAgent(model, tabs[:1]).ask("How much did the harbour ferry cost?")]
    assert isinstance(last(again), Done) and "$" in last(again).answer


@pytest.mark.e2e
@ASYNC
async def test_in_the_mcp_server_a_one_page_call_is_answered_while_a_huge_question_reads(
    loop_watch: LoopWatch, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MCP server in this process, through the SDK's client: ask_pages with the question of
    many parts over 10 tabs (offline_timeout 8), and once its model is reading, read_pages of
    one page. The one page is read and answered while the question is still reading."""
    reading = _Reading()
    conversation = Runtime.conversation
    monkeypatch.setattr(Runtime, "conversation", lambda self, tabs=(), **kw: conversation(self, tabs, **kw, hooks=reading))
    with serving() as base:
        async with running(Settings(offline_timeout=8)) as server, Client(server) as client:
            # Its start first (the browser, the extraction workers): the extraction pool starts its
            # processes on the loop, which is another part of issue 54's to bound, not this test's.
            alone = await client.call_tool("read_pages", {"urls": [f"{base}/ledger/{TABS + 1}"]})
            loop_watch.held.clear()
            ask = asyncio.create_task(client.call_tool("ask_pages", {
                "urls": [f"{base}/ledger/{i}" for i in range(TABS)], "question": many_parts(PARTS)}))
            await asyncio.wait([ask, asyncio.ensure_future(reading.asked.wait())], return_when=asyncio.FIRST_COMPLETED)
            assert not ask.done(), ask.result()
            one = await client.call_tool("read_pages", {"urls": [f"{base}/ledger/{TABS + 2}"]})
            still_reading = not ask.done()
            asked = await ask
    for page, n in ((alone, TABS + 1), (one, TABS + 2)):
        assert not page.is_error, page.content
        assert f"Ledger {n}" in page.structured_content["pages"][0]["text"]
    assert still_reading, "the one-page call waited for the question's reading to end"
    assert not asked.is_error and "[Tab" in asked.structured_content["answer"], asked.content


@pytest.mark.e2e
def test_in_the_daemon_a_one_page_ask_is_answered_while_a_huge_question_reads(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """`chatagent ask --json` through a daemon (offline_timeout 20): the question of many parts
    over 10 pages, and once it says its pass 1 started (its model is reading), a one-page ask.
    The one-page ask is answered while the question is still reading; then the question too."""
    from test_daemon import ROOT, command, ending, run, start

    daemon = start(tmp_path_factory.mktemp("d"), CHATAGENT_OFFLINE_TIMEOUT="20")  # room for a busy machine
    try:
        with serving() as base:
            huge = subprocess.Popen(command("ask", *(f"{base}/ledger/{i}" for i in range(TABS)), "-q", many_parts(PARTS),
                                            "--json"),
                                    cwd=ROOT, env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                seen = []
                for line in huge.stdout:  # its events as they come
                    seen.append(json.loads(line))
                    if seen[-1]["type"] in ("pass_start", "done", "error"):
                        break
                assert seen[-1]["type"] == "pass_start", seen
                one = run("ask", f"{base}/ledger/{TABS + 1}", "-q", "How much did the harbour ferry cost?", "--json",
                          env=daemon.env)
                still_reading = huge.poll() is None
                out, err = huge.communicate(timeout=110)
            finally:
                huge.kill()
    finally:
        run("daemon", "stop", env=daemon.env)
    assert one.returncode == 0, one.stderr
    assert "$" in ending(one)["answer"]
    assert still_reading, "the one-page ask waited for the question's reading to end"
    done = json.loads(out.splitlines()[-1])
    assert huge.returncode == 0 and done["type"] == "done" and "[Tab" in done["answer"], (out[-2000:], err)


@pytest.mark.e2e
def test_chatagent_ask_keeps_its_deadline_over_a_huge_question(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`chatagent ask --deadline 12 --json` with the question of 150 parts over 20 pages
    (offline_timeout 120; read whole, twice the 18 s of 10): it ends with the deadline error
    after its model began reading, with no traceback, rather than reading on."""
    from test_daemon import ROOT, _env, command

    env = _env(tmp_path_factory.mktemp("d"), CHATAGENT_OFFLINE_TIMEOUT="120")
    with serving() as base:
        proc = subprocess.run(command("ask", *(f"{base}/ledger/{i}" for i in range(2 * TABS)), "-q", many_parts(PARTS),
                                      "--deadline", "12", "--json"),
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=110)
    assert "Traceback" not in proc.stdout + proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "pass_start" in [e["type"] for e in events], ("the deadline passed before the model read: the test proves "
                                                          f"nothing {events[-1]}")
    assert events[-1]["type"] == "error" and events[-1]["code"] == "deadline", events[-1]


@ASYNC
async def test_a_reader_past_its_time_is_killed_and_the_next_call_gets_a_fresh_one(loop_watch: LoopWatch) -> None:
    """The workers themselves: a call that passes its timeout raises `ReadingTimeout` and its
    process is gone; the next call is answered by another process, and an error in the call
    comes back as itself."""
    import os
    import time

    from chatagent.offline.worker import Readers, ReadingTimeout

    readers = Readers()
    try:
        first = await readers.run(os.getpid)
        with pytest.raises(ReadingTimeout):
            await readers.run(time.sleep, 60, timeout_s=0.5)
        second = await readers.run(os.getpid)
        for _ in range(100):  # killed at once, reaped on a thread
            if first not in _readers():
                break
            await asyncio.sleep(0.05)
        with pytest.raises(ValueError, match="invalid literal"):
            await readers.run(int, "not a number")
    finally:
        readers.close()
    assert first != second, "the worker that overran was given the next call"
    assert first not in _readers()
