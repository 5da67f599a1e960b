"""`python -S warm_launcher.py SOCKET MODULE ARGS…`: `python -m MODULE ARGS…`, forked
by the tests' warm server (tests/warm_start.py). The standard library only: this
process starts in ~15 ms of CPU where chatagent's imports take ~1.3 s.

It hands the server its stdin, stdout and stderr, environment, working
directory and arguments; relays SIGINT, SIGTERM, SIGHUP and SIGWINCH to the
command; and exits with its status (or dies of the signal that ended it). If
the launcher is killed, the command is too (it watches the connection)."""

import json
import os
import signal
import socket
import struct
import sys

RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGQUIT)


def main() -> None:
    path, module, *args = sys.argv[1:]
    for fd in range(3):  # one started with a standard stream closed: the command gets /dev/null there
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    signal.pthread_sigmask(signal.SIG_BLOCK, RELAYED)  # until the request is sent: then relayed
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    body = json.dumps({"module": module, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()

    def relay(signum: int, _frame: object) -> None:
        try:
            conn.sendall(bytes([signum]))
        except OSError:
            pass

    head = struct.pack("!I", len(body)) + body
    socket.send_fds(conn, [head[:1 << 15]], [0, 1, 2])
    if len(head) > 1 << 15:
        conn.sendall(head[1 << 15:])
    for signum in RELAYED:
        signal.signal(signum, relay)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, RELAYED)
    os.closerange(0, 3)  # the command holds them now: their readers see it end when it does
    reply = b""
    while True:
        chunk = conn.recv(64)
        if not chunk:
            break
        reply += chunk
    code = int(reply.split()[1]) if reply.startswith(b"exit ") else -signal.SIGKILL
    if code >= 0:
        os._exit(code)
    # Killed by a signal: die of the same one, so the launcher's parent sees what killed the command.
    signal.signal(-code, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that does not end a process (SIGWINCH …)


if __name__ == "__main__":
    main()
