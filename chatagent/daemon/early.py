"""`chatagent ask`'s head start with a running daemon.

Loading the CLI and the settings takes an `ask` process ~0.25 s of CPU; a
warm daemon opens a page in ~0.2 s. So before loading them, `head_start`
connects to the daemon and sends the command line (`protocol.OpenRequest`,
written here as plain JSON: this module imports only the standard library and
`paths`), and the daemon opens the pages at once. If this process's settings
inputs (`paths.settings_inputs`: CHATAGENT_* and the providers' variables,
where the settings file is) are the daemon's, the daemon loads the settings
from the command line itself, as this process would, and answers (`answer`):
this process never loads the CLI or the settings. Otherwise the ask loads
them and sends its request on the same connection (`client.ask`); the daemon
uses what it opened only if it matches, with the settings check as without a
head start.

No daemon, a directory or socket that is not private, any error: None, and
`ask` goes on as without it.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Sequence

from .paths import BUILD, DaemonError, DaemonPaths, check_private, peer, settings_inputs

CONNECT_TIMEOUT_S = 0.5
FIRST_REPLY_S = 5.0  # the daemon replies to a head start as soon as it has read it: this is for one that hangs
MAX_FIRST_REPLY_BYTES = 64 << 10


def head_start(argv: Sequence[str]) -> socket.socket | None:
    """A connection to the running daemon with `argv` sent on it, if `argv` is
    an `ask` and a daemon is listening; the caller hands it to `answer`."""
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
        cwd = os.getcwd()
        frame = {"type": "open", "build": BUILD, "inputs": settings_inputs(os.environ, cwd), "argv": list(argv),
                 "cwd": cwd}
        sock.sendall(json.dumps(frame).encode() + b"\n")
        return sock
    except (OSError, DaemonError):
        if sock is not None:
            sock.close()
        return None


def answer(sock: socket.socket, *, loaded: Callable[[], None] = lambda: None) -> int | None:
    """The exit status of the ask the daemon answers from its command line,
    shown here as `chatagent ask` shows an answer. None if the ask must load
    its settings (the CLI goes on with `sock` if it is still open: the daemon
    waits for its request there) or answer in its own process. `loaded` is
    called once what showing an answer needs is imported."""
    from ..process import answer_status, run, setup_logging
    from ..scrub import NO_SECRETS
    from .client import answer_opened
    from .protocol import Answering, AskNeeded, ProtocolError, parse_reply

    loaded()
    try:
        reply = parse_reply(_first_frame(sock))
    except (OSError, ProtocolError):  # a daemon that hangs, goes, or speaks another protocol
        sock.close()
        return None
    if isinstance(reply, AskNeeded):
        return None
    if not isinstance(reply, Answering):  # refused: the CLI asks again and says why
        sock.close()
        return None
    # This process never loads the settings (their secrets are in the environment only,
    # and it calls no provider); the daemon masked them in what it sends.
    setup_logging(reply.verbose, secrets=lambda: NO_SECRETS)

    async def shown() -> int | None:
        printer = await answer_opened(sock, json_mode=reply.json_mode)
        return None if printer is None else answer_status(printer)

    return run(shown, verbose=reply.verbose, secrets=lambda: NO_SECRETS)


def _first_frame(sock: socket.socket) -> bytes:
    """The daemon's first reply, and not a byte more: what follows an
    `ask_needed` belongs to the CLI's reader. A byte at a time: the frame is
    a short line."""
    sock.settimeout(FIRST_REPLY_S)
    frame = bytearray()
    while not frame.endswith(b"\n"):
        byte = sock.recv(1)
        if not byte:
            raise ConnectionResetError("the daemon closed the connection")
        frame += byte
        if len(frame) > MAX_FIRST_REPLY_BYTES:
            raise ConnectionError("the daemon's first reply is too long")
    sock.setblocking(False)
    return bytes(frame)
