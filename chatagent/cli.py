"""Command line: `chatagent COMMAND ...`.

One function per subcommand (`cmd_<name>`), registered by `_add_<name>` on the
subparsers; handlers may be sync or async and return the exit status. Results go
to stdout; progress, logs and errors to stderr, so `--json` output pipes cleanly.

Exit status: 0 success, 1 failure (a clear message on stderr), 2 usage error
(what argparse refuses, an unknown --model, and what a handler finds wrong with
its command line: no URL, an empty question; `UsageError`; and a setting with
a value it cannot take from a variable or the settings file, an unknown model
included: `settings.BadSettingError`), 3 no answer found (`ask`: the question ended without an answer, e.g. pass 2
stopped at its turn limit or input-token budget; the ending is still printed),
130 interrupted, 141 stdout's reader stopped reading (`| head`).
`chat` exits 1 if any question or command failed, else 3 if any ended without an answer.

Everything printed for a person goes through `terminal.sanitize` and rich
`Text` objects (never markup strings): page, URL and model text cannot drive
the terminal. `--json` output keeps the content exact, JSON-escaped.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from . import __version__, startup
from .ask_args import add_agent_args, add_question
from .ask_args import budget as budget_arg
from .ask_args import context_window as window_arg
from .ask_args import timeout as _timeout
from .errors import ChatAgentError, ModelConfigError, UsageError
from .limits import DEFAULT_LOAD_TIMEOUT_S, DEFAULT_TAB_BUDGET
from .exit_status import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_NO_ANSWER, EXIT_OK, EXIT_TERMINATED
from .process import answer_status, run, setup_logging
from .settings import Settings, check_model
from .terminal import json_safe, no_echo, safe_text, sanitize, stderr_console

if TYPE_CHECKING:
    # rich: imported where output is made (`ask` gives a daemon its request before);
    # the extraction and ranking libraries: imported by the runtime, off the event loop.
    from rich.console import Console
    from rich.text import Text

    from .context import PageContext, TabContext
    from .runtime import Conversation, Runtime


class CLIError(ChatAgentError):
    code = "cli_error"


def _stdout() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


# --- context -------------------------------------------------------------------


def model_arg(value: str) -> str:
    """An argparse `type`: a model name some provider serves, so what the
    answering would refuse after the pages opened is a usage error at once
    (also for commands other packages add)."""
    from .models import provider_for  # light: a model's libraries load when it is made

    try:
        provider_for(value.strip())
    except ModelConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return value


CONTEXT_EXIT_STATUS = (
    "Exit status: 0 read; 1 no page could be read (the reason is on stderr); 2 usage error (a bad option or "
    "setting, no URL and no --cdp); 130 interrupted."
)


def _add_context(sub: Any) -> None:
    p = sub.add_parser(
        "context",
        help="show the page context a language model would be sent for one or more URLs",
        description="Open the pages in a headless Chromium (or attach to a running Chrome with --cdp), "
        "extract their text and fit it into the token budget, then print it per tab.",
        epilog=CONTEXT_EXIT_STATUS,
    )
    p.add_argument("targets", nargs="*", metavar="URL",
                   help="http(s) URL, file:// URL or local file path; with --cdp and none given, the open tabs")
    p.add_argument("-q", "--question", help="focus the budget on the parts of the pages relevant to this question")
    p.add_argument("--budget", type=budget_arg, metavar="TOKENS",
                   help=f"tokens per tab; short tabs give their unused share to long ones (default {DEFAULT_TAB_BUDGET})")
    p.add_argument("--json", action="store_true", help="print one JSON object (the PageContext) on stdout")
    p.add_argument("--no-ids", dest="ids", action="store_false",
                   help="print the text without the passage ids ([1.4]) the model sees and cites")
    p.add_argument("--timeout", type=_timeout, metavar="S",
                   help=f"seconds to wait for each page to load (default {DEFAULT_LOAD_TIMEOUT_S:g})")
    p.add_argument("--cdp", metavar="URL",
                   help="attach to a Chrome started with --remote-debugging-port, e.g. http://127.0.0.1:9222")
    p.set_defaults(handler=cmd_context)


def settings_of(args: argparse.Namespace, *, model: bool = False) -> Settings:
    """The settings, with the flags this command was given on top. `model`:
    the command answers questions, so a model setting no provider serves is
    refused now, as `--model` with that name is (`settings.check_model`)."""
    flags = {key: getattr(args, key, None)
             for key in ("model", "budget", "timeout", "deadline", "input_budget", "context_window", "cdp", "browser_ws")}
    if getattr(args, "cache", True) is False:
        flags["cache"] = False
    settings = Settings.load(**flags)
    if model:
        check_model(settings, flags)
    return settings


def _runtime(args: argparse.Namespace, *, conversation: bool = False, model: bool = True) -> "Runtime":
    """`model`: as for `settings_of` (all but `context` answer questions)."""
    from .runtime import Runtime  # only for commands that read pages (it loads the agent's libraries)

    settings = settings_of(args, model=model)
    if not args.targets and not settings.cdp:
        raise UsageError("Give at least one URL or file, or --cdp to read the tabs of a running Chrome.")
    # Every page is extracted in a worker process, within its limits. Several extract tabs in
    # parallel, but starting them takes ~0.5 s of CPU from the browser loading the pages: worth
    # it over a conversation's questions, or for a running browser's tabs (`cdp`), not for one
    # question about pages this process opens (a cold 10-tab ask reached its request in
    # 0.95-0.97 of the time with none), which has one.
    return Runtime(settings, extraction_workers=bool(settings.cdp) or (conversation and len(args.targets) > 1))


async def cmd_context(args: argparse.Namespace) -> int:
    err = stderr_console()
    async with _runtime(args, model=False) as runtime:
        with err.status("Starting the browser…"):
            await runtime.browser()
        with err.status(f"Opening {_plural(len(args.targets), 'page')}…" if args.targets else "Reading the open tabs…"):
            tabs = await runtime.open_tabs(args.targets)
        with err.status("Extracting and fitting the text…"):
            await runtime.load()
            ctx = runtime.scrubber.model(await runtime.builder.build(tabs, args.question))

    if args.json:
        sys.stdout.write(json_safe(ctx.model_dump_json(indent=2)) + "\n")
    else:
        _print_context(ctx, ids=args.ids and runtime.builder.ids)
    ok = [t for t in ctx.tabs if t.ok]
    if args.json:  # the panels show failures; JSON readers still want them on stderr
        for t in ctx.tabs:
            if not t.ok:
                err.print(safe_text((f"tab {t.tab_id}: {t.error}", "yellow")))
    if not ok:
        raise CLIError("No page could be read." if len(ctx.tabs) != 1 else f"The page could not be read: {ctx.tabs[0].error}")
    return EXIT_OK


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _size_words(tokens: int, page_tokens: int) -> str:
    """"1,840 tokens" for a tab sent whole; "312 of 2,204 tokens (14% of its text)" for one cut;
    "title only (0 of 2,204 tokens)" for one whose budget left none of its lines."""
    from .events import share_words  # imported where output is made, as rich is

    if page_tokens <= tokens:
        return f"{tokens:,} tokens"
    words = share_words(tokens, page_tokens)
    counts = f"{tokens:,} of {page_tokens:,} tokens"
    return f"{words} ({counts})" if tokens <= 0 else f"{counts} ({words})"


def _tab_header(t: TabContext) -> Text:
    head = safe_text(("url       ", "dim"), t.url or "(none)", "\n")
    if t.ok:
        head.append("size      ", style="dim").append(_size_words(t.tokens, t.original_tokens))
        if t.overview:  # from its typed fields, not from its text's marker
            from .events import overview_words

            head.append(f"  {overview_words(t.scope, t.parts, t.parts_shown)}", style="cyan")
        elif t.selected:
            head.append("  selected: the parts most related to the question", style="cyan")
        elif t.truncated:
            head.append("  truncated: the start of the page", style="cyan")
        if t.method:
            head.append(sanitize(f"  [{t.method}]"), style="dim")
        head.append("\n")
    # What the page's markup says of itself, which the model is given too.
    if t.authors:
        head.append_text(safe_text(("author    ", "dim"), "; ".join(t.authors), "\n"))
    if t.published:
        head.append_text(safe_text(("published ", "dim"), t.published, "\n"))
    for note in t.notes:
        if note != t.error:
            head.append_text(safe_text(("note      ", "dim"), (note, "yellow"), "\n"))
    if t.error:
        head.append_text(safe_text(("error     ", "dim"), (t.error, "bold red"), "\n"))
    head.rstrip()
    return head


def _print_context(ctx: PageContext, *, ids: bool) -> None:
    """Each tab's text as the prompt shows it: with `ids`, each passage led by the id the
    model cites it by ("[1.4]"), and none where the page does not show its words."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.rule import Rule

    from .blocks import render

    out = _stdout()
    for t in ctx.tabs:
        parts: list[Any] = [_tab_header(t)]
        if t.text:
            parts += [Rule(style="dim"), safe_text(render(t) if ids else t.text)]
        title = safe_text((f"tab {t.tab_id}: {t.title or '(untitled)'}", "bold"))
        out.print(Panel(Group(*parts), title=title, title_align="left", border_style="red" if t.error else "blue"))
    summary = f"{_plural(len(ctx.tabs), 'tab')}, {ctx.tokens:,} tokens"
    if ctx.question:
        summary += f" for the question {ctx.question!r}"
    stderr_console().print(safe_text((summary, "dim")))


