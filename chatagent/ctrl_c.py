"""Ctrl-C through a command's start: held, then delivered where it is safe.

CPython raises KeyboardInterrupt in whatever Python code the main thread runs
when Ctrl-C comes. In an import that can be importlib's clean-up of a module
lock, right after it took the interpreter's import lock and before its `try`:
the exception is "ignored", the lock is never released, and the next import
made by another thread (the runtime's worker threads) waits forever. An
import cut short in a library's native code can also crash the process
(pydantic-core's panics). So a command holds Ctrl-C (the signal is blocked:
it waits, pending) from its first line (`chatagent.__main__`), through its
imports, and `process.run` delivers it once the command's event loop runs
with asyncio's own handler, which cancels the command's task at its next
`await` instead of raising where the code happens to be. A command without
an event loop (`config`) gets it as it starts.

Standard library only: the modules the interpreter loaded at its start.
"""

import _imp
import _signal


def deliver() -> None:
    """A Ctrl-C held is handled now, and any later one as it comes."""
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})


def lost_before_start() -> bool:
    """Whether a Ctrl-C came before chatagent's first line and CPython dropped
    it in importlib's clean-up ("Exception ignored in: <function
    _get_module_lock.<locals>.cb>"), leaving the import lock taken. The lock
    is given back (no thread imports yet, so it is this one's); the command
    then ends as interrupted, as the user asked, instead of hanging at its
    first import in a thread."""
    lost = False
    while _imp.lock_held():
        _imp.release_lock()
        lost = True
    return lost
