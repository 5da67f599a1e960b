"""`chatagent chat`: questions and commands, one a line, in one conversation.

On a terminal it is a prompt (prompt_toolkit: line editing, Up-arrow
history); otherwise standard input is read a line at a time. In both, a line
that starts with `/` is a command (`/help` lists them), so sessions can be
scripted; a command that takes no argument may also be typed as a bare word
(`clear`, `quit`), as in a shell. While an answer or a command runs, Ctrl-C stops it (keys typed
meanwhile wait for the next prompt: `cli.cmd_chat` holds them).
"""

from __future__ import annotations

import asyncio
import io
import shlex
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .browser import Tab, TabFailure
from .errors import ChatAgentError
from .render import show
from .terminal import link, safe_text

if TYPE_CHECKING:
    from .runtime import Conversation, Runtime

# name: (arguments, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "open": ("URL…", "open more pages in this conversation"),
    "tabs": ("", "list the tabs with their numbers"),
    "close": ("N", "close tab N (a tab of your own browser stays open there)"),
    "model": ("[NAME]", "answer the next questions with model NAME; without NAME, say which model answers"),
    "clear": ("", "forget the conversation so far (the tabs stay open)"),
    "new": ("", "the same as /clear"),
    "help": ("", "this list"),
    "quit": ("", "leave (so does Ctrl-D)"),
}
# Typed alone, without the slash, these are the command, as in a shell: a question is never one word of these.
BARE_COMMANDS = frozenset(("clear", "new", "tabs", "help", "quit", "exit"))
PROMPT = "› "
_LIST_TIMEOUT_S = 15.0


