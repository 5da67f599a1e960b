"""What a page, a URL or a model sends cannot crash the CLI or drive the
terminal; every ending is shown and has its exit status; a browser that cannot
be started or attached to is one clear error line.

Run as a user would: `python -m chatagent` subprocesses against pages served on
127.0.0.1 in the real Chromium, with the offline model or the real Gemini
client against the local Gemini-compatible server."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.gemini_server import FunctionCall, FunctionCallReply, GeminiServer, RecordedRequest, Reply, TextReply

from conftest import ROOT, Site
from pty_terminal import Terminal
from warm_start import command

pytestmark = pytest.mark.e2e

MARKUP_QUERY = "?x=[/link]&y=[bold]z[/bold]"
MARKUP_PAGE = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Ferry [bold]times[/bold]</title></head>
<body><h1>Harbour notes</h1><p>The ferry to Nordholm leaves at 9:40 from pier 3 every weekday.</p>
<p>The ferry back leaves Nordholm at 17:15 from the north quay.</p>
<script>history.replaceState(null, "", "/markup.html{MARKUP_QUERY}")</script></body></html>"""
# Chromium drops C0/C1 controls from titles and extraction drops them from text,
# but bidi overrides survive both.
BIDI_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Plain</title></head>
<body><h1>Harbour notes</h1><p>The ferry to Nordholm leaves at 9:40 from pier 3 every weekday.</p>
<script>document.title = "Tickets \\u202etxt.exe\\u202c here";
const p = document.createElement("p");
p.textContent = "Tickets cost 12 EUR at the \\u2066kiosk\\u2069 \\u202eon the pier\\u202c, cash only.";
document.body.appendChild(p);</script></body></html>"""
# The orchard handbook (long: given as an overview for a summary) under a title with markup and bidi overrides.
LONG_BIDI_PAGE = (ROOT / "fixtures" / "pages" / "orchard_guide.html").read_text("utf-8").replace(
    "</body>", '<script>document.title = "Orchard [bold]notes[/bold] \\u202etxt.exe\\u202c";</script></body>')
# An answer that would set the clipboard (OSC 52), clear the screen, and more.
EVIL = ("The gate is B12\x1b]52;c;ZXZpbA==\x07 [Tab 1].\x1b[2J\x1b[H Board\r closes\x9b31m at 9:40"
        "\x7f \u202egnirts\u202c \u2066ok\u2069\x08.")
UNSAFE = [chr(c) for c in (*range(0, 9), *range(11, 32), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                           *range(0x2066, 0x206A))]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The hostile pages, served on 127.0.0.1 (same-origin history.replaceState needs http)."""
    root = tmp_path_factory.mktemp("pages")
    (root / "markup.html").write_text(MARKUP_PAGE)
    (root / "bidi.html").write_text(BIDI_PAGE)
    (root / "long_bidi.html").write_text(LONG_BIDI_PAGE)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        gemini: GeminiServer | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m chatagent ARGS` (from this checkout), offline model unless `gemini` is given."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    full_env.pop("GOOGLE_API_KEY", None)
    if gemini is not None:
        full_env.update(gemini.env())
        args = (*args, "--model", "gemini-2.5-flash")
    return subprocess.run(command(*args), cwd=ROOT, env=full_env, input=stdin,
                          capture_output=True, text=True, encoding="utf-8", timeout=110)


def assert_clean(proc: subprocess.CompletedProcess[str]) -> None:
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both and "internal error" not in both and "never retrieved" not in both, proc.stderr
    bad = sorted({f"U+{ord(c):04X}" for c in both if c in UNSAFE})
    assert not bad, f"raw control characters reached the terminal: {bad}"


# --- Rich markup in data is shown, never parsed -------------------------------------------


def test_ask_shows_a_url_with_markup_literally(pages: str) -> None:
    proc = run("ask", f"{pages}/markup.html", "-q", "When does the ferry leave for Nordholm?")
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "9:40" in proc.stdout
    assert f"{pages}/markup.html{MARKUP_QUERY}" in proc.stderr, "the citation shows the URL as it is"
    assert "Ferry [bold]times[/bold]" in proc.stderr, "and the title"


def test_chat_survives_a_url_with_markup_and_answers_the_next_question(pages: str) -> None:
    proc = run("chat", f"{pages}/markup.html",
               stdin="When does the ferry leave for Nordholm?\nWhen does the ferry back leave?\n")
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "9:40" in proc.stdout and "17:15" in proc.stdout
    assert proc.stderr.count(f"{pages}/markup.html{MARKUP_QUERY}\n") == 2, "a whole-tab citation a question"


def test_a_pass_2_reason_with_markup_is_shown_literally(site: Site) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=50) as gemini:
        gemini.enqueue(TextReply(text=f"{ESCALATION_MARKER} the price is in a [bold]picture[/dim]"),
                       TextReply(text="The Aurora X14 Pro costs $1,349.00 [Tab 1]."))
        proc = run("ask", site.url("product"), "-q", "How much is the laptop?", gemini=gemini)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "looking closer in the browser (the price is in a [bold]picture[/dim])" in proc.stderr
    assert "$1,349.00" in proc.stdout


def test_context_strips_bidi_overrides_from_titles_and_text(pages: str) -> None:
    proc = run("context", f"{pages}/bidi.html")
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "Tickets txt.exe here" in proc.stdout and "at the kiosk on the pier, cash only" in proc.stdout
    data = run("context", f"{pages}/bidi.html", "--json")
    assert data.returncode == 0, data.stderr
    assert not set(data.stdout) & set(UNSAFE), "JSON escapes them"
    (tab,) = json.loads(data.stdout)["tabs"]
    assert tab["title"] == "Tickets \u202etxt.exe\u202c here", "and keeps them exactly"


def test_a_tab_given_as_an_overview_is_named_by_its_title_shown_literally_and_cleanly(pages: str) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=2) as gemini:
        gemini.enqueue(TextReply(text="A handbook for apple growers [Tab 1]."))
        proc = run("ask", f"{pages}/long_bidi.html", "-q", "tl;dr?", gemini=gemini)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert re.search(rf"^\[Tab 1\] Orchard \[bold\]notes\[/bold\] txt\.exe — {re.escape(pages)}/long_bidi\.html"
                     r" · overview of the whole page: (\d+ of \d+|all \d+) parts$", proc.stderr, re.M), proc.stderr


# --- a model's answer cannot drive the terminal -----------------------------------------------


def test_escape_sequences_in_an_answer_never_reach_the_terminal(site: Site) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=2) as gemini:
        gemini.enqueue(TextReply(text=EVIL))
        proc = run("ask", site.url("product"), "-q", "Which gate?", gemini=gemini)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    assert "The gate is B12]52;c;ZXZpbA== [Tab 1].[2J[H Board closes31m at 9:40 gnirts ok." in proc.stdout


def test_json_keeps_the_answer_exact_and_escaped(site: Site) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=2) as gemini:
        gemini.enqueue(TextReply(text=EVIL))
        proc = run("ask", site.url("product"), "-q", "Which gate?", "--json", gemini=gemini)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "token") == EVIL
    assert events[-1]["type"] == "done" and events[-1]["answer"] == EVIL.strip()


def test_log_records_on_stderr_carry_no_control_characters() -> None:
    code = ("import logging; from chatagent.process import setup_logging; setup_logging(0); "
            "logging.getLogger('chatagent.browser').warning('tab %s failed', 'Evil\\x1b]52;c;eA==\\x07\\u202e title')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert "tab Evil]52;c;eA== title failed" in proc.stderr
    assert_clean(proc)


@given(st.text())
def test_sanitize_removes_exactly_the_unsafe_characters(text: str) -> None:
    from chatagent.terminal import sanitize

    assert sanitize(text) == "".join(c for c in text if c not in UNSAFE)


@given(st.text())
def test_json_safe_leaves_no_unsafe_character_and_decodes_to_the_same_text(text: str) -> None:
    from chatagent.terminal import json_safe

    line = json_safe(json.dumps({"text": text}, ensure_ascii=False))
    assert not set(line) & set(UNSAFE) and json.loads(line) == {"text": text}


# --- answers rendered as Markdown on a terminal ----------------------------------------------

# What an answer may carry to get past the sanitising once it is parsed as
# Markdown: entities that decode to controls, links that would become OSC 8
# hyperlinks (one with an escape sequence in its target), images that a
# renderer might fetch, raw HTML.
HOSTILE_MARKDOWN = """## Gate

The gate is **B12**\x1b]52;c;ZXZpbA==\x07 [Tab 1].\x1b[2J

Entities: &#x1b;[31mred &#x9b;31m &#x202e;gnirts&#x202c; line&#13;over &#x85;end

[click here](http://evil.example/\x1b]8;;http://other\x1b\\/x) and [js](javascript:alert(1)) and <{base}/auto>

![tracker]({base}/pixel.png) <img src="{base}/img.png"> <script>alert(1)</script>

<div onclick="x()">raw <b>html</b> block</div>

<script>
steal()
</script>
"""
MARKDOWN_BITS = st.sampled_from([
    *"ab1 \n\t|-*_`#>[]()<>!&;:/\\~=+.", *UNSAFE, "<br>", "</kbd>", "<kbd>", "<sup>", "&#13;", "&#x202e;", "&#x85;",
    "&#27;", "```", "| a | b |\n|---|---|\n", "<div>", "</div>", "http://x", "](", "<https://q>", "![a](b)", "1. ",
    "- ", "&amp;", "[t](http://x/\x1b]8;;y\x1b\\)",
])


