"""The cyclic garbage collector, paused while a `chatagent` command starts.

Before its first request a cold `chatagent ask` makes some 200,000 objects
that live as long as the process (the modules, classes and schemas of
LangChain, google-genai, trafilatura and Playwright; the runtime; the page's
extraction). CPython's collector runs every 700 new objects and scans the
young ones each time: ~0.2 s of a ~1.6 s start-up, all of it on the path to
the first token. So the command pauses it from its first line (`paused`) to
the end of its start-up (`over`): for `ask`, when its answer's first event
comes (`render.show`, which also serves answers from a daemon); for `chat`,
once its pages are open and its prompt shows; for `mcp` and the side panel's
host (`extension_bridge`), once its runtime is warm; for any other command,
once its command line is read. Then what start-up made is frozen
(`gc.freeze`: never scanned again; the few cycles start-up left, ~2,400
objects, are not collected) and collection goes on as usual.

Standard library only: `chatagent.__main__` imports it before anything else.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


@contextmanager
def paused() -> Iterator[None]:
    """Around a command: the collector paused, and on again at the end at the
    latest. A process whose collector was off (someone else's choice) is left alone."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        over()


def over() -> None:
    """Start-up is over: freeze what it made and collect again. Idempotent;
    nothing to do where the collector runs."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
        if log.isEnabledFor(logging.DEBUG):  # counting the frozen objects walks them all: ~12 ms
            log.debug("start-up over after %d garbage collections: %d objects frozen, collecting again",
                      gc.get_stats()[0]["collections"], gc.get_freeze_count())
