"""Text for a person's terminal.

Pages, URLs and models' replies are untrusted: nothing they carry may drive the
terminal (escape sequences, carriage returns, bidi overrides) or be read as
Rich markup. Everything printed for a person goes through `sanitize`, and the
printers build rich `Text` objects (styles as spans) rather than markup
strings, so data is never parsed. Answers shown as Markdown go through
`safe_markdown.SafeMarkdown`, built on `sanitize`.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

if TYPE_CHECKING:  # rich is imported when text is made: `ask` sends its request to a daemon before that
    from rich.console import Console
    from rich.style import StyleType
    from rich.text import Text

    Part = str | tuple[str, StyleType]


try:
    import termios
except ImportError:  # not on Windows
    termios = None  # type: ignore[assignment]

# C0 controls but tab and newline, DEL, C1 controls (CSI, OSC, ... in 8-bit
# form), and the bidi embeddings, overrides and isolates that can make text
# display in another order than it is ("Trojan Source").
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What JSON may carry raw but a terminal reading the JSON should not see raw:
# JSON itself escapes C0 controls; these are escaped too (the content is unchanged).
_JSON_RAW_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_LINK_SCHEMES = frozenset({"http", "https", "file"})


def sanitize(text: str) -> str:
    """`text` without the characters that could drive or reorder a terminal;
    newlines and tabs stay."""
    return _UNSAFE.sub("", text)


def json_safe(line: str) -> str:
    """A JSON document with the remaining terminal-unsafe characters written as
    `\\uXXXX` escapes: it decodes to exactly the same value. Only valid on JSON
    text (those characters can only appear inside its strings)."""
    return _JSON_RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)




def safe_text(*parts: Part) -> Text:
    """A `Text` from plain strings and (string, style) pairs, each sanitized;
    never parsed as markup."""
    from rich.text import Text

    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(sanitize(part[0]), style=part[1])
        else:
            out.append(sanitize(part))
    return out


def link(url: str, style: StyleType = "") -> Text:
    """`url` as text that terminals may make clickable (OSC 8), only for the
    schemes a person would expect to open."""
    clean = sanitize(url)
    try:
        scheme = urlsplit(clean).scheme.lower()
    except ValueError:
        scheme = ""
    from rich.style import Style
    from rich.text import Text

    base = Style.parse(style) if isinstance(style, str) else style
    if scheme in _LINK_SCHEMES:
        base = base + Style(link=clean)
    return Text(clean, style=base)


def stderr_console() -> Console:
    """Where messages to a person go (notes, errors, spinners): stderr, each
    message one line however wide the terminal (easy to grep in logs)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


class SanitizingFormatter(logging.Formatter):
    """Log records often quote page data (URLs, titles, errors): printed on
    stderr, they must not carry control characters either."""

    def format(self, record: logging.LogRecord) -> str:
        return sanitize(super().format(record))


@contextmanager
def no_echo(stream: TextIO | None = None) -> Iterator[None]:
    """Keys typed meanwhile are not echoed among the output (on the spinner's
    line, inside an answer), nor edited by the terminal: they wait, as typed
    (Enter, Ctrl-D and arrows included), for the next prompt to read. Ctrl-C
    still interrupts. Does nothing when `stream` is not a terminal."""
    stream = stream or sys.stdin
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd) if termios is not None and stream.isatty() else None
    except (AttributeError, OSError, ValueError):
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)  # not TCSAFLUSH: what was typed stays
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
