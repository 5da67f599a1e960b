"""The real host (`python -m extension_bridge`) with the real agent and the
Gemini client against the local server: one side panel is one conversation,
and a repeated question is answered from the cache unless the ask says noCache."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chatagent.testing.gemini_server import FunctionCall, FunctionCallReply, GeminiServer, TextReply
from extension_bridge.install import EXTENSION_ORIGIN
from extension_bridge.spawn import ROOT, spawn_host

from conftest import PAGES
from warm_start import command
from test_bridge_host import Peer

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]

PRODUCT = (PAGES / "product.html").read_text()


@contextlib.asynccontextmanager
async def real_host(gemini: GeminiServer) -> AsyncIterator[Peer]:
    async with spawn_host({"GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": gemini.url, "CHATAGENT_MODEL": "gemini-2.5-flash"}, host=command(module="extension_bridge")) as proc:
        yield Peer(proc)


def ask(rid: str, question: str, **extra: Any) -> dict[str, Any]:
    tab = {"tabId": 41, "url": "https://shop.example/aurora", "title": "Aurora X14 Pro", "html": PRODUCT}
    return {"type": "ask", "id": rid, "question": question, "tabs": [tab], "model": "gemini-2.5-flash", **extra}


async def test_a_side_panel_conversation_has_follow_ups_and_a_cache(gemini: GeminiServer) -> None:
    gemini.enqueue(
        TextReply(text="It costs $1,349.00 [Tab 1]."),
        TextReply(text="Yes, the Volta Sleeve 14\" [Tab 1]."),
        TextReply(text="It costs $1,349.00 [Tab 1]."),
    )
    async with real_host(gemini) as peer:
        await peer.send(ask("a", "How much is it?"))
        first = (await peer.events_until_end("a"))[-1]
        await peer.send(ask("b", "Is there a sleeve for it?"))
        assert (await peer.events_until_end("b"))[-1]["type"] == "done"
        await peer.send(ask("c", "How much is it?"))
        cached = (await peer.events_until_end("c"))[-1]
        await peer.send(ask("d", "How much is it?", noCache=True))
        fresh = (await peer.events_until_end("d"))[-1]
    assert first["type"] == "done" and not first["cached"]
    assert cached["cached"] and cached["answer"] == first["answer"]
    assert cached["citations"][0]["tab_id"] == "41", "cached citations still point at the Chrome tab"
    assert not fresh["cached"]
    assert len(gemini.generate_requests) == 3
    follow_up = gemini.generate_requests[1].text()
    assert "How much is it?" in follow_up and "$1,349.00 [Tab 1]" in follow_up


async def test_an_asks_first_event_says_how_its_answer_numbers_the_tabs(gemini: GeminiServer) -> None:
    """[Tab N] counts the tabs the host was sent, for the whole conversation: a
    follow-up about the second tab alone still calls it [Tab 2], and the panel,
    which knows tabs by Chrome id, is told so."""
    gemini.enqueue(TextReply(text="One [Tab 1], two [Tab 2]."), TextReply(text="Still two [Tab 2]."))
    [product] = ask("a", "What are they?")["tabs"]
    other = {"tabId": 7, "url": "https://example.org/other", "title": "Other", "html": "<p>Another page.</p>"}
    async with real_host(gemini) as peer:
        await peer.send({**ask("a", "What are they?", conversation="t"), "tabs": [product, other]})
        first = await peer.recv()
        later = await peer.events_until_end("a")
        await peer.send({**ask("b", "And the other one?", conversation="t"), "tabs": [other]})
        follow_up = await peer.recv()
        done = (await peer.events_until_end("b"))[-1]
    assert first["tabs"] == [{"tabId": 41, "label": "1"}, {"tabId": 7, "label": "2"}]
    assert later[-1]["type"] == "done"
    assert follow_up["tabs"] == [{"tabId": 7, "label": "2"}]
    assert done["citations"] == [{"tab_id": "7", "url": other["url"], "title": "Other", "label": "2", "block": "", "quote": ""}]


async def test_the_done_event_names_the_chrome_tab_given_as_an_overview(gemini: GeminiServer) -> None:
    """A request for the gist of a long handbook and a short product page: the handbook is
    given as an overview, and `done` says so by its Chrome tab id, as its citations do; the
    same from the cache. The product page, sent whole, is no overview."""
    gemini.enqueue(TextReply(text="An orchard handbook [Tab 2] and a laptop [Tab 1]."))
    guide = {"tabId": 9, "url": "https://orchards.example/handbook", "title": "Orchard handbook",
             "html": (PAGES / "orchard_guide.html").read_text()}
    [product] = ask("a", "x")["tabs"]
    async with real_host(gemini) as peer:
        await peer.send({**ask("a", "Give me the gist of these pages"), "tabs": [product, guide]})
        done = (await peer.events_until_end("a"))[-1]
        await peer.send({**ask("b", "Give me the gist of these pages"), "tabs": [product, guide]})
        cached = (await peer.events_until_end("b"))[-1]
    assert done["type"] == "done" and cached["cached"], (done, cached)
    for event in (done, cached):
        [overview] = event["overviews"]
        assert overview["tab_id"] == "9" and overview["url"] == guide["url"] and overview["scope"] == "whole"
        assert 1 <= overview["parts_shown"] <= overview["parts"] and overview["parts"] > 1
    assert {c["tab_id"] for c in done["citations"]} == {"9", "41"}


async def test_the_model_connection_is_open_before_the_first_question(gemini: GeminiServer) -> None:
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    async with real_host(gemini) as peer:
        await peer.send({"type": "ping"})
        assert (await peer.recv())["type"] == "pong"
        # Nothing asked yet: the host has made the model's client, opened its connection
        # and asked the model's window (models.get, twice: the client's warm-up, the window's).
        deadline = time.monotonic() + 30
        # Recorded as it comes, its status once the reply is sent: wait for both.
        while sum(r.method == "GET" and r.status is not None for r in gemini.requests) < 2:
            assert time.monotonic() < deadline, "the host never warmed its model client"
            await asyncio.sleep(0.05)
        assert [(r.method, r.model, r.status) for r in gemini.requests] == [("GET", "gemini-2.5-flash", 200)] * 2
        await peer.send(ask("a", "How much is it?"))
        assert (await peer.events_until_end("a"))[-1]["type"] == "done"
    assert len(gemini.generate_requests) == 1


async def test_panel_settings_are_saved_in_the_settings_file_and_bad_ones_change_nothing(
    gemini: GeminiServer, private_settings: Any,
) -> None:
    """The panel's settings view over the real host: what it shows, a bad value
    refused with the panel's name for the field, a save the next ask uses, and
    threads (`conversation`) that keep their own history."""
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."), TextReply(text="Other thread [Tab 1]."))
    async with spawn_host({"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "CHATAGENT_MODEL": ""}, host=command(module="extension_bridge")) as proc:
        peer = Peer(proc)
        await peer.send({"type": "settings_get", "id": "s1"})
        shown = await peer.recv()
        assert shown["type"] == "settings" and shown["model"] == "extractive"
        assert shown["settings"]["googleApiKey"] == {"value": None, "source": "default", "origin": "default", "savedFor": None}
        assert shown["path"] == str(private_settings)
        await peer.send({"type": "settings_set", "id": "s2", "values": {"model": "gpt-nonsense", "googleApiKey": "k"}})
        refused = await peer.recv()
        assert refused["type"] == "error" and refused["id"] == "s2" and refused["code"] == "bad_setting"
        assert refused["message"].startswith("Model: Unknown model 'gpt-nonsense'")
        assert "--model" not in refused["message"] and "chatagent config" not in refused["message"], "the panel's words"
        assert not private_settings.exists(), "a bad value saves nothing"
        await peer.send({"type": "settings_set", "id": "s2b", "values": {"model": "gemini-2.5-flash"}})
        keyless = await peer.recv()
        assert keyless["model"] == "gemini-2.5-flash" and shown["problem"] is None
        assert keyless["problem"] == "gemini-2.5-flash needs a Gemini API key: enter one, or choose Offline."
        await peer.send({"type": "settings_set", "id": "s3", "values": {
            "model": "gemini-2.5-flash", "googleApiKey": "test", "geminiBaseUrl": gemini.url, "cdp": "http://evil:9222"}})
        saved = await peer.recv()
        assert saved["model"] == "gemini-2.5-flash" and saved["problem"] is None
        assert saved["settings"]["googleApiKey"]["value"] == "(set)" and saved["settings"]["googleApiKey"]["source"] == "file"
        assert "cdp" not in private_settings.read_text(), "only the panel's settings can be set from the panel"
        await peer.send({**ask("a", "How much is it?", conversation="t1"), "model": None})
        first = (await peer.events_until_end("a"))[-1]
        await peer.send({**ask("b", "And in another thread?", conversation="t2"), "model": None})
        assert (await peer.events_until_end("b"))[-1]["type"] == "done"
    assert first["type"] == "done" and first["model"] == "gemini-2.5-flash"
    other = gemini.generate_requests[1].text()
    assert "How much is it?" not in other, "another thread starts without the first one's history"


# The host as Chrome starts it (`python -m extension_bridge ORIGIN`), its log at DEBUG.
_HOST_AT_DEBUG = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.DEBUG); "
    "sys.argv[0] = 'extension_bridge'; runpy.run_module('extension_bridge', run_name='__main__', alter_sys=True)"
)


async def test_the_host_runs_no_garbage_collection_until_it_is_warm(gemini: GeminiServer, tmp_path: Path) -> None:
    """Its start-up's long-lived objects are not scanned again and again
    (chatagent/startup.py): a question asked as the panel opens is answered sooner."""
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": gemini.url,
           "CHATAGENT_MODEL": "gemini-2.5-flash"}
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _HOST_AT_DEBUG, EXTENSION_ORIGIN, cwd=ROOT, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errlog)
        peer = Peer(proc)
        await peer.send(ask("a", "How much is it?"))
        done = (await peer.events_until_end("a"))[-1]
        for _ in range(300):  # once warm, while the host still serves: not as it exits
            if serving := "start-up over" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert proc.stdin
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
    assert done["type"] == "done" and "$1,349.00" in done["answer"]
    text = log.read_text()
    assert serving, text[-3000:]
    over = re.findall(r"start-up over after (\d+) garbage collections: (\d+) objects frozen", text)
    assert len(over) == 1, log.read_text()[-3000:]
    collections, frozen = map(int, over[0])
    assert collections < 60  # ~20 as the interpreter starts; unpaused, the runtime's imports alone run ~170
    assert frozen > 100_000  # what warming loaded: LangChain, the Gemini client, trafilatura


async def test_a_tool_call_reaches_the_panel_in_words_naming_the_tab_by_its_title(gemini: GeminiServer) -> None:
    """The panel shows what pass 2 is doing as the host words it: it names the
    tab as the panel does, by its title, not by the model's label."""
    gemini.enqueue(
        TextReply(text="[[NEED_BROWSER]] The price is further down."),
        FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"})]),
        TextReply(text="It costs $1,349.00 [Tab 1]."),
    )
    async with real_host(gemini) as peer:
        await peer.send(ask("a", "How much is it?"))
        events = []
        while not events or events[-1]["type"] not in ("done", "error"):
            msg = await peer.recv()
            if msg["type"] == "tool_request":
                await peer.send({
                    "type": "tool_result", "id": "a", "callId": msg["callId"], "ok": True, "text": "Price: $1,349.00",
                    "scroll": {"scrollY": 900, "pageHeight": 3000, "viewportHeight": 700, "atBottom": False},
                })
            else:
                events.append(msg["event"])
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["words"] == "Scrolling down the “Aurora X14 Pro” tab…"
    assert call["args"]["tab_id"] == "41", "the panel's own tab id"
    assert events[-1]["type"] == "done"


async def test_a_local_server_model_named_by_its_preset_is_shown_as_an_openai_compatible_servers(
    private_settings: Path,
) -> None:
    # Saved by `chatagent config set model ollama:llama3.2`: the panel's form shows Ollama's llama3.2
    # where such a model is chosen, at the address the name stands for, not as a Gemini model.
    private_settings.write_text('model = "ollama:llama3.2"\n', encoding="utf-8")
    async with spawn_host({"CHATAGENT_MODEL": ""}, host=command(module="extension_bridge")) as proc:
        peer = Peer(proc)
        await peer.send({"type": "settings_get", "id": "s1"})
        shown = await peer.recv()
        await peer.send({"type": "settings_set", "id": "s2", "values": {"model": "openai:qwen2.5"}})
        custom = await peer.recv()
    assert shown["model"] == "ollama:llama3.2"
    assert shown["form"] == {"provider": "openai", "model": "llama3.2", "baseUrl": "http://127.0.0.1:11434/v1"}
    assert custom["form"] == {"provider": "openai", "model": "qwen2.5", "baseUrl": None}
