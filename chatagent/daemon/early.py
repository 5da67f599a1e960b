"""`chatagent ask`'s head start with a running daemon.

Loading the settings and the CLI takes an `ask` process ~0.25 s; a warm
daemon opens a page in ~0.2 s. So before loading them, `head_start` connects
to the daemon and sends the command line (`protocol.OpenRequest`, written
here as plain JSON: this module imports only the standard library and
`paths`), and the daemon opens the pages meanwhile. The ask itself follows on
the same connection (`client.ask`), with its settings and its targets as
resolved here; the daemon uses what it opened only if they match, and the
settings check is the same as without a head start.

No daemon, a directory or socket that is not private, any error: None, and
`ask` goes on as without it.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence

from .paths import DaemonError, DaemonPaths, check_private, peer

CONNECT_TIMEOUT_S = 0.5


def head_start(argv: Sequence[str]) -> socket.socket | None:
    """A connection to the running daemon with `argv` sent on it, if `argv` is
    an `ask` and a daemon is listening; the caller hands it to `client.ask`
    (or closes it: the daemon then drops what it opened)."""
    if next((a for a in argv if not a.startswith("-")), None) != "ask" or {"-h", "--help"} & set(argv):
        return None
    sock = None
    try:
        paths = DaemonPaths.locate(create=False)
        check_private(paths.socket, directory=False)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(str(paths.socket))
        found = peer(sock)
        if found is not None and found[1] != os.getuid():
            raise DaemonError("the daemon's socket is served by another user's process")  # `client.connect` says so
        frame = {"type": "open", "argv": list(argv), "cwd": os.getcwd()}
        sock.sendall(json.dumps(frame).encode() + b"\n")
        sock.setblocking(False)
        return sock
    except (OSError, DaemonError):
        if sock is not None:
            sock.close()
        return None
