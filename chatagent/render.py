"""Showing agent events in a terminal (rich) or as JSON lines."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console

from .events import Done, ErrorEvent, Event, Note, PassStart, Screenshot, Token, ToolCall, ToolResult


class EventPrinter:
    """Streams the answer to stdout; everything about the answer goes to stderr.

    With `json_mode`, stdout carries exactly one JSON event per line instead.
    """

    def __init__(self, *, json_mode: bool = False, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.json_mode = json_mode
        self.out = out or sys.stdout
        self.console = Console(file=err or sys.stderr, highlight=False, soft_wrap=True)
        self._mid_line = False
        self.failed = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, ErrorEvent) and event.code != "aborted":
            self.failed = True  # an answer the user stopped (Ctrl-C in chat) is not a failure
        if self.json_mode:
            self.out.write(event.to_json() + "\n")
            self.out.flush()
            return
        if isinstance(event, Token):
            self.out.write(event.text)
            self.out.flush()
            self._mid_line = not event.text.endswith("\n")
            return
        self._end_line()
        if isinstance(event, PassStart):
            if event.pass_ == 2:
                self.console.print(f"[dim]… looking closer in the browser ({event.reason})[/dim]", markup=True)
        elif isinstance(event, Note):
            where = f"tab {event.tab_id}: " if event.tab_id else ""
            self.console.print(f"[yellow]note[/yellow] {where}{_esc(event.text)}")
        elif isinstance(event, ToolCall):
            args = ", ".join(f"{k}={v!r}" for k, v in event.args.items())
            self.console.print(f"[dim]→ {event.name}({_esc(args)})[/dim]")
        elif isinstance(event, ToolResult):
            mark = "[green]✓[/green]" if event.ok else "[red]✗[/red]"
            self.console.print(f"[dim]  {mark} {_esc(event.text)}[/dim]")
        elif isinstance(event, Screenshot):
            self.console.print(f"[dim]  (screenshot of tab {event.tab_id} taken)[/dim]")
        elif isinstance(event, Done):
            self._done(event)
        elif isinstance(event, ErrorEvent):
            self.console.print(f"[bold red]error[/bold red] ({event.code}): {_esc(event.message)}")

    def _done(self, done: Done) -> None:
        if done.cached:
            self.console.print("[dim](cached: the same question about the same pages; --no-cache asks again)[/dim]")
        for c in done.citations:
            title = f"{_esc(c.title)} — " if c.title else ""
            self.console.print(f"[cyan][Tab {c.tab_id}][/cyan] {title}[link={c.url}]{_esc(c.url)}[/link]")
        bits = []
        if done.tool_calls:
            bits.append(f"{done.tool_calls} browser tool call{'s' if done.tool_calls != 1 else ''} in pass 2")
        if done.stop_reason != "answered":
            bits.append(f"stopped: {done.stop_reason.replace('_', ' ')}")
        t = done.timings
        if t.first_token_ms is not None:
            bits.append(f"first token {t.first_token_ms:.0f} ms")
        bits.append(f"total {t.total_ms:.0f} ms")
        bits.append(f"{done.usage.input_tokens:,} tokens in / {done.usage.output_tokens:,} out")
        self.console.print(f"[dim]{' · '.join(bits)}[/dim]")

    def _end_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)
