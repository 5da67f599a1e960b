"""The command line of the commands that ask questions (`ask`, `chat`): their
arguments and the types that check them.

Standard library only (and `limits`): `chatagent ask` reads its command line
with these before it loads the CLI or the settings, to hand a running daemon
its ask at once (`daemon/early.py`); the CLI builds its parsers with them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .limits import (
    DEFAULT_DEADLINE_S,
    DEFAULT_LOAD_TIMEOUT_S,
    DEFAULT_MODEL,
    DEFAULT_TAB_BUDGET,
    INPUT_BUDGET_FACTOR,
    MIN_CONTEXT_WINDOW,
    MIN_INPUT_BUDGET,
    MIN_TAB_BUDGET,
)


def budget(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of tokens") from None
    if n < MIN_TAB_BUDGET:
        raise argparse.ArgumentTypeError(f"a tab needs at least {MIN_TAB_BUDGET} tokens, got {n}")
    return n


def context_window(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of tokens") from None
    if n < MIN_CONTEXT_WINDOW:
        raise argparse.ArgumentTypeError(f"a model's window is at least {MIN_CONTEXT_WINDOW} tokens, got {n}")
    return n


def timeout(value: str) -> float:
    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if s <= 0:
        raise argparse.ArgumentTypeError("the timeout must be positive")
    return s


def factor(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not x >= 1:  # also refuses nan
        raise argparse.ArgumentTypeError("the input budget is at least 1 (times the first request)")
    return x


def add_agent_args(p: argparse.ArgumentParser, *, model: Callable[[str], str]) -> None:
    """The arguments `ask` and `chat` share. `model`: the type of --model (the CLI refuses a name no
    provider serves at once; the head start leaves that to the daemon, which
    loads the settings anyway)."""
    p.add_argument("targets", nargs="*", metavar="URL",
                   help="http(s) URL, file:// URL or local file path; with --cdp and none given, the open tabs")
    p.add_argument("--model", metavar="M", type=model,
                   help="extractive (offline), gemini-2.5-flash, openai:MODEL, ollama:MODEL, lmstudio:MODEL, "
                   "llamacpp:MODEL (default: the model setting, "
                   f"see `chatagent config show`; else {DEFAULT_MODEL})")
    p.add_argument("--json", action="store_true", help="print one JSON event per line on stdout")
    p.add_argument("--budget", type=budget, metavar="TOKENS",
                   help=f"tokens of page text per tab (default {DEFAULT_TAB_BUDGET})")
    p.add_argument("--timeout", type=timeout, metavar="S",
                   help=f"seconds to wait for each page to load (default {DEFAULT_LOAD_TIMEOUT_S:g})")
    p.add_argument("--cdp", metavar="URL", help="attach to a Chrome started with --remote-debugging-port")
    p.add_argument("--deadline", type=timeout, metavar="S",
                   help=f"give up on a question after this many seconds (default {DEFAULT_DEADLINE_S:g})")
    p.add_argument("--input-budget", type=factor, metavar="X",
                   help="a question's input tokens, all model calls together, stay within X times its first "
                   f"request (never below {MIN_INPUT_BUDGET:,}; default {INPUT_BUDGET_FACTOR:g})")
    p.add_argument("--context-window", type=context_window, metavar="TOKENS",
                   help="the model reads this many tokens at once, prompt and answer together (default: asked "
                   "of its server; `chatagent models --check` shows it)")


def add_question(p: argparse.ArgumentParser) -> None:
    """`ask`'s question."""
    p.add_argument("-q", "--question", required=True, help="the question")


# The settings an ask's command line can set, as `argparse` names them. The
# daemon takes all but `context_window` per ask (`daemon.protocol.PER_ASK`):
# its models' windows are its own, so an ask giving another is answered in its own process.
ASK_FLAGS = ("model", "budget", "timeout", "deadline", "input_budget", "context_window")
