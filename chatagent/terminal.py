"""Text for a person's terminal.

Pages, URLs and models' replies are untrusted: nothing they carry may drive the
terminal (escape sequences, carriage returns, bidi overrides) or be read as
Rich markup. Everything printed for a person goes through `sanitize`, and the
printers build rich `Text` objects (styles as spans) rather than markup
strings, so data is never parsed. Answers shown as Markdown (`SafeMarkdown`)
are parsed as Markdown only, and what the parser makes of them is cleaned again.
"""

from __future__ import annotations

import html
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, TextIO
from urllib.parse import urlsplit

from markdown_it.token import Token
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement
from rich.segment import Segment
from rich.style import Style, StyleType
from rich.table import Table
from rich.text import Text

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
_TAG = re.compile(r"<[^>]*>")
_CODE = re.compile(r"<(script|style)\b.*?(</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def sanitize(text: str) -> str:
    """`text` without the characters that could drive or reorder a terminal;
    newlines and tabs stay."""
    return _UNSAFE.sub("", text)


def json_safe(line: str) -> str:
    """A JSON document with the remaining terminal-unsafe characters written as
    `\\uXXXX` escapes: it decodes to exactly the same value. Only valid on JSON
    text (those characters can only appear inside its strings)."""
    return _JSON_RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


Part = str | tuple[str, StyleType]


def safe_text(*parts: Part) -> Text:
    """A `Text` from plain strings and (string, style) pairs, each sanitized;
    never parsed as markup."""
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
    base = Style.parse(style) if isinstance(style, str) else style
    if scheme in _LINK_SCHEMES:
        base = base + Style(link=clean)
    return Text(clean, style=base)


class SanitizingFormatter(logging.Formatter):
    """Log records often quote page data (URLs, titles, errors): printed on
    stderr, they must not carry control characters either."""

    def format(self, record: logging.LogRecord) -> str:
        return sanitize(super().format(record))


class SafeMarkdown:
    """Untrusted text (a model's answer) rendered as Markdown for a terminal.

    The text is sanitized before parsing, and every rendered segment again:
    the parser decodes entities, so `&#x202e;` or `&#13;` would otherwise come
    out raw. No OSC 8 hyperlinks (a link's text could hide where it goes; the
    target is shown in brackets instead); images are never fetched, only
    their description shown. Raw HTML is not shown as tags: `<br>` breaks the
    line, `<sup>` becomes `^`, an HTML block shows its text."""

    def __init__(self, text: str) -> None:
        self._markdown = _Markdown(sanitize(text), hyperlinks=False)
        self._markdown.parsed = _tidy(self._markdown.parsed)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        started = False
        for segment in console.render(self._markdown, options):
            text, style, control = segment
            if not started and text == "\n":
                continue  # rich starts a list at the top with an empty line
            started = True
            if style is not None and style.link:
                style = style.update_link(None)
            yield Segment(sanitize(text), style, control)


class _TableElement(TableElement):
    """A table with its borders drawn: rich's has none, only a rule under the header."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for part in super().__rich_console__(console, options):
            if isinstance(part, Table):
                part.box, part.pad_edge, part.collapse_padding = box.ROUNDED, True, False
            yield part


class _Markdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "table_open": _TableElement}


def _tidy(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in tokens:
        # Entities are decoded by now; rich lays out what it is given, so clean it before.
        token.content, token.info = sanitize(token.content), sanitize(token.info)
        token.attrs = {k: sanitize(str(v)) for k, v in token.attrs.items()}
        if token.type == "html_block":
            text = html.unescape(_TAG.sub("", _BREAK.sub("\n", _CODE.sub("", token.content)))).strip()
            if text:
                out += [Token("paragraph_open", "p", 1), Token("inline", "", 0, content=text,
                        children=[Token("text", "", 0, content=text)]), Token("paragraph_close", "p", -1)]
            continue
        if token.children:
            token.children = _tidy_inline(_tidy(token.children))
        out.append(token)
    return out


def _tidy_inline(tokens: list[Token]) -> list[Token]:
    bare = _bare_links(tokens)
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if token.type == "html_inline":
            tag = token.content.lower().replace(" ", "")
            if _BREAK.fullmatch(tag):
                out.append(Token("hardbreak", "br", 0))
            elif tag == "<sup>":
                out.append(Token("text", "", 0, content="^"))
        elif token.type == "image":  # in place, by its description (rich would move it to the paragraph's start)
            out.append(Token("text", "", 0, content=f"[image: {token.content}]" if token.content else "[image]"))
        elif i not in bare:
            out.append(token)
    return out


def _bare_links(tokens: list[Token]) -> set[int]:
    """Where the links that show their own target open and close: a bare URL
    is shown once, not as "URL (URL)"."""
    found: set[int] = set()
    opened: int | None = None
    for i, token in enumerate(tokens):
        if token.type == "link_open":
            opened = i
        elif token.type == "link_close" and opened is not None:
            first = tokens[opened]
            href = str(first.attrs.get("href", ""))
            inner = tokens[opened + 1] if i == opened + 2 else None
            if first.markup == "autolink" or (
                inner is not None and inner.type == "text" and inner.content in (href, href.removeprefix("mailto:"))
            ):
                found |= {opened, i}
            opened = None
    return found


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