# --- ask / chat -------------------------------------------------------------------


def _add_agent_args(p: argparse.ArgumentParser) -> None:
    add_agent_args(p, model=model_arg)


USAGE_ERRORS = ("a bad or unknown option, an unknown model or another setting's bad value, from a flag, "
                "a variable or the settings file alike, no URL and no --cdp")
ASK_EXIT_STATUS = (
    f"Exit status: 0 answered; 1 failed (the reason is on stderr); 2 usage error ({USAGE_ERRORS}, "
    "an empty question); "
    "3 no answer found (the search in the browser stopped first, at its turn limit or input-token budget; "
    "why is on stderr); 130 interrupted; 141 its output's reader stopped reading (| head)."
)
CHAT_EXIT_STATUS = (
    "Exit status: 0 every question answered (or stopped with Ctrl-C); 1 a question or command failed; "
    f"3 none failed but one ended without an answer; 2 usage error ({USAGE_ERRORS}); 130 interrupted."
)


def _add_ask(sub: Any) -> None:
    p = sub.add_parser("ask", help="ask one question about one or more pages",
                       description="Stream an answer to one question about the given pages.",
                       epilog=ASK_EXIT_STATUS)
    _add_agent_args(p)
    add_question(p)
    p.set_defaults(handler=cmd_ask)


