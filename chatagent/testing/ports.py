"""A free port on 127.0.0.1, for the local servers tests and benchmarks start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the OS's pick); nothing holds it afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
