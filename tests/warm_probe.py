"""A command for the tests of the warm start (test_warm_start.py): what it was
given, and how it ends."""

import os
import signal
import sys
import time


def main() -> None:
    mode, arg = sys.argv[1:3]
    if mode == "echo":
        given = sys.stdin.read()
        print(f"args={sys.argv[1:]} cwd={os.getcwd()} probe={os.environ.get('PROBE')} stdin={given!r}")
        print("to stderr", file=sys.stderr)
        sys.exit(int(arg))
    if mode == "wait":  # says its pid, then waits for a signal
        if arg == "handle":
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        print(os.getpid(), flush=True)
        time.sleep(120)


if __name__ == "__main__":
    main()
