"""`python -m chatagent …` for the tests, forked from an interpreter that has
already imported chatagent: the same command in a process of its own (its
own stdin, stdout and stderr, environment, working directory, exit status and
signals), without the ~1.3 s of CPU its imports take in a fresh interpreter.
The suite starts a few hundred of these on 2 cores; see docs/architecture.md,
"What the suite costs".

`command("ask", …)` gives the argv to start, as `[sys.executable, "-m",
"chatagent", "ask", …]` would be: a small launcher (`warm_launcher.py`, the
standard library only, started with `-S`) hands its stdin, stdout and stderr,
environment, working directory and arguments to this worker's warm server,
which forks the command; the launcher relays the signals it is sent
(SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT) and exits as the command did. Killed,
the launcher takes its command down with it.

Tests of the start itself (what is imported, Ctrl-C during the imports, the
first lines run) start a fresh interpreter, as does everything when
CHATAGENT_TEST_COLD_START=1 is set (the same suite, the slow way)."""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import runpy
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LAUNCHER = HERE / "warm_launcher.py"
WARM_SOCKET_ENV = "CHATAGENT_TEST_WARM_SOCKET"

# What the commands import, imported once before any fork (lazy imports of the CLI included).
WARM_MODULES = (
    "chatagent.cli", "chatagent.runtime", "chatagent.agent", "chatagent.cache",
    "chatagent.context", "chatagent.extraction", "chatagent.hooks", "chatagent.models", "chatagent.models.extractive",
    "chatagent.models.gemini", "chatagent.browser.playwright", "chatagent.chat", "chatagent.render", "chatagent.blocks",
    "chatagent.mcp_server", "chatagent.daemon.client", "chatagent.daemon.command", "chatagent.models.catalog",
    "extension_bridge.host",
    "rich.console", "rich.markdown", "rich.table", "rich.panel", "rich.live",
)


def command(*args: str, module: str = "chatagent") -> list[str]:
    """The argv that runs `python -m MODULE ARGS…`: forked from the warm server where there is one."""
    path = os.environ.get(WARM_SOCKET_ENV)
    if not path:
        return [sys.executable, "-m", module, *args]
    return [sys.executable, "-S", str(LAUNCHER), path, module, *args]


class WarmServer:
    """One per test worker: `python tests/warm_start.py SOCKET`, then forks on each connection."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="chatagent-warm-")
        self.path = os.path.join(self._dir, "s")
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), self.path], cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
        deadline = time.monotonic() + 120
        while not os.path.exists(self.path):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the tests' warm server did not start (exit {self._proc.poll()})")
            time.sleep(0.05)

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=30)
        for name in os.listdir(self._dir):
            os.unlink(os.path.join(self._dir, name))
        os.rmdir(self._dir)


def _serve(path: str) -> None:
    import gc
    import importlib
    import selectors

    for name in WARM_MODULES:
        importlib.import_module(name)
    gc.freeze()  # what every command shares is not scanned again in each
    # A child's exit, as waitpid gives it, goes to its launcher (the signal wakes the loop).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(128)
    os.rename(path + ".tmp", path)  # the socket appears when it is ready
    parent = os.getppid()
    children: dict[int, socket.socket] = {}
    ready = selectors.DefaultSelector()
    ready.register(server, selectors.EVENT_READ)
    ready.register(wake_r, selectors.EVENT_READ)
    while True:
        events = ready.select(timeout=1.0)
        if os.getppid() != parent:  # its test worker is gone
            os._exit(0)
        for key, _ in events:
            if key.fileobj is server:
                conn, _ = server.accept()
                conn.setblocking(True)
                try:
                    request, fds = _receive(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    for other in (server, ready, *children.values()):
                        other.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    _run(conn, request, fds)  # never returns
                children[pid] = conn
                for fd in fds:
                    os.close(fd)
            else:
                os.read(wake_r, 4096)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
                with contextlib.suppress(OSError):
                    conn.sendall(b"exit %d\n" % code)
                conn.close()


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    if len(fds) != 3 or len(data) < 4:
        raise ValueError("a request without its three file descriptors")
    (size,) = struct.unpack("!I", data[:4])
    data = data[4:]
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise ValueError("a request cut short")
        data += more
    return json.loads(data), fds


def _run(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the command its launcher was started as, and exit as it would."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter has it
    os.setpgid(0, 0)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    encoding = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    # The standard streams as a fresh interpreter opens them (stderr: line-buffered, backslashreplace).
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.open(0, "rb", closefd=False), encoding=encoding)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.open(1, "wb", closefd=False, buffering=0 if unbuffered else -1), encoding=encoding,
        line_buffering=os.isatty(1), write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.open(2, "wb", closefd=False, buffering=0 if unbuffered else -1), encoding=encoding,
        errors="backslashreplace", line_buffering=True, write_through=unbuffered)

    def relay() -> None:  # the launcher's signals, and its death
        while True:
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            if not data:
                os.kill(os.getpid(), signal.SIGKILL)
            for signum in data:
                os.kill(os.getpid(), signum)

    threading.Thread(target=relay, daemon=True).start()
    sys.argv = [request["module"], *request["args"]]
    code: int = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _finish()
        os.kill(os.getpid(), signal.SIGINT)  # as Python does for an uncaught KeyboardInterrupt
    except BaseException:
        traceback.print_exc()
        code = 1
    _finish()
    os._exit(code & 0xFF)


def _finish() -> None:
    """What the interpreter does at its exit."""
    threading._shutdown()  # noqa: SLF001 - what the interpreter does at exit: wait for non-daemon threads
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    _serve(sys.argv[1])
