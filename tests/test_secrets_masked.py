"""A configured key never leaves chatagent whole (issue 40, part 6).

The provider echoes the key it was sent (the local Gemini-compatible server,
its error message ending with the request's `x-goog-api-key`, met by the real
client), or the model's answer quotes it split across stream chunks; then
what each front end writes: `chatagent ask` on the terminal and in `--json`,
an ask a daemon answers, an MCP tool error and result through the SDK's
client, the side panel's host over its pipes, log lines. Everywhere the key
shows as `config show` shows it: `…` and its last four characters."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from chatagent.testing.gemini_server import ErrorReply, GeminiServer, RawReply, Reply, TextReply
from extension_bridge.install import EXTENSION_ORIGIN
from extension_bridge.spawn import spawn_host

from conftest import PAGES, ROOT, Site
from pty_terminal import Terminal
from warm_start import command
from test_bridge_conversation import ask as panel_ask
from test_bridge_host import Peer
from test_daemon import SERVED, run as run_cli, start, status

pytestmark = pytest.mark.e2e

KEY = "AIzaSy-never-shown-0123456789-abcdWXYZ"
MASK = "…WXYZ"
TOKEN, TOKEN_MASK = 'a "quoted" \\ token', "…oken"  # written escaped in JSON
QUESTION = "How much does the Aurora X14 Pro cost?"
# As Google answers a bad key, but with the key in the message: a provider (or a proxy) that echoes it.
ECHOED = ErrorReply(code=400, message="API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID",
                    echo_header="x-goog-api-key")
RETRIED = ErrorReply(code=503, message="Overloaded.", echo_header="x-goog-api-key")


def _text(text: str, *, last: bool = False) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate]}


# The answer quotes the key, cut across three chunks of the stream.
QUOTED = RawReply(chunks=[_text(f"It costs $1,349.00 [Tab 1]; your key is {KEY[:9]}"), _text(KEY[9:30]),
                          _text(f"{KEY[30:]}, as sent.", last=True)])


def _env(gemini: GeminiServer, **extra: str) -> dict[str, str]:
    # A one-letter token is too short to mask: the letter stays in every word (e.g. "refused the key").
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "GOOGLE_API_KEY": KEY,
            "GOOGLE_GEMINI_BASE_URL": gemini.url, "CHATAGENT_MODEL": "gemini-2.5-flash", "CHATAGENT_MCP_TOKEN": "e",
            **extra}


def _assert_masked(text: str) -> None:
    assert KEY not in text, text[-3000:]
    assert MASK in text, "the mask says which key it was"


@pytest.mark.parametrize("json_mode", [False, True], ids=["terminal", "json"])
@pytest.mark.parametrize(("replies", "status", "said"), [
    ([ECHOED], 1, "The Gemini API refused the key"),
    ([RETRIED, TextReply(text="It costs $1,349.00 [Tab 1].")], 0, "The model service failed"),
    ([QUOTED], 0, "your key is"),
], ids=["error", "retry-note", "answer-split-across-chunks"])
def test_ask_shows_only_the_keys_mask(
    gemini: GeminiServer, site: Site, replies: list[Reply], status: int, said: str, json_mode: bool,
) -> None:
    gemini.enqueue(*replies)
    proc = subprocess.run(
        command("ask", site.url("product"), "-q", QUESTION, *(["--json"] if json_mode else [])),
        cwd=ROOT, env=_env(gemini), capture_output=True, text=True, timeout=110,
    )
    assert gemini.generate_requests[0].headers["x-goog-api-key"] == KEY, "the provider was sent the key"
    shown = proc.stdout + proc.stderr
    _assert_masked(shown)
    assert proc.returncode == status, proc.stderr
    assert said in shown, "the short token masked nothing"
    if json_mode:
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        if replies == [QUOTED]:  # the streamed tokens add up to the answer, masked alike
            tokens = "".join(e["text"] for e in events if e["type"] == "token")
            assert tokens == events[-1]["answer"] == f"It costs $1,349.00 [Tab 1]; your key is {MASK}, as sent."


def test_an_answer_rendered_on_a_terminal_shows_only_the_keys_mask(gemini: GeminiServer, site: Site) -> None:
    """Streamed as Markdown and redrawn in place: no redraw ever carries the key."""
    gemini.enqueue(QUOTED)
    term = Terminal("ask", site.url("product"), "-q", QUESTION, env=_env(gemini))
    try:
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert KEY.encode() not in term.raw
    assert MASK in term.text() and "$1,349.00" in term.text()


def test_an_ask_the_daemon_answers_shows_only_the_keys_mask(
    gemini: GeminiServer, site: Site, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # GEMINI_API_KEY: test_daemon's environment leaves GOOGLE_API_KEY out.
    daemon = start(tmp_path_factory.mktemp("d"), GEMINI_API_KEY=KEY, GOOGLE_GEMINI_BASE_URL=gemini.url,
                   CHATAGENT_MODEL="gemini-2.5-flash")
    try:
        gemini.enqueue(ECHOED, ECHOED, QUOTED)
        asks = [run_cli("ask", site.url("product"), "-q", QUESTION, "-v", *extra, env=daemon.env)
                for extra in ([], ["--json"], ["--json"])]
        assert status(daemon.env)["asks"] == 3
    finally:
        run_cli("daemon", "stop", env=daemon.env)
    for proc in asks:
        assert SERVED.format(pid=daemon.pid) in proc.stderr
        _assert_masked(proc.stdout + proc.stderr)
    assert asks[0].returncode == asks[1].returncode == 1 and "refused the key" in asks[0].stderr + asks[1].stdout
    assert asks[2].returncode == 0 and "$1,349.00" in asks[2].stdout
    assert KEY not in daemon.paths.log.read_text()


@contextlib.asynccontextmanager
async def mcp_server(env: dict[str, str], errlog: Path) -> AsyncIterator[ClientSession]:
    argv = command("-v", "mcp")
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(ROOT), env=env)
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@pytest.mark.asyncio(loop_scope="session")
async def test_mcp_tool_errors_and_results_show_only_the_keys_mask(gemini: GeminiServer, tmp_path: Path) -> None:
    """What a client gets (over --http, a remote one: tool errors and results
    go out alike) and what the server logs (-v logs each tool error)."""
    page = tmp_path / "notes.html"
    page.write_text(f"<html><body><h1>Setup</h1><p>The key in use is {KEY} until June.</p>"
                    f"<p>The token is {TOKEN} for now.</p></body></html>")
    gemini.enqueue(ECHOED)
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    log = tmp_path / "stderr.txt"
    async with mcp_server(_env(gemini, CHATAGENT_MCP_TOKEN=TOKEN), log) as session:
        failed = await session.call_tool("ask_pages", {"urls": [str(PAGES / "product.html")], "question": QUESTION},
                                         progress_callback=on_progress)
        read = await session.call_tool("read_pages", {"urls": [str(page)]})
    assert failed.is_error and not read.is_error
    for result in (failed, read):
        _assert_masked(result.model_dump_json())
    assert "refused the key" in failed.content[0].text
    # The structured result, and the same as JSON text for clients that read only that.
    for text in (read.structured_content["pages"][0]["text"], json.loads(read.content[0].text)["pages"][0]["text"]):
        assert f"The key in use is {MASK} until June." in text
        assert f"The token is {TOKEN_MASK} for now." in text and TOKEN not in text, "masked where JSON escapes it too"
    assert KEY not in "".join(progress)
    assert KEY not in log.read_text() and "Tool 'ask_pages' failed" in log.read_text()


@pytest.mark.asyncio(loop_scope="session")
async def test_the_side_panels_host_sends_only_the_keys_mask(gemini: GeminiServer, tmp_path: Path) -> None:
    gemini.enqueue(ECHOED, QUOTED)
    log = tmp_path / "host.txt"
    env = {"GOOGLE_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": gemini.url, "CHATAGENT_MODEL": "gemini-2.5-flash"}
    frames: list[dict[str, Any]] = []
    with log.open("w") as err:
        async with spawn_host(env, stderr=err.fileno(), host=command(module="extension_bridge")) as proc:
            peer = Peer(proc)
            for rid in ("a", "b"):
                await peer.send(panel_ask(rid, QUESTION))
                frames += await peer.events_until_end(rid)
    wire = json.dumps(frames, ensure_ascii=False)
    _assert_masked(wire)
    error, done = [f for f in frames if f["type"] in ("done", "error")]
    assert error["type"] == "error" and "refused the key" in error["message"]
    assert done["type"] == "done" and done["answer"].endswith(f"your key is {MASK}, as sent.")
    assert "".join(f["text"] for f in frames if f["type"] == "token") == done["answer"]
    assert KEY not in log.read_text()


# A host with a stand-in answer that fails quoting the key: its frame to the
# extension and its log line (with the traceback) both carry the failure.
FAILING_HOST = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from extension_bridge.host import main

    async def answer(ask, tabs):
        raise RuntimeError("the provider said: bad key " + os.environ["GOOGLE_API_KEY"])
        yield

    raise SystemExit(main(answer))
    """
)


