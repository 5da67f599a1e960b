"""What every `chatagent` command does around its work: logging to stderr,
errors told as one actionable line, and the exit status.

Its own module, light to import: an `ask` whose settings a daemon loads
itself (`daemon.early`) runs through `run` without loading the CLI.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from . import ctrl_c
from .errors import ChatAgentError, UsageError
from .exit_status import EXIT_BROKEN_PIPE, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_NO_ANSWER, EXIT_OK, EXIT_USAGE, INTERRUPTED
from .scrub import LogScrubber, Secrets, configured
from .terminal import SanitizingFormatter, safe_text, stderr_console

if TYPE_CHECKING:
    from .render import EventPrinter

log = logging.getLogger("chatagent")


# Libraries that chatter at INFO and below: -v is about chatagent, -vv about them too.
_CHATTY_LIBRARIES = frozenset(("bm25s", "httpx", "trafilatura", "htmldate", "asyncio"))


# trafilatura's WARNING "discarding data: URL" says it found no main text in a page:
# chatagent reads the page's rendered text then, and a tab that has none gets a note
# ("No readable text on this page"). It says nothing a user can act on: -vv shows it.
_TRAFILATURA_DISCARDING = "discarding data"


def _quiet_libraries(record: logging.LogRecord) -> bool:
    library = record.name.partition(".")[0]
    if library == "trafilatura" and str(record.msg).startswith(_TRAFILATURA_DISCARDING):
        return False
    return record.levelno >= logging.WARNING or library not in _CHATTY_LIBRARIES


# google-genai leaves the byte-stream generators of a reply it stops reading
# (pass 1 escalating, Ctrl-C) to the garbage collector; with httpx2 their
# finalizers can race and asyncio logs a traceback, though the response was
# closed and its connection released. Nothing a user can act on: -vv shows it.
_ASYNCGEN_CLEANUP = "an error occurred during closing of asynchronous generator"


def _no_asyncgen_cleanup(record: logging.LogRecord) -> bool:
    return not (record.name == "asyncio" and str(record.msg).startswith(_ASYNCGEN_CLEANUP))


def setup_logging(verbosity: int, *, secrets: Secrets = configured) -> None:
    """Log lines on stderr, with `secrets` masked (`scrub`: a library's error may quote a key it was given)."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SanitizingFormatter("%(levelname)s %(name)s: %(message)s"))
    # Levels and filters on the handler, not on the libraries' loggers: those are
    # imported later, as commands need them, and one may set its own level then
    # (bm25s sets DEBUG), which would override ours.
    handler.setLevel(level)
    if verbosity < 2:
        handler.addFilter(_quiet_libraries)
        handler.addFilter(_no_asyncgen_cleanup)
    handler.addFilter(LogScrubber(secrets))  # last: only on records that are written
    logging.basicConfig(level=level, handlers=[handler])
    logging.captureWarnings(True)  # library warnings may quote page text: through the same formatter


def answer_status(printer: "EventPrinter") -> int:
    """A question's exit status: EXIT_FAIL, EXIT_NO_ANSWER or EXIT_OK."""
    return EXIT_FAIL if printer.failed else EXIT_NO_ANSWER if printer.unanswered else EXIT_OK


async def _delivering_ctrl_c(command: Callable[[], Awaitable[int | None]]) -> int | None:
    # asyncio.run's handler is in place: a first Ctrl-C, held or new, cancels this task.
    ctrl_c.deliver()
    return await command()


def interrupted() -> None:
    stderr_console().print(safe_text(INTERRUPTED))


def run(
    command: Callable[[], int | None] | Callable[[], Awaitable[int | None]], *, verbose: int,
    secrets: Secrets = configured,
) -> int | None:
    """Run a command (a function, or a coroutine function run in a new event
    loop); its exit status, with its errors told on stderr, `secrets` masked.
    None if the command returned None. Ctrl-C, held through the start
    (chatagent/ctrl_c.py), is delivered here."""
    try:
        if inspect.iscoroutinefunction(command):
            result = asyncio.run(_delivering_ctrl_c(command))
        else:
            ctrl_c.deliver()
            result = command()
        return None if result is None else int(result)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        interrupted()
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout stopped reading (`| head -1`): nothing is wrong, and
        # nothing more can be said there. As a program the pipe's signal ends.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no error again when stdout is flushed at exit
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    except ChatAgentError as exc:
        stderr_console().print(safe_text(("error: ", "bold red"), secrets().text(exc.message)))
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAIL
    except Exception as exc:  # a bug: say so plainly; the traceback only with -v
        log.debug("unexpected error", exc_info=True)
        err = stderr_console()
        scrubber = secrets()
        err.print(safe_text(("internal error: ", "bold red"), scrubber.text(f"{type(exc).__name__}: {exc}")))
        if not verbose:
            err.print(safe_text(("Run again with -v for details.", "dim")))
        else:  # plain and sanitized: the exception's text may quote a page
            err.print(safe_text(scrubber.text(traceback.format_exc())))
        return EXIT_FAIL
