"""`python -m chatagent` and the `chatagent` command.

An `ask` first gives a running daemon the ask (`daemon.early`), before the
CLI and its settings are imported: the daemon opens the pages at once, and
loads the ask's settings itself when it can."""

# `_signal`, not `signal`: the interpreter loaded it at its start, so this takes no import
# (the `signal` module's own takes ~0.5 ms, and a Ctrl-C in an import can be lost in
# importlib's lock clean-up: "Exception ignored", then the answer as if none had come).
import _signal

# Ctrl-C held from the first line (see _hold_ctrl_c): an import below cut short by it would
# end in a traceback, before `_main` can say "Interrupted.".
_signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})

import sys  # noqa: E402

from . import startup  # noqa: E402
from .exit_status import EXIT_INTERRUPTED, INTERRUPTED  # noqa: E402  # now: the handler below imports nothing


def main() -> int:
    with startup.paused():  # the garbage collector, through the command's start-up (chatagent/startup.py)
        return _main()


def _main() -> int:
    _hold_ctrl_c()
    try:
        from .daemon.early import answer, head_start

        head = head_start(sys.argv[1:])
        early = None
        if head is not None:
            # The daemon loads the ask's settings itself: no CLI, no settings here.
            status = answer(head, loaded=_deliver_ctrl_c)
            if status is not None:
                return status
            if head.sock.fileno() != -1:  # the daemon waits for the ask's settings there
                early = head.sock
            _hold_ctrl_c()
        from .cli import main as cli_main

        _deliver_ctrl_c()
        return cli_main(early=early)
    except KeyboardInterrupt:  # before a command's own handling (`process.run`)
        sys.stderr.write(INTERRUPTED + "\n")
        return EXIT_INTERRUPTED


# Ctrl-C is held while a command's modules are imported, and delivered (as
# KeyboardInterrupt, handled above) once they are: an import cut short inside
# a library's native code can crash the process (pydantic-core's panics), and
# one cut short anywhere can fail when tried again. The imports take ~0.3 s.
def _hold_ctrl_c() -> None:
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})


def _deliver_ctrl_c() -> None:
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})


if __name__ == "__main__":
    sys.exit(main())