@pytest.mark.asyncio(loop_scope="session")
async def test_the_hosts_error_frame_and_log_line_show_only_the_keys_mask(tmp_path: Path) -> None:
    script = tmp_path / "failing_host.py"
    script.write_text(FAILING_HOST.format(root=str(ROOT)))
    log = tmp_path / "host.txt"
    with log.open("w") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(script), EXTENSION_ORIGIN, env={**os.environ, "GOOGLE_API_KEY": KEY},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err)
        peer = Peer(proc)
        await peer.send(panel_ask("a", QUESTION))
        [error] = await peer.events_until_end("a")
        assert proc.stdin
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
    assert error["type"] == "error" and error["message"].endswith(f"bad key {MASK}")
    logged = log.read_text()
    _assert_masked(logged)
    assert "Traceback" in logged


def test_a_log_line_and_its_traceback_show_only_the_keys_mask() -> None:
    code = textwrap.dedent("""
        import logging, os
        from chatagent.process import setup_logging
        setup_logging(0)
        log = logging.getLogger("chatagent.models")
        log.warning("the provider said: %s", "bad key " + os.environ["GEMINI_API_KEY"])
        try:
            raise RuntimeError("headers: x-goog-api-key=" + os.environ["GEMINI_API_KEY"])
        except RuntimeError:
            log.exception("the request failed")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "GEMINI_API_KEY": KEY})
    assert f"the provider said: bad key {MASK}" in proc.stderr
    assert f"RuntimeError: headers: x-goog-api-key={MASK}" in proc.stderr
    assert KEY not in proc.stderr


def test_a_key_saved_for_another_endpoint_is_masked_too(
    private_settings: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key in the settings file that is not sent (it was saved for another
    endpoint than the one in effect) is still a secret: masked if anything echoes it."""
    from chatagent.scrub import Scrubber
    from chatagent.settings import Settings, set_values

    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    set_values({"gemini_base_url": "http://127.0.0.1:9/", "google_api_key": KEY})
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://example.com")
    settings = Settings.load()
    assert settings.google_api_key is None, "the key is for another endpoint: not used"
    shown = Scrubber.of(settings).text(f"the provider said: {KEY} is not valid")
    assert KEY not in shown and MASK in shown