def _add_chat(sub: Any) -> None:
    p = sub.add_parser("chat", help="a conversation about pages: questions and /commands, with follow-ups",
                       description="Keep the pages open and answer questions until Ctrl-D (EOF): at a prompt "
                       "on a terminal, else one line of standard input at a time. The conversation is kept, so "
                       "follow-up questions work. Lines starting with / are commands: /open URL, /tabs, /close N, "
                       "/model NAME, /clear, /help, /quit (clear, help and quit also without the slash).",
                       epilog=CHAT_EXIT_STATUS)
    _add_agent_args(p)
    p.add_argument("--no-cache", dest="cache", action="store_false", default=None,
                   help="ask the model again even when the same question was answered about the same pages")
    p.set_defaults(handler=cmd_chat)


async def _answer(conversation: "Conversation", question: str, json_mode: bool) -> int:
    """Answer one question; its exit status: EXIT_FAIL, EXIT_NO_ANSWER or EXIT_OK."""
    from .render import show

    return answer_status(await show(conversation.ask(question), json_mode=json_mode,
                                    scrubber=conversation.runtime.scrubber))


async def cmd_ask(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UsageError("The question is empty.")
    # A running daemon answers, warm (chatagent/daemon/client.py); None: this process answers.
    from .daemon.client import ask as ask_daemon

    printer = await ask_daemon(args, settings_of(args, model=True), early=args.early)
    if printer is not None:
        return answer_status(printer)
    with no_echo():  # see cmd_chat
        async with _runtime(args) as runtime:
            with stderr_console().status("Opening pages…"):
                conversation = await runtime.open(args.targets)
            return await _answer(conversation, args.question, args.json)


async def cmd_chat(args: argparse.Namespace) -> int:
    from .chat import ChatSession

    interactive = sys.stdin.isatty()
    # Keys typed while pages open or an answer streams would land on the
    # spinner or in the answer: they wait for the prompt instead. Around the
    # runtime's whole life: the browser's driver (Node.js) puts back, as it
    # exits, the terminal modes it found when it started.
    with no_echo():
        async with _runtime(args, conversation=True) as runtime:
            # The pages are read while the user types the first question: it then
            # starts as fast as a follow-up. `ask` has its question already.
            with stderr_console().status("Opening pages…"):
                conversation = await runtime.open(args.targets, prefetch=True)
            # The prompt shows: from here on the session is the user's, for as long as they like.
            startup.over()
            session = ChatSession(runtime, conversation, json_mode=args.json,
                                  live_tabs=bool(runtime.settings.cdp) and not args.targets)
            await session.run(interactive=interactive)
    return EXIT_FAIL if session.failed else EXIT_NO_ANSWER if session.unanswered else EXIT_OK


# --- mcp ----------------------------------------------------------------------------


MCP_EXIT_STATUS = (
    "Exit status: 0 the client closed stdin (stdio); 1 the server could not start (the reason is on stderr: "
    "a port in use, no mcp_token beyond 127.0.0.1); 2 usage error (a bad option; a setting with a value it "
    "cannot take, an unknown model included); 130 interrupted; 143 stopped by SIGTERM (over --http, once "
    "the calls in progress were answered)."
)


def _add_mcp(sub: Any) -> None:
    p = sub.add_parser(
        "mcp", help="serve read_pages, ask_pages and list_tabs to other agents over MCP",
        description="Run a Model Context Protocol server for agents (Claude Desktop, Cursor, VS Code, "
        "LangChain's MCP adapters): on stdin/stdout, where stdout carries only the protocol, or over "
        "streamable HTTP with --http. Logs go to stderr.",
        epilog=MCP_EXIT_STATUS,
    )
    p.add_argument("--model", metavar="M", type=model_arg, help="the model ask_pages uses unless a call names one "
                   "(default: the model setting)")
    p.add_argument("--cdp", metavar="URL", help="attach to a Chrome started with --remote-debugging-port: "
                   "list_tabs then lists its tabs")
    p.add_argument("--browser-ws", metavar="WS_URL", help="use browsers from a Playwright browser server "
                   "(playwright launch-server) instead of launching one")
    p.add_argument("--timeout", type=_timeout, metavar="S",
                   help=f"seconds to wait for each page to load (default {DEFAULT_LOAD_TIMEOUT_S:g})")
    p.add_argument("--http", metavar="[HOST:]PORT", type=_listen,
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio, to clients that send the "
                   "mcp_token setting as a bearer token (HOST: 127.0.0.1 unless given, where a token is made "
                   "and saved if none is set; any other host needs one set first)")
    p.add_argument("--stateless", action="store_true",
                   help="with --http: keep no session between requests, so that replicas behind a load balancer "
                   "share the calls (a client's cancel cannot reach its call then: it runs to its end)")
    p.set_defaults(handler=cmd_mcp, targets=[])


def _listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    try:
        n = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not [HOST:]PORT") from None
    if not 0 < n < 65536:
        raise argparse.ArgumentTypeError(f"port {n} is out of range")
    return host.strip("[]") or "127.0.0.1", n


async def cmd_mcp(args: argparse.Namespace) -> int:
    from . import mcp_server  # the MCP SDK: only for this command

    settings = settings_of(args, model=True)  # ask_pages' default: refused at start, as `--model` is
    if args.stateless and not args.http:
        raise UsageError("--stateless is for --http: a stdio server has one client and its session.")
    if args.http:
        stopped_by = await mcp_server.serve_http(settings, *args.http, stateless=args.stateless)
        if stopped_by == signal.SIGTERM:
            return EXIT_TERMINATED
        if stopped_by == signal.SIGINT:
            from .process import interrupted

            interrupted()
            return EXIT_INTERRUPTED
    else:
        await mcp_server.serve_stdio(settings)
    return EXIT_OK


# --- daemon -----------------------------------------------------------------------


DAEMON_EXIT_STATUS = (
    "Exit status: 0 done (`status`: a daemon is running); 1 failed (the reason is on stderr); 2 usage error "
    "(a setting with a value it cannot take; for `start` and `run`, an unknown model too); "
    "3 `status`: no daemon is running."
)


def _add_daemon(sub: Any) -> None:
    p = sub.add_parser(
        "daemon", help="a background process that keeps a browser open, so `ask` starts warm",
        description="While a daemon runs, `chatagent ask` is answered by it: no browser launch, no start-up. "
        "It stops after daemon_idle seconds without an ask (default 15 min), on `stop`, or when its socket "
        "is removed. With the daemon setting (`chatagent config set daemon true`) `ask` starts one itself.",
        epilog=DAEMON_EXIT_STATUS,
    )
    dsub = p.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    dsub.add_parser("start", help="start one in the background (returns once it answers)")
    dsub.add_parser("stop", help="stop the running one")
    status = dsub.add_parser("status", help="whether one runs: its pid, asks, idle time, socket and log")
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    dsub.add_parser("run", help="run one in the foreground, logging to stderr (Ctrl-C stops it)")
    p.set_defaults(handler=cmd_daemon)


async def cmd_daemon(args: argparse.Namespace) -> int:
    from .daemon.command import daemon_command

    # What starts a daemon refuses a default model no provider serves; `status` and `stop` need none.
    settings = settings_of(args, model=args.daemon_command in ("start", "run"))
    return await daemon_command(args.daemon_command, settings, json_mode=getattr(args, "json", False))


# --- config -----------------------------------------------------------------------


CONFIG_EXIT_STATUS = (
    "Exit status: 0 done; 1 failed (the settings file cannot be read or written; the reason is on stderr); "
    "2 usage error (an unknown setting, or a value it cannot take: `set model` takes the names --model does)."
)


def _add_config(sub: Any) -> None:
    p = sub.add_parser(
        "config", help="show or change the settings (model, keys, budgets)",
        description="Settings come from flags, then the environment, then the settings file, then defaults. "
        "`set` and `unset` edit the file (readable by you only: it may hold keys).",
        epilog=CONFIG_EXIT_STATUS,
    )
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="every setting, its value (keys masked) and where it came from")
    show.add_argument("--json", action="store_true", help="one JSON object on stdout")
    s = csub.add_parser("set", help="save a setting in the settings file")
    s.add_argument("key", metavar="KEY", choices=list(Settings.model_fields), help=", ".join(Settings.model_fields))
    s.add_argument("value", metavar="VALUE")
    u = csub.add_parser("unset", help="remove a setting from the settings file (back to the default)")
    u.add_argument("key", metavar="KEY", choices=list(Settings.model_fields), help=", ".join(Settings.model_fields))
    csub.add_parser("path", help="print where the settings file is")
    p.set_defaults(handler=cmd_config)


