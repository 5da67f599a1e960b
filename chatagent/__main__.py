"""`python -m chatagent` and the `chatagent` command.

An `ask` first gives a running daemon its command line (`daemon.early`),
before the CLI and its settings are imported: the daemon opens the pages at
once, and answers from the command line when it can."""

import sys


def main() -> int:
    try:
        from .daemon.early import answer, head_start

        early = head_start(sys.argv[1:])
        if early is not None:
            status = answer(early)  # the daemon answers from the command line: no CLI, no settings here
            if status is not None:
                return status
            if early.fileno() == -1:
                early = None
        from .cli import main as cli_main

        return cli_main(early=early)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (`process.run`), e.g. while importing it
        from .process import EXIT_INTERRUPTED, interrupted

        interrupted()
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
