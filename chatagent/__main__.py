"""`python -m chatagent` and the `chatagent` command.

An `ask` first gives a running daemon the ask (`daemon.early`), before the
CLI and its settings are imported: the daemon opens the pages at once, and
loads the ask's settings itself when it can."""

# Ctrl-C held from the first line, and delivered once the command's event loop runs
# (chatagent/ctrl_c.py). `_signal`: loaded at the interpreter's start, so this line takes
# no import, which a Ctrl-C could cut short before it is held.
import _signal

_signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})

import sys  # noqa: E402

from . import ctrl_c, startup  # noqa: E402
from .exit_status import EXIT_INTERRUPTED, INTERRUPTED  # noqa: E402  # now: the handler below imports nothing


def main() -> int:
    with startup.paused():  # the garbage collector, through the command's start-up (chatagent/startup.py)
        return _main()


def _main() -> int:
    try:
        if ctrl_c.lost_before_start():
            raise KeyboardInterrupt
        from .daemon.early import answer, head_start

        head = head_start(sys.argv[1:])
        early = None
        if head is not None:
            # The daemon loads the ask's settings itself: no CLI, no settings here.
            status = answer(head)
            if status is not None:
                return status
            if head.sock.fileno() != -1:  # the daemon waits for the ask's settings there
                early = head.sock
        from .cli import main as cli_main

        return cli_main(early=early)
    except KeyboardInterrupt:  # before the command's own handling (`process.run`), or after it
        sys.stderr.write(INTERRUPTED + "\n")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