def cmd_config(args: argparse.Namespace) -> int:
    from . import settings as config

    out = _stdout()
    if args.config_command == "path":
        sys.stdout.write(f"{config.config_path()}\n")  # plain: meant for $(chatagent config path)
        return EXIT_OK
    if args.config_command in ("set", "unset"):
        if args.config_command == "unset" and not config.file_sets(args.key):
            said = f"{args.key} is not set in {config.config_path()}: nothing to remove."  # and nothing written
        else:
            try:
                path = config.set_value(args.key, args.value if args.config_command == "set" else None)
            except config.BadValueError as exc:  # VALUE is what the command line gets wrong
                raise UsageError(exc.message) from None
            said = f"{'Saved' if args.config_command == 'set' else 'Removed'} {args.key} in {path}."
        settings = Settings.load()
        shown = next(x for x in config.describe(settings) if x.key == args.key)
        out.print(safe_text(f"{said} Now: {args.key} = {shown.value} ({shown.origin.describe()})."))
        if shown.origin.kind == "env":  # the variable wins over the file: say so, or the change seems lost
            out.print(safe_text((f"The environment sets it ({shown.origin.name}), and that comes before the file.", "yellow")))
        for key, setting in config.KEY_ENDPOINTS.items():  # a new endpoint gets no key saved for another
            if args.key == setting and (elsewhere := settings.key_elsewhere(key)):
                out.print(safe_text((
                    f"The saved {key} is for {elsewhere.endpoint}, so it is not sent to {settings.endpoint(setting)}: "
                    f"`chatagent config set {key} KEY` saves the key for this endpoint.", "yellow")))
        return EXIT_OK
    shown = list(config.describe(Settings.load()))
    if args.json:
        rows = {x.key: {"value": x.value, "source": x.origin.kind, "from": x.origin.name} for x in shown}
        sys.stdout.write(json_safe(json.dumps(rows, indent=2)) + "\n")
        return EXIT_OK
    from rich.table import Table

    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for x in shown:
        table.add_row(safe_text(x.key), safe_text(x.value), safe_text((x.origin.describe(), "dim")))
    out.print(table)
    stderr_console().print(safe_text((f"Settings file: {config.config_path()}", "dim")))
    return EXIT_OK


