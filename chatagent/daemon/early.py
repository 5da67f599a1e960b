"""`chatagent ask`'s head start with a running daemon.

Loading the CLI and the settings takes an `ask` process ~0.25 s of CPU; a
warm daemon opens a page in ~0.2 s. So before loading them, `head_start`
reads the command line (`parse_ask`: the CLI's own arguments for `ask`,
`ask_args`) and sends the daemon the ask (`ask_request`: a
`protocol.AskRequest`, written here as plain JSON, for this module imports
only the standard library, `ask_args` and `paths`); the daemon opens the
pages at once. If this process's settings inputs (`paths.settings_inputs`:
CHATAGENT_* and the providers' variables, where the settings file is) are
the daemon's, the daemon loads the ask's settings itself, as this process
would, and answers (`answer`): this process never loads the CLI or the
settings. Otherwise the CLI loads them and sends them on the same
connection (`client.ask`).

Not an ask the daemon can take (another command, --cdp, --help, a command
line the CLI refuses: it says why), no daemon, a directory or socket that is
not private, any error: None, and the CLI goes on as without it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..ask_args import ASK_FLAGS, add_agent_args, add_question
from .paths import BUILD, DaemonError, DaemonPaths, check_private, peer, settings_inputs

CONNECT_TIMEOUT_S = 0.5
FIRST_REPLY_S = 5.0  # the daemon replies to an ask as soon as it knows its settings: this is for one that hangs
MAX_FIRST_REPLY_BYTES = 64 << 10


class HeadStart(NamedTuple):
    """A connection to the daemon with the ask sent on it, and how the ask shows its answer."""

    sock: socket.socket
    json_mode: bool
    verbose: int


class _NotAnAsk(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Says nothing and exits nowhere: what it refuses, the CLI says. No
    abbreviations: one of `ask`'s options (`--time`) is the CLI's to expand,
    as it alone knows every option it could stand for (`--version`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _NotAnAsk(message)


def parse_ask(argv: Sequence[str]) -> argparse.Namespace | None:
    """`chatagent [-v] ask ...` read as the CLI reads it (`ask_args`; -v
    before and after the command, as `cli.build_parser`); None if it is
    anything else, or has no target, or its question is blank."""
    top = _Parser(prog="chatagent", add_help=False, allow_abbrev=False)
    top.add_argument("-v", "--verbose", action="count", default=0)
    ask = top.add_subparsers(dest="command", parser_class=_Parser).add_parser("ask", add_help=False, allow_abbrev=False)
    ask.add_argument("-v", "--verbose", dest="verbose_after", action="count", default=0)
    # Help is never shown here; a --model no provider serves is the daemon's to find (it loads the settings).
    add_agent_args(ask, model=str)
    add_question(ask)
    try:
        args = top.parse_args(argv)
    except _NotAnAsk:
        return None
    if args.command != "ask" or args.cdp or not args.targets or not args.question.strip():
        return None
    return args


def ask_request(args: argparse.Namespace, *, cwd: str, env: Mapping[str, str]) -> bytes:
    """The `protocol.AskRequest` frame of an `ask` command line (`args`, as
    `parse_ask` or the CLI read it) run in `cwd` with `env`."""
    # The daemon resolves the paths from `cwd`; "~" is this user's home as this process knows it.
    targets = [os.path.expanduser(t) if t.startswith("~") else t for t in args.targets]
    frame = {"type": "ask", "build": BUILD, "inputs": settings_inputs(env, cwd), "cwd": cwd,
             "targets": targets, "question": args.question,
             "flags": {key: getattr(args, key) for key in ASK_FLAGS}}
    return json.dumps(frame).encode() + b"\n"


def head_start(argv: Sequence[str]) -> HeadStart | None:
    """A connection to the running daemon with the ask of `argv` sent on it,
    if `argv` is an ask and a daemon is listening; the caller hands it to `answer`."""
    if {"-h", "--help"} & set(argv) or (args := parse_ask(argv)) is None:
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
        sock.sendall(ask_request(args, cwd=os.getcwd(), env=os.environ))
        return HeadStart(sock, args.json, args.verbose + args.verbose_after)
    except (OSError, DaemonError):
        if sock is not None:
            sock.close()
        return None


def answer(head: HeadStart) -> int | None:
    """The exit status of the ask, when the daemon loaded its settings itself
    (`protocol.Answering`), shown here as `chatagent ask` shows an answer.
    None if the ask must send its settings (the CLI goes on with the socket
    if it is still open: the daemon waits for them there) or answer in its
    own process."""
    from ..process import answer_status, run, setup_logging
    from ..scrub import NO_SECRETS
    from .client import answer_opened
    from .protocol import Answering, ProtocolError, SettingsNeeded, parse_reply

    sock = head.sock
    try:
        reply = parse_reply(_first_frame(sock))
    except (OSError, ProtocolError):  # a daemon that hangs, goes, or speaks another protocol
        sock.close()
        return None
    if isinstance(reply, SettingsNeeded):
        return None
    if not isinstance(reply, Answering):  # refused: the CLI asks again and says why
        sock.close()
        return None
    # This process never loads the settings (their secrets are in the environment only,
    # and it calls no provider); the daemon masked them in what it sends.
    setup_logging(head.verbose, secrets=lambda: NO_SECRETS)

    async def shown() -> int | None:
        printer = await answer_opened(sock, json_mode=head.json_mode)
        return None if printer is None else answer_status(printer)

    return run(shown, verbose=head.verbose, secrets=lambda: NO_SECRETS)


def _first_frame(sock: socket.socket) -> bytes:
    """The daemon's first reply, and not a byte more: what follows a
    `settings_needed` belongs to the CLI's reader. A byte at a time: the frame
    is a short line."""
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
