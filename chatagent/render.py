"""Showing agent events in a terminal (rich) or as JSON lines.

Everything shown comes from pages, URLs or models, so it is untrusted: text
mode sanitizes it and builds rich `Text` objects (never markup strings);
JSON mode keeps the content exact, escaped. On a terminal the answer is shown
as Markdown (`safe_markdown.SafeMarkdown`) while it streams; piped, it is the plain
text the model sent. In both, the configured keys and tokens are masked
(`scrub`): a provider's error may echo them.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.spinner import Spinner

from . import startup
from .events import (
    Citation, Done, ErrorEvent, Event, Note, PassStart, Screenshot, TabShare, Token, ToolCall, ToolResult, percent,
)
from .scrub import EventStream, Scrubber
from .terminal import json_safe, link, safe_text, sanitize

SOURCE_QUOTE_CHARS = 300  # of a quote shown under the answer
# Why pass 2 stopped without an answer, for the stop reasons known today;
# any other reason is shown by its name.
_STOP_WHY = {
    "max_turns": "the model used all its turns in the browser",
    "input_budget": "the question's input-token budget was spent (--input-budget allows more)",
    "window": "another step would not fit the model's window (--context-window, if it runs with more)",
}


def _is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal that can redraw lines (not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and not Console(file=stream, force_terminal=True).is_dumb_terminal


async def show(events: AsyncIterator[Event], *, json_mode: bool, scrubber: Scrubber) -> "EventPrinter":
    """Print one question's events as they come, `scrubber`'s secrets masked;
    the printer says how it ended."""
    printer = EventPrinter(json_mode=json_mode, scrubber=scrubber)
    printer.start()
    try:
        async for event in events:
            startup.over()  # the answer has begun: so has the command (chatagent/startup.py)
            printer(event)
    finally:
        printer.close()  # also when stopped midway: the cursor comes back, the partial answer stays
    return printer


class EventPrinter:
    """Streams the answer to stdout; everything about the answer goes to stderr.

    With `json_mode`, stdout carries exactly one JSON event per line instead.
    With `markdown` (default: when stdout is a terminal) the answer is rendered
    as it streams. Either way the secrets of `scrubber` are masked in every
    event (`scrub.EventStream`). After a question, `failed` says it ended in an
    error (other than the user stopping it) and `unanswered` that it ended
    without an answer.
    """

    def __init__(self, *, scrubber: Scrubber, json_mode: bool = False, out: TextIO | None = None,
                 err: TextIO | None = None, markdown: bool | None = None) -> None:
        self._scrubbed = EventStream(scrubber)
        self.json_mode = json_mode
        self.out = out or sys.stdout
        self.console = Console(file=err or sys.stderr, highlight=False, soft_wrap=True)
        if markdown is None:
            markdown = not json_mode and _is_terminal(self.out)
        self._live = _LiveAnswer(Console(file=self.out, highlight=False)) if markdown else None
        self._mid_line = False
        self._streamed: list[str] = []  # this question's tokens, as the model sent them
        self.failed = False
        self.unanswered = False

    def __call__(self, event: Event) -> None:
        for shown in self._scrubbed(event):
            self._show(shown)

    def _show(self, event: Event) -> None:
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
            if self._live is not None:
                self._live.add(event.text)
            else:
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
            self._err((f"→ {event.words}", "dim"))
        elif isinstance(event, ToolResult):
            mark = ("✓", "green") if event.ok else ("✗", "red")
            self._err(("  ", "dim"), mark, (f" {event.text}", "dim"))
        elif isinstance(event, Screenshot):
            pass  # its tool's result line ("✓ screenshot of tab 1") says so already
        elif isinstance(event, Done):
            self._done(event)
        elif isinstance(event, ErrorEvent):
            self._streamed.clear()
            if event.code == "aborted":  # the user asked for it: not an error to them
                self._err(("(stopped)", "dim"))
            else:
                self._err(("error", "bold red"), f" ({event.code}): {event.message}")
        if self._live is not None and not isinstance(event, (Done, ErrorEvent)):
            self._live.wait()  # more is coming: a spinner until it does

    def start(self) -> None:
        """The question was sent: on a terminal, a spinner until the answer starts."""
        if self._live is not None:
            self._live.wait()

    def close(self) -> None:
        """The question ended (or was stopped): end what is on screen."""
        for shown in self._scrubbed.end():
            self._show(shown)
        self._end_line()

    def _done(self, done: Done) -> None:
        streamed = "".join(self._streamed)
        self._streamed.clear()
        answer = done.answer.strip()
        if answer and answer not in streamed:
            # Not streamed as tokens (a stop message, say): the reader still sees the ending.
            if self._live is not None:
                self._live.add(answer)
            else:
                self._write(sanitize(answer))
            self._end_line()
        if done.cached:
            self._err(("(cached: the same question about the same pages; --no-cache asks again)", "dim"))
        if done.truncated:  # the note said where it was cut
            self._err(("(`chatagent config set max_answer_tokens N` allows longer answers)", "dim"))
        if done.stop_reason == "answered":
            self._tabs(done)
            self._sources([c for c in done.citations if c.block])
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
            bits.append(f"first token {t.first_token_ms:,.0f} ms")
        bits.append(f"total {t.total_ms:,.0f} ms")
        counted = " (counted: the server reported none)" if done.usage.counted else ""
        bits.append(f"{done.usage.input_tokens:,} tokens in / {done.usage.output_tokens:,} out{counted}")
        if given := _given(done.shares):
            bits.append(given)
        self._err((" · ".join(bits), "dim"))

    def _tabs(self, done: Done) -> None:
        """The whole tabs the answer cites, and those it cites passages of that it was given as an
        overview of the page (what it says of them comes from a digest, not from all of it), each
        once: "[Tab 1] Title — url · overview of the whole page: 8 of 14 parts". A tab it does not
        cite is no source, overview or not."""
        overviews = {o.tab_id: o for o in done.overviews}
        whole = [c for c in done.citations if not c.block]  # a non-answer cites nothing
        tabs: list[tuple[str, str, str]] = [(c.tab_id, c.title, c.url) for c in whole]
        quoted = {c.tab_id for c in done.citations if c.block} - {c.tab_id for c in whole}
        tabs += [(o.tab_id, o.title, o.url) for o in done.overviews if o.tab_id in quoted]
        for tab_id, title, url in tabs:
            line = safe_text((f"[Tab {tab_id}]", "cyan"), " ")
            if title:
                line.append_text(safe_text(f"{_one_line(title)} — "))
            line += link(url)
            if tab_id in overviews:
                line.append_text(safe_text((f" · {overviews[tab_id].in_words()}", "yellow")))
            self.console.print(line)

    def _sources(self, passages: list[Citation]) -> None:
        """The passages the answer cites, numbered: its id and tab, the page's title,
        the quoted words and the link that opens the page at them."""
        for n, c in enumerate(passages, 1):
            head = safe_text(f"{n:>2}. ", (f"[{c.block}]", "cyan"), f" Tab {c.tab_id}")
            if c.title:
                head.append_text(safe_text(f" · {_one_line(c.title)}"))
            self.console.print(head)
            self.console.print(safe_text("    ", (f"“{_shortened(_one_line(c.quote))}”", "italic")))
            self.console.print(safe_text("    ") + link(c.url, "dim"))

    def _err(self, *parts: str | tuple[str, str]) -> None:
        self.console.print(safe_text(*parts))

    def _write(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self._mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._live is not None:
            self._live.end()
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


SHARES_LISTED = 3  # cut tabs named one by one; more are said as a range


def _given(shares: list[TabShare]) -> str:
    """What the model read of the tabs it was not given whole: "tab 2: 14% of its text", or for
    many, "7 tabs cut to fit: 3% to 41% of their text"; empty when every tab went whole."""
    cut = [s for s in shares if not s.whole]
    if len(cut) <= SHARES_LISTED:
        return ", ".join(f"tab {s.tab_id}: {s.in_words()}" for s in cut)
    pcts = sorted(s.share for s in cut if not s.title_only)
    titles = len(cut) - len(pcts)
    if not pcts:
        return f"{len(cut)} tabs cut to fit: title only"
    only = f", {titles} of them title only" if titles else ""
    span = percent(pcts[0]) if percent(pcts[0]) == percent(pcts[-1]) else f"{percent(pcts[0])} to {percent(pcts[-1])}"
    return f"{len(cut)} tabs cut to fit: {span} of their text{only}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shortened(quote: str) -> str:
    """A long quote as its first SOURCE_QUOTE_CHARS characters, cut at a space (`--json` carries it whole)."""
    if len(quote) <= SOURCE_QUOTE_CHARS:
        return quote
    return quote[:SOURCE_QUOTE_CHARS].rsplit(" ", 1)[0] + " …"


class _LiveAnswer:
    """The answer as rendered Markdown while it streams, redrawn in place (the
    last screenful of it), then printed whole once a part of it is complete.
    Waiting for it, a spinner."""

    def __init__(self, console: Console) -> None:
        from .safe_markdown import SafeMarkdown  # markdown-it: only where the answer is rendered

        self._markdown = SafeMarkdown
        self.console = console
        self.text = ""
        self._live: Live | None = None
        self._spinner = Spinner("dots", style="dim")

    def wait(self) -> None:
        """Show the live view (a spinner until there is text)."""
        if self._live is None:
            self._live = Live(_Tail(self), console=self.console, transient=True, refresh_per_second=12,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)

    def add(self, text: str) -> None:
        first = not self.text
        self.text += text
        if self._live is None:
            self.wait()
        elif first:
            self._live.refresh()  # the first token at once, not at the next tick

    def end(self) -> None:
        if self._live is not None:
            self._live.stop()  # transient: the live view is erased...
            self._live = None
        if self.text.strip():
            self.console.print(self._markdown(self.text))  # ...and the whole part printed for good
        self.text = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._spinner if not self.text else self._markdown(self.text)


class _Tail:
    """The last lines of `answer` that fit on the screen: Live cannot scroll."""

    def __init__(self, answer: _LiveAnswer) -> None:
        self.answer = answer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.answer, options.update(height=None), pad=False)
        room = max(1, console.size.height - 1)
        for i, line in enumerate(lines[-room:]):
            if i:
                yield Segment.line()
            yield from line