class _Recorder(SimpleHTTPRequestHandler):
    paths: ClassVar[list[str]] = []  # every request made to it

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self.send_error(404)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@given(st.lists(MARKDOWN_BITS, max_size=40).map("".join))
def test_markdown_rendering_lets_no_unsafe_character_through(text: str) -> None:
    from rich.console import Console

    from chatagent.safe_markdown import SafeMarkdown

    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system="truecolor", width=60).print(SafeMarkdown(text))
    data = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # rich's own colours; nothing else may remain
    assert not set(data) & set(UNSAFE), repr(data)


def test_a_hostile_markdown_answer_is_inert_on_a_terminal(site: Site) -> None:
    fetcher = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=fetcher.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{fetcher.server_address[1]}"
    term = None
    try:
        with GeminiServer(ttft_s=0.0, tokens_per_s=None, tokens_per_chunk=3) as gemini:
            gemini.enqueue(TextReply(text=HOSTILE_MARKDOWN.format(base=base)))
            term = Terminal("ask", site.url("product"), "-q", "Which gate?", "--model", "gemini-2.5-flash",
                            env=gemini.env())
            assert term.wait_exit() == 0
    finally:
        if term is not None:
            term.close()
        fetcher.shutdown()
        fetcher.server_close()
    raw, screen = term.raw, term.text()
    # The one OSC sequence: the citation's own link (OSC 8), which ends where its URL does.
    links = re.findall(rb"\x1b]8;[^;\x1b]*;([^\x1b]*)\x1b\\", raw)
    assert set(links) == {site.url("product").encode(), b""}, links
    assert raw.count(b"\x1b]") == len(links), "no other OSC sequence: no clipboard, no hyperlink from the answer"
    assert b"\x1b[2J" not in raw and "\u202e".encode() not in raw and "\x9b".encode() not in raw
    assert "\x85".encode() not in raw and not any(c in raw for c in b"\x07\x08\x00"), "no C0 or C1 controls"
    assert "The gate is B12]52;c;ZXZpbA== [Tab 1].[2J" in screen
    assert "click here (http://evil.example/" in screen, "a link shows where it goes"
    assert "[js](javascript:alert(1))" in screen, "not a link"
    assert "[image: tracker]" in screen and _Recorder.paths == [], "images are described, never fetched"
    assert "raw html block" in screen and "<script>" not in screen and "<div" not in screen and "steal" not in screen


