"""A model's answer (untrusted) rendered as Markdown for a terminal.

Sanitized before parsing and again after (`terminal.sanitize`): the parser
decodes entities, so what it makes of the text is cleaned too. Its own module
because rich's Markdown and markdown-it cost ~30 ms to import, which a
command that prints no answer (or prints it as JSON) need not pay.
"""

from __future__ import annotations

import html
import re
from typing import ClassVar

from markdown_it.token import Token
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement
from rich.segment import Segment
from rich.table import Table

from .terminal import sanitize

_TAG = re.compile(r"<[^>]*>")
_CODE = re.compile(r"<(script|style)\b.*?(</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


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
