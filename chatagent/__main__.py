"""`python -m chatagent` and the `chatagent` command.

An `ask` first gives a running daemon its command line (`daemon.early`),
before the CLI and its settings are imported, so the pages open meanwhile."""

import sys


def main() -> int:
    from .daemon.early import head_start

    early = head_start(sys.argv[1:])
    from .cli import main as cli_main

    return cli_main(early=early)


if __name__ == "__main__":
    sys.exit(main())
