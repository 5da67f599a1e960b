"""The CLI in a real terminal, as a person uses it: `python -m chatagent` on a
pseudo-terminal, read through a terminal emulator (tests/pty_terminal.py).

Answers are rendered Markdown on a terminal and the model's plain text when
piped; `chat` is a prompt with line editing, history and commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator

import pytest

from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.gemini_server import FunctionCall, FunctionCallReply, GeminiServer, RecordedRequest, Reply, TextReply

from conftest import ROOT, Site
from pty_terminal import Terminal
from warm_start import command

pytestmark = pytest.mark.e2e

MARKDOWN = """## Answer

The **Aurora X14 Pro** costs **€79.90** [Tab 1]; the tool is screenshot\\_tool, the chord Cm<sup>M7</sup>.

| item | price |
|---|---|
| Laptop | $1,349.00 |
| Sleeve | $39.00 |

```python
print("hi")
```"""


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Terminals a test opens; whatever is still running at the end is stopped."""
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def page_context(req: RecordedRequest) -> str:
    return "".join(p.get("text", "") for p in req.contents[0]["parts"])


def test_an_answer_is_rendered_markdown_on_a_terminal_and_the_plain_reply_when_piped(
    gemini: GeminiServer, site: Site, terminals: list[Terminal]
) -> None:
    gemini.enqueue(TextReply(text=MARKDOWN), TextReply(text=MARKDOWN))
    args = ("ask", site.url("product"), "-q", "How much is it?", "--model", "gemini-2.5-flash")
    term = Terminal(*args, env=gemini.env())
    terminals.append(term)
    assert term.wait_exit() == 0
    screen = term.text()
    lines = screen.splitlines()
    assert "Answer" in lines and "##" not in screen, "a heading, without its hashes"
    assert "The Aurora X14 Pro costs €79.90 [Tab 1]" in screen and "**" not in screen, "bold, without asterisks"
    assert "screenshot_tool" in screen and "\\_" not in screen, "escapes undone"
    assert "Cm^M7" in screen and "<sup>" not in screen, "no HTML tags"
    assert re.search(r"│ Laptop +│ \$1,349\.00 +│", screen) and "╭" in screen and "|---|" not in screen, "a drawn table"
    assert 'print("hi")' in screen and "```" not in screen
    assert "[Tab 1] Aurora X14 Pro" in screen and "first token" in screen, "the citation and timings still follow"

    env = {**os.environ, "PYTHONPATH": str(ROOT), **gemini.env()}
    piped = subprocess.run(command(*args), cwd=ROOT, env=env, capture_output=True,
                           timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (MARKDOWN + "\n").encode(), "piped, the reply exactly as the model wrote it"


def test_clear_typed_alone_forgets_the_conversation_and_never_reaches_the_model(
    gemini: GeminiServer, site: Site, terminals: list[Terminal]
) -> None:
    term = Terminal("chat", site.url("product"), "--model", "gemini-2.5-flash", env=gemini.env())
    terminals.append(term)
    screen = " ".join(term.wait_for_prompt(1).split())  # as read: wherever the line wraps
    assert "Commands: /open, /tabs, /close, /model, /clear, /help, /quit" in screen, "the first line lists them"

    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."), TextReply(text="A laptop [Tab 1]."))
    term.line("How much does the laptop cost?")
    term.wait_for_prompt(2)
    term.line("clear")
    screen = term.wait_for_prompt(3)
    assert "Cleared: the conversation so far is forgotten; the tabs stay open." in screen[screen.rindex("› clear"):]
    term.line("What is it?")
    term.wait_for_prompt(4)
    term.press("ctrl-d")
    assert term.wait_exit() == 0
    first, second = gemini.generate_requests  # "clear" was not a question
    assert second.last_user_text() == "What is it?" and "How much" not in str(second.contents), "forgotten"
    assert not any("clear" == r.last_user_text() for r in gemini.generate_requests)


def test_browser_tools_are_said_in_words_as_the_side_panel_says_them(site: Site, terminals: list[Terminal]) -> None:
    calls = [FunctionCall("refresh_browser_state_tool", {"tab_id": "1"}),
             FunctionCall("scroll_tool", {"tab_id": "1", "direction": "down"}),
             FunctionCall("screenshot_tool", {})]

    def respond(request: RecordedRequest) -> Reply:
        if not request.tool_names():
            return TextReply(text=f"{ESCALATION_MARKER} the page must be looked at")
        turn = str(request.contents).count("functionResponse")  # tool results so far
        return FunctionCallReply(calls=[calls[turn]]) if turn < len(calls) else TextReply(text="It is $1,349.00 [Tab 1].")

    with GeminiServer(ttft_s=0.0, tokens_per_s=None, responder=respond) as gemini:
        term = Terminal("ask", site.url("product"), "-q", "How much is it?", "--model", "gemini-2.5-flash",
                        env=gemini.env())
        terminals.append(term)
        assert term.wait_exit() == 0
    screen = term.text()
    assert "→ Reading Tab 1 again…" in screen and "→ Scrolling down Tab 1…" in screen
    assert "→ Looking at the tab…" in screen, "a call that names no tab (one is open)"
    assert "_tool" not in screen and "tab_id=" not in screen, "no function-call syntax"


def test_chat_commands_on_a_terminal(gemini: GeminiServer, site: Site, terminals: list[Terminal]) -> None:
    term = Terminal("chat", site.url("product"), env=gemini.env())  # the offline model until /model
    terminals.append(term)
    term.wait_for_prompt(1)

    term.line("/help")
    screen = term.wait_for_prompt(2)
    for usage in ("/open URL", "/tabs", "/close N", "/model [NAME]", "/clear", "/new", "/help", "/quit"):
        assert usage in screen

    term.line(f"/open {site.url('two_a')}")
    screen = term.wait_for_prompt(3)
    assert f"[Tab 2] Port Averly — City guide — Coastal Towns Atlas — {site.url('two_a')}" in screen

    term.line("/tabs")
    screen = term.wait_for_prompt(4)
    listed = screen[screen.rindex("› /tabs"):]
    assert "[Tab 1] Aurora X14 Pro" in listed and "[Tab 2] Port Averly" in listed

    term.line("When was Port Averly founded?")
    screen = term.wait_for_prompt(5)
    assert "1648" in screen[screen.rindex("› When was"):], "the opened tab answers"

    term.line("/close 1")
    screen = term.wait_for_prompt(6)
    assert "Closed tab 1." in screen
    term.line("/tabs")
    screen = term.wait_for_prompt(7)
    listed = screen[screen.rindex("› /tabs"):]
    assert "[Tab 2] Port Averly" in listed and "Tab 1" not in listed

    term.line("/frobnicate the pages")
    screen = term.wait_for_prompt(8)
    assert "Unknown command /frobnicate: /help lists the commands." in screen

    term.line("/model gemini-2.5-flash")
    screen = term.wait_for_prompt(9)
    assert "Model: gemini-2.5-flash, from the next question on." in screen
    gemini.enqueue(TextReply(text="It was founded in **1648** [Tab 2]."))
    term.line("When was it founded?")
    screen = term.wait_for_prompt(10)
    assert "It was founded in 1648 [Tab 2]." in screen, "the new model answers, rendered"
    (first,) = gemini.generate_requests
    assert first.last_user_text() == "When was it founded?"
    assert "founded in 1648" in page_context(first) and "Aurora" not in page_context(first), "tab 1 was closed"
    assert "When was Port Averly founded?" in str(first.contents), "the conversation goes on across models"

    term.line("/new")
    screen = term.wait_for_prompt(11)
    assert "the conversation so far is forgotten" in screen
    gemini.enqueue(TextReply(text="About 182,400 people [Tab 2]."))
    term.line("How many people live there?")
    term.wait_for_prompt(12)
    second = gemini.generate_requests[-1]
    assert second.last_user_text() == "How many people live there?"
    assert "founded" not in str(second.contents[1:]), "the earlier questions are forgotten"
    assert not any("frobnicate" in str(r.contents) for r in gemini.requests), "a command never reaches the model"

    # Ctrl-C stops the answer being written, and the prompt comes back.
    gemini.enqueue(TextReply(text="This answer takes its time.", ttft_s=60))
    term.line("Is it by the sea?")
    term.wait_for(lambda _: len(gemini.generate_requests) == 3)
    term.press("ctrl-c")
    screen = term.wait_for_prompt(13)
    assert "(stopped)" in screen[screen.rindex("› Is it by the sea?"):]

    term.press("ctrl-d")
    assert term.wait_exit() == 1, "a command failed (the unknown one)"


def test_up_arrow_recalls_a_question_and_keys_typed_while_pages_open_wait_for_the_prompt(
    site: Site, terminals: list[Terminal]
) -> None:
    term = Terminal("chat", site.url("product"), site.url("two_a"))
    terminals.append(term)
    term.wait_for(lambda text: "Opening pages" in text or "› " in text)  # the spinner, unless it was quicker
    term.type("How much is the laptop?")
    screen = term.wait_for("› How much is the laptop?")
    before_prompt = term.raw[: term.raw.index("›".encode())]
    assert b"How much" not in before_prompt, "typed while the pages opened: not echoed on the spinner's line"
    assert screen.count("How much is the laptop?") == 1
    term.press("enter")
    term.wait_for_prompt(2)

    term.press("up")
    screen = term.wait_for(lambda text: text.splitlines()[-1] == "› How much is the laptop?")
    term.press("enter")
    screen = term.wait_for_prompt(3)
    assert screen.count("Volta Computers):\n\n$1,349.00") == 2, "asked again"
    assert "(cached: the same question about the same pages" in screen
    term.press("ctrl-d")
    assert term.wait_exit() == 0
    assert term.cooked(), "the terminal is left as it was found"


# A passage whose words carry bidi overrides: they survive Chromium and extraction.
CITED_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Ferry notes</title></head>
<body><h1>Ferry notes</h1><p>Boats to Osterholm leave pier 3 every hour.</p>
<p>Tickets cost 12 EUR at the kiosk on the pier, cash only \u202e(no cards)\u202c.</p></body></html>"""


def test_cited_passages_are_numbered_sources_under_the_answer(
    gemini: GeminiServer, site: Site, terminals: list[Terminal], tmp_path,
) -> None:
    page = tmp_path / "ferry_notes.html"
    page.write_text(CITED_PAGE, encoding="utf-8")

    def reply(request: RecordedRequest) -> TextReply:
        ids = {words: re.search(rf"\[(\d+\.\d+)\] [^\n]*{words}", request.text()).group(1)  # type: ignore[union-attr]
               for words in ("Boats to", "Tickets cost")}
        return TextReply(text=f"Boats leave every hour [{ids['Boats to']}] and tickets are 12 EUR, cash only "
                              f"[{ids['Tickets cost']}][1.77].")

    gemini.responder = reply
    term = Terminal("ask", str(page), site.url("coastal_bus"), "-q", "How do I get there?", "--model",
                    "gemini-2.5-flash", env=gemini.env())
    terminals.append(term)
    assert term.wait_exit() == 0
    screen = " ".join(term.text().split())
    assert "1. [1.1] Tab 1 · Ferry notes “Boats to Osterholm leave pier 3 every hour.”" in screen, screen
    # The quote is the page's words as it writes them, so not the part it writes with direction
    # overrides (which the terminal never shows); its link opens the page at them.
    assert "2. [1.2] Tab 1 · Ferry notes “Tickets cost 12 EUR at the kiosk on the pier, cash only”" in screen
    links = re.findall(rb"\x1b]8;[^;\x1b]*;([^\x1b]+)\x1b\\", term.raw)
    assert any(u.startswith(f"{page.as_uri()}#:~:text=Tickets%20cost%2012%20EUR".encode()) for u in links), links
    assert " 3. [" not in screen and "[1.77] Tab" not in screen, "an id naming no passage is no source"
    assert "\u202e".encode() not in term.raw and "\u202c".encode() not in term.raw


def test_a_tab_given_as_an_overview_says_so_among_the_sources(
    gemini: GeminiServer, site: Site, terminals: list[Terminal],
) -> None:
    """Asked for the gist of a long handbook, the model is given an overview of it: the
    sources under the answer say so beside the tab, once, whether the answer cites the tab
    or only passages of it; `--json`'s done carries it typed. A page read for a fact does not."""
    guide = site.url("orchard_guide")

    def reply(request: RecordedRequest) -> TextReply:
        if "bare-root" in request.last_user_text():
            return TextReply(text="Between November and March [Tab 1].")
        found = re.search(r"\[(\d+\.\d+)\] [^\n]*first orchard in the Marren Valley", request.text())
        assert found, request.text()[:2000]
        return TextReply(text=f"A growers' handbook for heritage apples; the valley's orchards go back to 1712 [{found.group(1)}].")

    gemini.responder = reply
    args = ("ask", guide, "-q", "What is the gist of it?", "--model", "gemini-2.5-flash")
    term = Terminal(*args, env=gemini.env(), columns=220)
    terminals.append(term)
    assert term.wait_exit() == 0
    screen = term.text()
    [tab_line] = [line.strip() for line in screen.splitlines() if line.strip().startswith("[Tab 1]")]
    assert re.fullmatch(
        rf"\[Tab 1\] The Marren Valley orchard handbook — growing heritage apples — {re.escape(guide)}"
        r" · overview of the whole page: (\d+ of \d+|all \d+) parts", tab_line), tab_line
    assert " 1. [1." in screen and "Tab 1 · The Marren Valley orchard handbook" in screen, "its passage is listed too"

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **gemini.env()}
    piped = subprocess.run(command(*args, "--json"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    done = json.loads(piped.stdout.strip().splitlines()[-1])
    [overview] = done["overviews"]
    assert overview["tab_id"] == "1" and overview["url"] == guide and overview["scope"] == "whole"
    assert f"{overview['parts_shown']} of {overview['parts']} parts" in tab_line or f"all {overview['parts']} parts" in tab_line

    fact = subprocess.run(command("ask", guide, "-q", "When should bare-root trees be planted?", "--model",
                                  "gemini-2.5-flash"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert fact.returncode == 0, fact.stderr
    assert "[Tab 1] The Marren Valley orchard handbook" in fact.stderr and "overview" not in fact.stderr
