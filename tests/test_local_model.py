"""A real local model: llama.cpp's OpenAI-compatible server (the `local` extra)
serving SmolLM2-135M-Instruct, through the real OpenAI client: `ask`, `chat`
with a follow-up and MCP's `ask_pages`. So small a model's answers are not
judged; that an answer streams, and what it cost, are.

The server reports no token usage in a stream: the figures are counted, said
to be counted, and close to the model's own tokenizer's count.

Pass 2 is not tested here: a 135M model neither says when the page text is
not enough nor calls tools reliably."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from chatagent.agent import ChatAgent
from chatagent.events import Done, ErrorEvent, Note, Token
from chatagent.hooks import RunHooks
from chatagent.models import load_model
from chatagent.prompts import message_text
from chatagent.settings import Settings
from chatagent.testing import llama_server
from chatagent.testing.llama_server import LlamaServer

from conftest import ROOT, Site
from test_settings import run_cli

# One worker for the file: its tests share one llama.cpp server and its model.
pytestmark = [pytest.mark.local, pytest.mark.e2e, pytest.mark.xdist_group("llama")]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    if (why := llama_server.available()) is not None:
        pytest.skip(why)
    with LlamaServer(log=tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


def local_env(llama: LlamaServer, tmp_path: Path) -> dict[str, str]:
    return {"CHATAGENT_OPENAI_BASE_URL": llama.url, "CHATAGENT_MODEL": llama.model,
            "XDG_CONFIG_HOME": str(tmp_path), "CHATAGENT_CONFIG": ""}


def test_ask_streams_an_answer_and_says_its_tokens_were_counted(llama: LlamaServer, tmp_path: Path) -> None:
    page = str(ROOT / "fixtures/pages/product.html")
    shown = run_cli("ask", page, "-q", "How much does it cost?", env=local_env(llama, tmp_path))
    assert shown.returncode in (0, 3), shown.stderr  # 3: the model said it could not answer
    assert shown.stdout.strip(), "an answer streamed"
    assert "(counted: the server reported none)" in shown.stderr
    as_json = run_cli("ask", page, "-q", "How much does it cost?", "--json", env=local_env(llama, tmp_path))
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    done = events[-1]
    assert done["type"] == "done" and done["model"] == llama.model
    assert done["usage"]["counted"] and done["usage"]["input_tokens"] > 100 and done["usage"]["output_tokens"] > 0
    assert any(e["type"] == "token" for e in events)


@pytest.mark.asyncio(loop_scope="session")
async def test_counted_tokens_are_within_five_percent_of_the_models_own_count(
    llama: LlamaServer, site: Site, open_tabs: Any,
) -> None:
    sent: list[str] = []

    class Record(RunHooks):
        def request_sent(self, pass_: int, turn: int, messages: list[Any]) -> None:
            sent.extend(message_text(m) for m in messages)  # one request: pass 1 answers

    model = load_model(llama.model, Settings(openai_base_url=llama.url))
    agent = ChatAgent(model, await open_tabs([site.url("article")]), hooks=Record())
    events = [e async for e in agent.ask("When did construction begin?")]
    done = events[-1]
    assert isinstance(done, Done) and done.usage.counted
    answer = "".join(e.text for e in events if isinstance(e, Token))
    own_in = llama.tokens("\n".join(sent))
    own_out = llama.tokens(answer) if answer else 0
    assert abs(done.usage.input_tokens - own_in) <= 0.05 * own_in, (done.usage.input_tokens, own_in)
    assert abs(done.usage.output_tokens - own_out) <= max(3, 0.05 * own_out), (done.usage.output_tokens, own_out)


TEN_PAGES = ["article", "product", "listing", "long", "table", "forum_thread", "instructions", "catalogue",
             "orchard_guide", "kayak_care"]


@pytest.mark.asyncio(loop_scope="session")
async def test_ten_tabs_to_a_model_run_with_a_small_window_fit_it_by_its_own_count(
    site: Site, open_tabs: Any, tmp_path: Path,
) -> None:
    """llama.cpp run with `--n_ctx 3072`, which refuses a longer request (llama-cpp-python's
    server does not say its window: `context_window` does): ten tabs are answered, each
    request held to 90% of the window as the model's own tokenizer counts it. Told 2,048,
    ten tabs do not fit even at their titles and best lines: the error names the setting,
    and nothing is sent."""
    if (why := llama_server.available()) is not None:
        pytest.skip(why)
    sent: list[str] = []

    class Record(RunHooks):
        def request_sent(self, pass_: int, turn: int, messages: list[Any]) -> None:
            sent.append("\n".join(message_text(m) for m in messages))

    question = "Where is the emergency generator for the east pier kept?"
    with LlamaServer(n_ctx=3072, log=tmp_path / "server.log") as small:
        tabs = await open_tabs([site.url(p) for p in TEN_PAGES])
        model = load_model(small.model, Settings(openai_base_url=small.url, context_window=3072))
        events = [e async for e in ChatAgent(model, tabs, hooks=Record()).ask(question)]
        own = [small.tokens(request) for request in sent]
        tight = load_model(small.model, Settings(openai_base_url=small.url, context_window=2048))
        refused = [e async for e in ChatAgent(tight, tabs, hooks=Record()).ask(question)]
    done = events[-1]
    assert isinstance(done, Done) and any(isinstance(e, Token) for e in events), done
    assert len(own) == 1 and own[0] <= 0.9 * 3072, own
    said = [e.text for e in events if isinstance(e, Note) and "reads" in e.text]
    assert len(said) == 1 and "3,072 tokens" in said[0] and "the tabs were shortened" in said[0], said
    assert done.usage.counted and len(done.shares) == 10
    assert sum(s.tokens for s in done.shares) < sum(s.page_tokens for s in done.shares) / 2, done.shares
    error = refused[-1]
    assert isinstance(error, ErrorEvent) and error.code == "window_too_small" and error.setting == "context_window"
    assert "2,048 tokens" in error.message and small.model in error.message and len(sent) == 1


@pytest.mark.asyncio(loop_scope="session")
async def test_chat_answers_a_follow_up_with_the_earlier_turn(llama: LlamaServer, site: Site, tmp_path: Path) -> None:
    import asyncio

    env = {**os.environ, "PYTHONPATH": str(ROOT), **local_env(llama, tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "chatagent", "chat", "--json", site.url("article"), cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    dones = []
    for question in ("What is the article about?", "And when did it start?"):
        proc.stdin.write(question.encode() + b"\n")
        await proc.stdin.drain()
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=300)
            assert line, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
            event = json.loads(line)
            if event["type"] in ("done", "error"):
                dones.append(event)
                break
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), timeout=60) == 0
    assert [d["type"] for d in dones] == ["done", "done"], dones
    first, follow_up = dones
    # The follow-up's request carried the first turn: it was longer than the first one's.
    assert follow_up["usage"]["input_tokens"] > first["usage"]["input_tokens"]


@pytest.mark.asyncio(loop_scope="session")
async def test_mcp_ask_pages_answers_through_the_local_model(llama: LlamaServer, site: Site, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chatagent", "mcp"], cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT), **local_env(llama, tmp_path)},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("ask_pages", {"urls": [site.url("product")], "question": "How much is it?"})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["answer"].strip() and out["tokens_counted"] and out["input_tokens"] > 100


def test_the_census_counts_every_pages_prompts_with_the_models_tokenizer(tmp_path: Path) -> None:
    """`benchmarks.local_model --pages 0 --census`: no answers, the prompt tokens of
    chatagent's context and of the whole text on every page of the set."""
    if (why := llama_server.available()) is not None:
        pytest.skip(why)
    import gzip

    from benchmarks import local_model

    pages = tmp_path / "wcxb-test" / "html"
    pages.mkdir(parents=True)
    long_text = "".join(f"<p>Shelf {i} of the depot holds crates of brass fittings and spare valves.</p>" for i in range(900))
    (pages / "long.html.gz").write_bytes(gzip.compress(
        f"<html><title>Depot</title><body><h1>Depot</h1>{long_text}<p>The depot opens at 07:15.</p></body></html>".encode()))
    (pages / "short.html.gz").write_bytes(gzip.compress(
        b"<html><title>Kiosk</title><body><h1>Kiosk</h1><p>The kiosk sells maps for four euros.</p></body></html>"))
    (tmp_path / "realistic").mkdir()
    (tmp_path / "realistic" / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"id": "a", "page": "long.html.gz", "page_type": "service", "question": "When does the depot open?",
         "answers": ["07:15"], "kind": "fact"},
        {"id": "b", "page": "short.html.gz", "page_type": "service", "question": "How much is a map?",
         "answers": ["four euros"], "kind": "fact"},
    ]) + "\n")
    (tmp_path / "realistic" / "comparisons.jsonl").write_text("")
    out = tmp_path / "census.json"
    assert local_model.main(["--data", str(tmp_path), "--pages", "0", "--set", "realistic", "--census",
                             "--budget", "500", "--ten-tabs", "0", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    census = result["census"]["realistic"]
    assert result["rows"] == [] and census["pages"] == 2 and "ten_tabs" not in result
    # The long page is cut to the budget; the short one is sent whole either way.
    assert census["chatagent_tokens_p50"] < census["whole_tokens_p50"] and census["share_p50"] < 1
