"""`chatagent daemon start|stop|status|run`: what each prints, and its exit status."""

from __future__ import annotations

import json
import sys
import time

from rich.console import Console

from ..settings import Settings
from ..terminal import json_safe, safe_text, stderr_console
from . import client
from .paths import DaemonPaths
from .protocol import Status, refuse_cdp

EXIT_OK, EXIT_NOT_RUNNING = 0, 3  # as `chatagent daemon --help` says (cli.DAEMON_EXIT_STATUS)


async def daemon_command(action: str, settings: Settings, *, json_mode: bool = False) -> int:
    # Only what starts a daemon makes its directory: a look (`status`, `stop`) leaves no trace.
    paths = DaemonPaths.locate(create=action in ("start", "run"))
    out = Console(highlight=False, soft_wrap=True)
    if action == "run":
        return await _run(settings, paths)
    if action == "start":
        refuse_cdp(settings)
        running = await client.status(paths)
        if running is not None:
            out.print(safe_text(f"The chatagent daemon is already running (pid {running.pid})."))
            return EXIT_OK
        started = await client.ensure_running(paths)
        out.print(safe_text(
            f"Started the chatagent daemon (pid {started.pid}): `chatagent ask` is answered by it from now on. "
            f"It stops after {_duration(started.idle_timeout_s)} without an ask (daemon_idle), "
            "or with `chatagent daemon stop`."
        ))
        return EXIT_OK
    if action == "stop":
        pid = await client.stop(paths)
        out.print(safe_text(f"Stopped the chatagent daemon (pid {pid})." if pid else "No chatagent daemon is running."))
        return EXIT_OK
    running = await client.status(paths)
    if json_mode:
        shown = {"running": True, **running.model_dump()} if running else {
            "running": False, "socket": str(paths.socket), "log": str(paths.log)}
        sys.stdout.write(json_safe(json.dumps(shown, indent=2)) + "\n")
    elif running is None:
        out.print(safe_text("No chatagent daemon is running (`chatagent daemon start` starts one)."))
    else:
        _print_status(out, running)
    return EXIT_OK if running else EXIT_NOT_RUNNING


def _print_status(out: Console, s: Status) -> None:
    rows = [
        ("running", f"pid {s.pid}, up {_duration(time.time() - s.started_at)}, {s.browser}"),
        ("asks", f"{s.asks} so far, {s.active} in progress"),
        ("idle", f"{_duration(s.idle_s)} of {_duration(s.idle_timeout_s)} (daemon_idle)"),
        ("model", f"{s.model} (the default; each ask says which model answers it)"),
        ("runs", s.build),
        ("socket", s.socket),
        ("log", s.log),
    ]
    for key, value in rows:
        out.print(safe_text((f"{key:8}", "dim"), value))


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


async def _run(settings: Settings, paths: DaemonPaths) -> int:
    from .server import run_daemon  # the runtime, the browser and the text pipeline: only here

    err = stderr_console()

    def ready(s: Status) -> None:
        err.print(safe_text(f"The chatagent daemon is ready (pid {s.pid}) at {s.socket}; "
                            f"it stops after {_duration(s.idle_timeout_s)} without an ask."))

    reason = await run_daemon(settings, paths, ready=ready)
    err.print(safe_text(f"The chatagent daemon stopped: {reason}."))
    return EXIT_OK