def _add_models(sub: Any) -> None:
    p = sub.add_parser(
        "models", help="the models each provider serves here, asked of its server",
        description="Lists what each provider serves, as --model takes the names: the offline model, "
        "Gemini (with a key), the OpenAI-compatible server at openai_base_url, and Ollama, LM Studio and "
        "llama.cpp's server at their default addresses. With --check, asks whether one model is served, "
        "and the window it would be given (tokens it reads at once) and where that came from.",
        epilog="Exit status: 0 done (with --check: the model is served); 1 with --check, when it is not "
        "(the reason is on stderr).",
    )
    p.add_argument("--check", metavar="MODEL", nargs="?", const="", default=None,
                   help="test the connection to MODEL (default: the model setting) and find its window")
    p.add_argument("--context-window", type=window_arg, metavar="TOKENS",
                   help="with --check: the window to give the model, whatever its server says")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(handler=cmd_models)


async def cmd_models(args: argparse.Namespace) -> int:
    from .models.catalog import catalog, check

    settings = Settings.load(context_window=args.context_window)
    if args.check is not None:
        name = args.check.strip() or settings.model
        served = await check(name, settings, window=True)
        if args.json:
            sys.stdout.write(json_safe(served.model_dump_json()) + "\n")
        elif served.problem is None:
            out = _stdout()
            out.print(safe_text(f"{name}: served", (f" at {served.endpoint}" if served.endpoint else "", "dim"), "."))
            if served.window is not None:
                out.print(safe_text("window: ", (served.window.describe(), "bold")))
            if served.server_window is not None:
                out.print(safe_text(("  without the setting: ", "dim"), served.server_window.describe()))
        else:
            where = f" at {served.endpoint}" if served.endpoint else ""
            stderr_console().print(safe_text((f"{name}{where}: ", "bold red"), served.problem))
        return EXIT_OK if served.problem is None else EXIT_FAIL
    listed = await catalog(settings)
    if args.json:
        sys.stdout.write(json_safe(json.dumps([s.model_dump() for s in listed], indent=2)) + "\n")
        return EXIT_OK
    out = _stdout()
    for s in listed:
        where = (f" ({s.endpoint})" if s.endpoint else "", "dim")
        if s.problem is not None:
            out.print(safe_text((s.provider, "bold"), where, ": ", (s.problem, "yellow")))
        else:
            out.print(safe_text((s.provider, "bold"), where, ": ", ", ".join(s.models) or "no models"))
    return EXIT_OK


