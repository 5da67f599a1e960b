"""`python -m chatagent ...` on a pseudo-terminal, its output fed to a
terminal emulator (pyte): the tests read what a person would see on the
screen, not the bytes that drew it (a streamed answer is redrawn many times).
The emulator answers cursor-position requests as a real terminal does.

Waits are for something to appear, with generous timeouts that only stop a
hang; nothing is timed."""

from __future__ import annotations

import os
import termios
import time
from collections.abc import Callable

import pexpect
import pyte

from conftest import ROOT
from warm_start import command

KEYS = {"up": "\x1b[A", "enter": "\r", "ctrl-c": "\x03", "ctrl-d": "\x04"}


class _Screen(pyte.HistoryScreen):
    def __init__(self, columns: int, lines: int, reply: Callable[[str], None]) -> None:
        super().__init__(columns, lines, history=5000)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data)  # e.g. the cursor position prompt_toolkit asks for


class Terminal:
    def __init__(self, *args: str, env: dict[str, str] | None = None, columns: int = 100, lines: int = 40) -> None:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **(env or {})}
        for key in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
            full_env.pop(key, None)  # the pty's size and nature decide
        argv = command(*args)
        self.child = pexpect.spawn(argv[0], argv[1:], cwd=str(ROOT), env=full_env,
                                   dimensions=(lines, columns))
        self.screen = _Screen(columns, lines, reply=lambda data: self.child.send(data.encode()))
        self._stream = pyte.ByteStream(self.screen)
        self.raw = b""  # every byte written to the terminal

    def _pump(self, wait_s: float) -> bool:
        """Read what is there (waiting up to `wait_s`); False at EOF."""
        try:
            data = self.child.read_nonblocking(65536, timeout=wait_s)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self._stream.feed(data)
        return True

    def text(self) -> str:
        """The screen with its scrollback, trailing spaces trimmed."""
        width = self.screen.columns
        history = ["".join(line[x].data for x in range(width)).rstrip() for line in self.screen.history.top]
        return "\n".join([*history, *(line.rstrip() for line in self.screen.display)]).rstrip()

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 120) -> str:
        """Wait until the screen shows `what`; returns the screen's text."""
        def check(text: str) -> bool:
            return what in text if isinstance(what, str) else what(text)

        end = time.monotonic() + timeout
        alive = True
        while time.monotonic() < end:
            screen = self.text()
            if check(screen):
                return screen
            if not alive:
                break
            alive = self._pump(0.2)
        raise AssertionError(f"the screen never showed {what!r}; it shows:\n{self.text()}")

    def wait_for_prompt(self, n: int, timeout: float = 120) -> str:
        """Wait for `chat`'s `n`th prompt, empty and waiting (its placeholder shown)."""
        def ready(text: str) -> bool:
            lines = text.splitlines()
            return sum(line.startswith("› ") for line in lines) >= n and lines[-1].startswith("› ask about")

        return self.wait_for(ready, timeout)

    def type(self, text: str) -> None:
        self.child.send(text.encode())

    def press(self, *keys: str) -> None:
        for key in keys:
            self.child.send(KEYS[key].encode())

    def line(self, text: str) -> None:
        """Type a line and press Enter."""
        self.type(text)
        self.press("enter")

    def wait_exit(self, timeout: float = 120) -> int:
        end = time.monotonic() + timeout
        while self._pump(0.2):
            if time.monotonic() > end:
                raise AssertionError(f"still running; the screen shows:\n{self.text()}")
        self.child.wait()
        return self.child.exitstatus if self.child.exitstatus is not None else 128 + (self.child.signalstatus or 0)

    def cooked(self) -> bool:
        """Whether the terminal echoes and edits lines, as a shell expects to find it."""
        lflag = termios.tcgetattr(self.child.child_fd)[3]
        return bool(lflag & termios.ECHO and lflag & termios.ICANON)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