class ChatSession:
    """Runs `chat` over a conversation until EOF or /quit.

    `live_tabs` (--cdp with no URLs): every question is about the browser's
    tabs as they are then, so tabs the user opened meanwhile are read too.
    Afterwards `failed` says a question or command failed and `unanswered`
    that a question ended without an answer."""

    def __init__(self, runtime: "Runtime", conversation: "Conversation", *, json_mode: bool, live_tabs: bool) -> None:
        self.runtime = runtime
        self.conversation = conversation
        self.json_mode = json_mode
        self.live_tabs = live_tabs
        # The tabs named on the command line and opened with /open; with
        # live_tabs, only the latter (the browser's own are listed each time).
        self.tabs: list[Tab | TabFailure] = [] if live_tabs else list(conversation.tabs)
        self.hidden: set[str] = set()  # ids of the user's own tabs that /close took out
        self.failed = False
        self.unanswered = False
        # Messages wrap at words on a terminal, and stay one line each in a log.
        self.err = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
        # What commands show is output, on stdout, unless stdout carries JSON events.
        self.out = self.err if json_mode else Console(highlight=False, soft_wrap=True)

    async def run(self, *, interactive: bool) -> None:
        # A page that could not be opened is said once, before the first question,
        # and then left out: not a note repeated with every answer. In --json mode each
        # question's events say it (a note, or the error when no tab is left), as before.
        if not self.json_mode:
            for tab in [t for t in self.tabs if isinstance(t, TabFailure)]:
                self.err.print(safe_text(("Not opened: ", "yellow"), tab.message))  # numbered tabs are the open ones
                self.tabs.remove(tab)
        if interactive:
            await self._prompt_loop()
        else:
            await self._line_loop()

    async def _line_loop(self) -> None:
        lines = _stdin_lines(asyncio.get_running_loop())
        while (line := await lines.get()) is not None:
            if not await self.handle(line):
                return

    async def _prompt_loop(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.application import get_app
        from prompt_toolkit.formatted_text import FormattedText
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.output import create_output

        # Drawn on the terminal even when stdout goes to a file.
        session: PromptSession[str] = PromptSession(history=InMemoryHistory(),
                                                    output=create_output(always_prefer_tty=True))
        commands = ", ".join(f"/{name}" for name in COMMANDS if name != "new")  # /new: /clear's old name
        self.err.print(Text(f"Ask a question and press Enter. Commands: {commands} (/help says more). "
                            "Ctrl-C stops an answer, Ctrl-D quits.", style="dim"), soft_wrap=False)
        hint = FormattedText([("ansibrightblack", "ask about the pages, or /help")])
        while True:
            try:
                line = await session.prompt_async(
                    FormattedText([("bold ansicyan", PROMPT)]),
                    placeholder=lambda: [] if get_app().is_done else hint,  # not left behind in the scrollback
                )
            except KeyboardInterrupt:  # at the prompt: a fresh line, as in a shell
                continue
            except EOFError:
                return
            if not await self.handle(line):
                return
            if line.strip():
                self.err.print()

    async def handle(self, line: str) -> bool:
        """Answer a question or run a command; False to leave."""
        line = line.rstrip("\r\n")
        if line.startswith("/"):
            return await self._command(line)
        if line.strip().lower() in BARE_COMMANDS:
            return await self._command("/" + line.strip())
        question = line.strip()
        if question:
            await self._interruptible(self._ask(question), stop=self.conversation.cancel)
        return True

    async def _ask(self, question: str) -> None:
        tabs = await self._current_tabs()
        if not tabs:
            where = "The browser has no open tabs" if self.live_tabs else "This conversation has no tabs"
            return self._fail(f"{where} to read: /open URL opens one.")
        printer = await show(self.conversation.ask(question, tabs=tabs), json_mode=self.json_mode,
                             scrubber=self.runtime.scrubber)
        self.failed |= printer.failed
        self.unanswered |= printer.unanswered

    async def _current_tabs(self) -> list[Tab | TabFailure]:
        tabs = list(self.tabs)
        if self.live_tabs:
            browser = await self.runtime.browser()
            tabs[:0] = [t for t in await browser.existing_tabs() if t.tab_id not in self.hidden]
        self.conversation.history.labels.assign(tabs)  # /tabs shows the numbers the model will see
        return tabs

    async def _interruptible(self, job: Awaitable[None], *, stop: Callable[[], None] | None = None) -> None:
        """Run `job`; Ctrl-C calls `stop` (default: cancels the job) instead of ending the program."""
        task = asyncio.ensure_future(job)
        loop = asyncio.get_running_loop()
        with suppress(NotImplementedError, RuntimeError):  # no signal handlers off the main thread
            loop.add_signal_handler(signal.SIGINT, stop or task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not task.cancelled() or (current is not None and current.cancelling()):
                raise
            self.err.print(Text("(stopped)", style="dim"))
        finally:
            with suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    # --- commands ---------------------------------------------------------------------

    async def _command(self, line: str) -> bool:
        name, _, arg = line[1:].strip().partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("quit", "exit"):
            return False
        if name == "help":
            self._help()
        elif name == "open":
            await self._interruptible(self._open(arg))
        elif name == "tabs":
            await self._interruptible(self._list())
        elif name == "close":
            await self._close(arg)
        elif name == "model":
            await self._interruptible(self._model(arg))
        elif name in ("clear", "new"):
            self.conversation = self.runtime.conversation(model=self.conversation.model_name)
            self.out.print(Text("Cleared: the conversation so far is forgotten; the tabs stay open. "
                                "The next question starts afresh."))
        else:
            self._fail(f"Unknown command /{name}: /help lists the commands. "
                       "(To ask a question that starts with /, type a space first.)")
        return True

    def _help(self) -> None:
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for name, (args, what) in COMMANDS.items():
            table.add_row(f"/{name} {args}".rstrip(), what)
        self.out.print(table)
        bare = ", ".join(sorted(BARE_COMMANDS))
        self.out.print(Text(f"These work without the slash too: {bare}. Anything else is a question about the tabs. "
                            "Up and Down recall earlier lines; Ctrl-C stops an answer, Ctrl-D quits.", style="dim"),
                       soft_wrap=False)

    async def _open(self, arg: str) -> None:
        try:
            targets = shlex.split(arg)
        except ValueError as exc:
            return self._fail(f"/open: {exc}.")
        if not targets:
            return self._fail("/open needs a URL or a file: /open https://example.com")
        with self.err.status("Opening…"):
            opened = await self.runtime.open_tabs(targets)
        for tab in opened:
            if isinstance(tab, TabFailure):
                self._fail(tab.message)
        new = [t for t in opened if isinstance(t, Tab)]
        if new:
            self.tabs += new
            tabs = await self._current_tabs()
            self.runtime.builder.prefetch(tabs)  # read ahead while the next question is typed
            await self._print_tabs(new)

    async def _list(self) -> None:
        tabs = await self._current_tabs()
        if not tabs:
            self.out.print(Text("No tabs: /open URL opens one."))
        await self._print_tabs(tabs)

    async def _print_tabs(self, tabs: Sequence[Tab | TabFailure]) -> None:
        async def line(tab: Tab | TabFailure) -> Text:
            head = safe_text((f"[Tab {tab.label}]", "cyan"), " ")
            if isinstance(tab, TabFailure):
                return head + safe_text(("could not be opened: ", "red"), tab.message)
            try:
                snap = await asyncio.wait_for(self.runtime.builder.snapshot(tab), _LIST_TIMEOUT_S)
            except TimeoutError:
                return head + Text("not responding", style="yellow")
            if isinstance(snap, TabFailure):
                return head + safe_text((snap.message, "yellow"))
            return head + safe_text(f"{snap.title} — " if snap.title else "") + link(snap.url)

        for text in await asyncio.gather(*(line(t) for t in tabs)):
            self.out.print(text)

    async def _close(self, arg: str) -> None:
        number = arg.lower().removeprefix("tab").strip()
        tabs = await self._current_tabs()
        tab = next((t for t in tabs if t.label == number), None)
        if tab is None:
            which = f"the tabs are {', '.join(t.label for t in tabs)}" if tabs else "there are no tabs"
            return self._fail(f"No tab {number}: {which}." if number else f"/close needs a tab's number: {which}.")
        if tab in self.tabs:
            self.tabs.remove(tab)
            await self.runtime.close_tabs([tab])
            self.out.print(Text(f"Closed tab {tab.label}."))
        else:  # the user's own tab, over --cdp
            self.hidden.add(tab.tab_id)
            self.out.print(Text(f"Tab {tab.label} is out of this conversation; it stays open in your browser."))

    async def _model(self, name: str) -> None:
        if not name:
            current = self.conversation.model_name or self.runtime.settings.model
            self.out.print(safe_text(f"Model: {current}. /model NAME changes it."))
            return
        try:
            with self.err.status(f"Loading {name}…"):
                await self.runtime.models.warm(name)
        except ChatAgentError as exc:
            return self._fail(exc.message)
        self.conversation.model_name = name
        self.out.print(safe_text(f"Model: {name}, from the next question on."))

    def _fail(self, message: str) -> None:
        self.failed = True
        self.err.print(safe_text(("error: ", "bold red"), message))


def _stdin_lines(loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """Lines of standard input, then None at EOF. Read on a daemon thread: a
    thread of the default executor blocked in readline() would keep the
    process alive after Ctrl-C until the user pressed Enter."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    # Undecodable bytes (a binary file piped in) become U+FFFD instead of an error.
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="replace")

    def pump() -> None:
        try:
            for line in iter(sys.stdin.readline, ""):
                loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, None)
        except (RuntimeError, ValueError, OSError):
            pass  # the loop is gone (we are exiting) or stdin was closed

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return queue
