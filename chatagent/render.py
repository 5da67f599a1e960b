"""Showing agent events in a terminal (rich) or as JSON lines.

Everything shown comes from pages, URLs or models, so it is untrusted: text
mode sanitizes it and builds rich `Text` objects (never markup strings);
JSON mode keeps the content exact, escaped.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.text import Text

from .events import Done, ErrorEvent, Event, Note, PassStart, Screenshot, Token, ToolCall, ToolResult
from .terminal import json_safe, link, safe_text, sanitize

# Why pass 2 stopped without an answer, for the stop reasons known today;
# any other reason is shown by its name.
_STOP_WHY = {
    "max_turns": "the model used all its turns in the browser",
    "input_budget": "the question's input-token budget was spent",
}


class EventPrinter:
    """Streams the answer to stdout; everything about the answer goes to stderr.

    With `json_mode`, stdout carries exactly one JSON event per line instead.
    After a question, `failed` says it ended in an error (other than the user
    stopping it) and `unanswered` that it ended without an answer.
    """

    def __init__(self, *, json_mode: bool = False, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.json_mode = json_mode
        self.out = out or sys.stdout
        self.console = Console(file=err or sys.stderr, highlight=False, soft_wrap=True)
        self._mid_line = False
        self._streamed: list[str] = []  # this question's tokens, as the model sent them
        self.failed = False
        self.unanswered = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, ErrorEvent) and event.code != "aborted":
            self.failed = True  # an answer the user stopped (Ctrl-C in chat) is not a failure
        if isinstance(event, Done) and event.stop_reason != "answered":
            self.unanswered = True
        if self.json_mode:
            self.out.write(json_safe(event.to_json()) + "\n")
            self.out.flush()
            return
        if isinstance(event, Token):
            self._streamed.append(event.text)
            self._write(sanitize(event.text))
            return
        self._end_line()
        if isinstance(event, PassStart):
            if event.pass_ == 2:
                why = f" ({event.reason})" if event.reason else ""
                self._err(("… looking closer in the browser" + why, "dim"))
        elif isinstance(event, Note):
            where = f"tab {event.tab_id}: " if event.tab_id else ""
            self._err(("note", "yellow"), f" {where}{event.text}")
        elif isinstance(event, ToolCall):
            args = ", ".join(f"{k}={v!r}" for k, v in event.args.items())
            self._err((f"→ {event.name}({args})", "dim"))
        elif isinstance(event, ToolResult):
            mark = ("✓", "green") if event.ok else ("✗", "red")
            self._err(("  ", "dim"), mark, (f" {event.text}", "dim"))
        elif isinstance(event, Screenshot):
            self._err((f"  (screenshot of tab {event.tab_id} taken)", "dim"))
        elif isinstance(event, Done):
            self._done(event)
        elif isinstance(event, ErrorEvent):
            self._streamed.clear()
            self._err(("error", "bold red"), f" ({event.code}): {event.message}")

    def _done(self, done: Done) -> None:
        streamed = "".join(self._streamed)
        self._streamed.clear()
        answer = done.answer.strip()
        if answer and answer not in streamed:
            # Not streamed as tokens (a stop message, say): the reader still sees the ending.
            self._write(sanitize(answer))
            self._end_line()
        if done.cached:
            self._err(("(cached: the same question about the same pages; --no-cache asks again)", "dim"))
        if done.stop_reason == "answered":
            for c in done.citations:  # a non-answer cites nothing
                line = safe_text((f"[Tab {c.tab_id}]", "cyan"), " ")
                if c.title:
                    line.append_text(safe_text(f"{c.title} — "))
                self.console.print(line + link(c.url))
        else:
            why = _STOP_WHY.get(done.stop_reason, "")
            self._err(("no answer", "bold yellow"),
                      f": stopped ({done.stop_reason.replace('_', ' ')}){': ' + why if why else ''} "
                      "before an answer was found.")
        bits = []
        if done.tool_calls:
            bits.append(f"{done.tool_calls} browser tool call{'s' if done.tool_calls != 1 else ''} in pass 2")
        t = done.timings
        if t.first_token_ms is not None:
            bits.append(f"first token {t.first_token_ms:.0f} ms")
        bits.append(f"total {t.total_ms:.0f} ms")
        bits.append(f"{done.usage.input_tokens:,} tokens in / {done.usage.output_tokens:,} out")
        self._err((" · ".join(bits), "dim"))

    def _err(self, *parts: str | tuple[str, str]) -> None:
        self.console.print(safe_text(*parts))

    def _write(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self._mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False
