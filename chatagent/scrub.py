"""Secrets masked in everything that leaves the process.

A provider may echo what it was sent: a 400 that says `API key AIza… not
valid`, an error that quotes the request's headers. So whatever chatagent
writes goes through a `Scrubber` made from the settings' secrets
(`Settings.secret_values`: every key and token), which puts each one's mask
wherever it appears: `…` and its last four characters, as `chatagent config
show` shows a key (nothing of a secret of 8 characters or fewer).

Each exit applies it once, where it writes: the terminal and `--json`
(`render.EventPrinter`), a command's last error (`process.run`), the
daemon's frames (`daemon.server.Daemon`), MCP tool results, tool errors and
progress (`mcp_server`), the extension's frames
(`extension_bridge.protocol.FrameWriter`) and log lines (`LogScrubber`, on
the stderr handler).

Values shorter than 8 characters are not looked for: a one-letter token
would be masked in every word that has the letter. An answer streams as
tokens that may split a secret in two: `EventStream` holds back the end of
a token that could begin one (only that) until the next event says.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .events import Event
    from .settings import Settings

    M = TypeVar("M", bound=BaseModel)

MIN_SECRET_CHARS = 8  # shorter values are not masked: they would mask ordinary words
SHOWN_CHARS = 4


def tail(secret: str) -> str:
    """What of a secret may be shown: its last 4 characters when it has more
    than 8 (the rest is still out of reach), else nothing."""
    return secret[-SHOWN_CHARS:] if len(secret) > 2 * SHOWN_CHARS else ""


def mask(secret: str) -> str:
    """What stands for `secret` in chatagent's output."""
    shown = tail(secret)
    return f"…{shown}" if shown else "[secret]"


class Scrubber:
    """Masks the given secrets wherever they appear: in text, in JSON text
    (where a secret is written escaped) and in every field of a model.
    Immutable; falsy when there is nothing to mask, and then each method
    returns what it was given."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that contains another is masked whole.
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True))
        # Text may hold JSON (an MCP result's text is), so a secret is looked for as
        # written there too; in a JSON document, one level of escaping deeper.
        self._text = _written(self.secrets, escaped=(0, 1))
        self._json = _written(self.secrets, escaped=(1, 2))
        self._json_bytes = tuple((s.encode(), m.encode()) for s, m in self._json)

    @classmethod
    def of(cls, settings: Settings) -> "Scrubber":
        return cls(settings.secret_values())

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        return _replaced(text, self._text)

    def json(self, data: bytes) -> bytes:
        """A JSON document in UTF-8 (a frame), with the secrets masked as JSON writes them."""
        return _replaced(data, self._json_bytes)

    def model(self, model: M) -> M:
        """`model` with the secrets masked in every field; itself when none is there."""
        if not self.secrets:
            return model
        raw = model.model_dump_json()
        clean = _replaced(raw, self._json)
        return model if clean is raw else type(model).model_validate_json(clean)

    def unfinished(self, text: str) -> int:
        """How many of the last characters of `text` could be the start of a
        secret (a secret's length at most)."""
        longest = 0
        for secret in self.secrets:
            i = text.find(secret[0], max(0, len(text) - len(secret) + 1))
            while i != -1:
                if secret.startswith(text[i:]):
                    longest = max(longest, len(text) - i)
                    break
                i = text.find(secret[0], i + 1)
        return longest


def _written(secrets: tuple[str, ...], *, escaped: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
    """Each secret and its mask as they are written inside JSON strings
    escaped this many times over, with and without ASCII escapes (for most
    keys all the same: then once)."""
    pairs: dict[str, str] = {}
    for secret in secrets:
        for times in escaped:
            for ascii_only in (False, True):
                pairs.setdefault(_escape(secret, times, ascii_only), _escape(mask(secret), times, ascii_only))
    return tuple(pairs.items())


def _escape(text: str, times: int, ascii_only: bool) -> str:
    for _ in range(times):
        text = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
    return text


S = TypeVar("S", str, bytes)


def _replaced(text: S, pairs: tuple[tuple[S, S], ...]) -> S:
    for secret, shown in pairs:
        if secret in text:
            text = text.replace(secret, shown)
    return text


NO_SECRETS = Scrubber()


class EventStream:
    """One question's events, as they are written out, with the secrets
    masked, a secret split between two `token` events included: the end of a
    token that could be the start of a secret is held back, and goes out with
    the next event (or `end`). Other text is never held back."""

    def __init__(self, scrubber: Scrubber) -> None:
        self.scrubber = scrubber
        self._held = ""

    def __call__(self, event: Event) -> list[Event]:
        """What to write for `event` now: none, one or two events."""
        from .events import Token

        scrubber = self.scrubber
        if not scrubber:
            return [event]
        if isinstance(event, Token):
            text = scrubber.text(self._held + event.text)
            ready = len(text) - scrubber.unfinished(text)
            self._held = text[ready:]
            if not ready:
                return []
            return [event if text[:ready] == event.text else Token(text=text[:ready])]
        return [*self.end(), scrubber.model(event)]

    def end(self) -> list[Event]:
        """The text held back, if any: the stream ended without another event."""
        from .events import Token

        held, self._held = self._held, ""
        return [Token(text=held)] if held else []


# --- where no runtime is at hand: log lines, a command's last error ---------------------


Secrets = Callable[[], Scrubber]  # the secrets as they are when something is written


def configured() -> Scrubber:
    """A scrubber of the secrets the settings hold now: the environment's
    and the settings file's (flags give none). Loaded again only when either
    changed; nothing to mask when they cannot be loaded (what runs then fails
    on that, saying so)."""
    from .locations import config_path

    try:
        found = os.stat(config_path())
        stamp: tuple[int, ...] | None = (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size)
    except OSError:
        stamp = None
    return _configured(tuple(os.environ.items()), stamp)


@functools.lru_cache(maxsize=1)
def _configured(environment: tuple[tuple[str, str], ...], stamp: tuple[int, ...] | None) -> Scrubber:
    from .errors import ChatAgentError
    from .settings import Settings

    try:
        return Scrubber.of(Settings.load())
    except ChatAgentError:
        return NO_SECRETS


class LogScrubber(logging.Filter):
    """On a handler: each record's message, traceback and stack with the
    secrets masked (by default those `configured` finds, as they are when the
    record is written)."""

    def __init__(self, secrets: Secrets = configured) -> None:
        super().__init__()
        self.secrets = secrets
        self._busy = threading.local()  # loading the settings may log: that record is let through as it is

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(self._busy, "on", False):
            return True
        self._busy.on = True
        try:
            scrubber = self.secrets()
        finally:
            self._busy.on = False
        if not scrubber:
            return True
        message = record.getMessage()
        clean = scrubber.text(message)
        if clean is not message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrubber.text(record.exc_text)
        if record.stack_info:
            record.stack_info = scrubber.text(record.stack_info)
        return True