# --- endings that say nothing ------------------------------------------------------------------


def _never_answers(request: RecordedRequest) -> Reply:
    if request.tool_names():
        return FunctionCallReply(calls=[FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"})])
    return TextReply(text=f"{ESCALATION_MARKER} the answer is further down")


def test_a_pass_2_stop_without_an_answer_is_printed_and_exits_3(site: Site) -> None:
    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=_never_answers) as gemini:
        proc = run("ask", site.url("article"), "-q", "What is on the last line?", gemini=gemini)
    assert proc.returncode == 3, proc.stderr
    assert_clean(proc)
    assert proc.stdout.strip(), "the ending is on stdout, where the answer would be"
    assert "no answer: stopped (" in proc.stderr and "before an answer was found" in proc.stderr


def test_chat_exits_3_when_a_question_went_unanswered(site: Site) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if "tell me the truth" in request.last_user_text():
            return TextReply(text="It is a long article [Tab 1].")
        return _never_answers(request)

    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=respond) as gemini:
        proc = run("chat", site.url("article"), "--json", gemini=gemini,
                   stdin="What is on the last line?\nPlease tell me the truth?\n")
    assert_clean(proc)
    ends = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] in ("done", "error")]
    assert [e["type"] for e in ends] == ["done", "done"]
    assert ends[0]["stop_reason"] != "answered" and ends[1]["stop_reason"] == "answered"
    assert proc.returncode == 3, "no question failed, one ended without an answer"


# --- no tracebacks after a clear error -----------------------------------------------------------


@pytest.mark.parametrize("command", ["ask", "chat"])
@pytest.mark.parametrize("case", ["cdp", "browser"])
def test_a_browser_that_cannot_start_is_one_clear_error(command: str, case: str, closed_port_url: str,
                                                         tmp_path: Path) -> None:
    question = ["-q", "x"] if command == "ask" else []
    if case == "cdp":
        cdp = closed_port_url.rstrip("/")
        proc = run(command, "--cdp", cdp, *question, stdin="x\n")
        # What happened and what to do, with the port given: not Playwright's ECONNREFUSED, nor another port.
        says = (f"Nothing is listening at {cdp}: start Chrome with --remote-debugging-port={cdp.rsplit(':', 1)[1]}, "
                "or leave out --cdp.")
    else:
        proc = run(command, str(Site.path("article")), *question, stdin="x\n",
                   env={"CHATAGENT_BROWSER": str(tmp_path / "nonexistent")})
        says = "CHATAGENT_BROWSER"
    assert proc.returncode == 1
    assert says in proc.stderr
    assert_clean(proc)
    assert proc.stderr.strip().count("\n") == 0, f"one line, nothing after it: {proc.stderr}"