# --- entry point ------------------------------------------------------------------


VERBOSE_HELP = "more logging on stderr (-vv: debug)"


class _Parser(argparse.ArgumentParser):
    """Every command's parser, those other packages add included (subparsers
    are made of their parent's class), takes -v after the command name too:
    `chatagent ask URL -q Q -v`. Counted apart from a -v before it, which a
    subcommand's value would otherwise overwrite; `main` adds the two.

    An argument the command does not take is refused by the command's own
    parser, with its usage (`chatagent ask [-h] ...`): argparse would hand it
    back to the top-level parser, whose usage names no command's options. An
    option it does not take is called unknown, with the one it is closest to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("-v", "--verbose", dest="verbose_after", action="count", default=argparse.SUPPRESS,
                          help=VERBOSE_HELP)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        if self._subparsers is None:  # a command's own parser: a parser of commands leaves its options to them
            self._refuse_unknown_option(sys.argv[1:] if args is None else list(args))
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:  # nothing after a command's name is the top-level parser's to take
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _refuse_unknown_option(self, args: list[str]) -> None:
        """An option this command does not take is said to be unknown, with the
        one it is closest to, before anything else: argparse would first report
        what the misspelt option left missing (`--qestion`: "-q is required")."""
        from difflib import get_close_matches

        for arg in args:
            if arg == "--":
                return
            # argparse's own reading of the word: an option it knows (or a prefix of one), a value, or unknown.
            found = self._parse_optional(arg)
            if found is None or any(option[0] is not None for option in (found if isinstance(found, list) else [found])):
                continue
            name = arg.partition("=")[0]
            close = get_close_matches(name, [o for o in self._option_string_actions if len(o) > 2], n=1, cutoff=0.75)
            self.error(f"unknown option {name}" + (f"; did you mean {close[0]}?" if close else ""))


def build_parser(*, plugins: bool = True) -> argparse.ArgumentParser:
    """`plugins`: with the commands other packages add (`bridge`); reading
    every installed package's entry points costs ~20 ms, which a built-in command
    need not pay."""
    parser = argparse.ArgumentParser(
        prog="chatagent", description="Ask questions about web pages, one tab or several compared."
    )
    parser.add_argument("--version", action="version", version=f"chatagent {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    _add_context(sub)
    _add_ask(sub)
    _add_chat(sub)
    _add_config(sub)
    _add_models(sub)
    _add_mcp(sub)
    _add_daemon(sub)
    # Other packages add their commands (`bridge`: extension_bridge; `bench`:
    # benchmarks), so this package does not import them.
    if plugins:
        from importlib.metadata import entry_points

        for entry in entry_points(group="chatagent.commands"):
            entry.load()(sub)
    return parser


BUILT_IN_COMMANDS = frozenset(("context", "ask", "chat", "config", "models", "mcp", "daemon"))


def _names_built_in(argv: Sequence[str]) -> bool:
    """Whether `argv` runs a built-in command (the top-level options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None) in BUILT_IN_COMMANDS


def main(argv: Sequence[str] | None = None, *, early: socket.socket | None = None) -> int:
    """`early`: `ask`'s connection to a running daemon, opened before this module
    was imported (`chatagent.__main__`, `daemon.early`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv, early)
    finally:
        if early is not None:
            early.close()  # not an `ask` after all (parse errors, --help): the daemon drops what it opened


def verbosity(args: argparse.Namespace) -> int:
    """How many -v the command line gives, before the command's name and after it."""
    return args.verbose + getattr(args, "verbose_after", 0)


def _main(argv: list[str], early: socket.socket | None) -> int:
    parser = build_parser(plugins=not _names_built_in(argv))
    args = parser.parse_args(argv)  # exits 2 with a usage message on bad input
    args.early = early
    args.verbose = verbosity(args)
    setup_logging(args.verbose)
    # Start-up ends here but for `ask` (as its answer begins: render.show), `chat` (once its
    # pages are open) and `mcp` (once its runtime is warm: mcp_server.running).
    if args.handler not in (cmd_ask, cmd_chat, cmd_mcp):
        startup.over()
    status = run(partial(args.handler, args), verbose=args.verbose)
    return EXIT_OK if status is None else status


if __name__ == "__main__":
    sys.exit(main())
