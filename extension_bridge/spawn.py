"""The real host as a child process, started as Chrome starts it: for the
benchmark and the tests that talk to it over its pipes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from .install import EXTENSION_ORIGIN

ROOT = Path(__file__).resolve().parent.parent
# How Chrome would start the host from this checkout (with ROOT on PYTHONPATH).
HOST_COMMAND = (sys.executable, "-m", "extension_bridge")


@contextlib.asynccontextmanager
async def spawn_host(
    env: dict[str, str], *, stderr: int = asyncio.subprocess.PIPE, host: Sequence[str] | None = None,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`python -m extension_bridge` (or `host`) for the extension's origin,
    with `env` on top of this process's environment. At the end its stdin is
    closed (EOF: a clean exit); a host still running 10 s later is killed."""
    proc = await asyncio.create_subprocess_exec(
        *(host or HOST_COMMAND), EXTENSION_ORIGIN, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
    )
    try:
        yield proc
    finally:
        assert proc.stdin
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):  # it ended as the wait gave up
                proc.kill()
            await proc.wait()
