"""What the rendered page shows besides its main text, as lines a reader needs.

Main-text extraction keeps what an article reader wants and drops what many
questions are about: a forum's replies, a product's specs, prices, shipping
and returns, a service's plans and hours, a listing's items. The rendered
text (what the browser shows, frames and open shadow roots included) has all
of it, and also what is not content: menus, the site's header and footer,
consent banners, share bars. This module tells them apart by the page's
structure, not by its words:

- the page's tree is read once as lines of text, each knowing whether it sits
  in page furniture and under which headings (`read_lines`);
- furniture, whole: a consent banner, a newsletter box, breadcrumbs, a table
  of contents, a wiki's navigation box;
- furniture, in the site's navigation, header, footer and sidebars (`<nav>`,
  landmark roles, `<aside>`, a `<header>`/`<footer>` outside any `<main>` or
  `<article>`, a container whose class or id names a menu or a share bar):
  the lines that are links within the site, labels of a few words and
  copyright notices. A footer's address, phone number or opening hours are
  the page's own;
- furniture anywhere: a line of three or more links within the site and
  nothing else, a line of buttons ("Add to cart");
- a rendered line is left out when its words are furniture's only, or already
  in the main text, or a repeat; each kept line goes under its heading path
  ("### Plans › Monthly"), so the model knows where it sits and the budgeter
  ranks it with its section;
- table rows (the browser renders their cells tab-separated) stay rows.

Rendered lines and the tree's lines do not always match one for one (CSS puts
blocks side by side), so they are matched by their words (`_Words`).
Nothing is left out for being long or far down: the budgeter chooses, not this.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import urlsplit

from lxml import etree

from .rows import join_row

# Elements whose content never renders as text.
_NO_TEXT = frozenset("script style noscript template svg math head title iframe object canvas select".split())
# Elements that start a new line (as innerText breaks lines at them, with default styles).
_BLOCK = frozenset(
    "address article aside blockquote body br dd details dialog div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hgroup hr html legend li main nav ol p pre section summary table tbody td "
    "tfoot th thead tr ul caption".split()
)
_HEADING = {f"h{n}": n for n in range(1, 7)}
# Elements whose headings are their own: leaving one ends them.
_SECTIONING = frozenset("article aside footer header main nav section".split())
_CONTENT_ANCESTORS = frozenset({"main", "article"})
# Landmarks that hold the site's links: their lines that are links, or labels of a few
# words without a figure ("Shop by room"), are furniture; their other text (an address, a
# phone number, opening hours in a footer; a drop-down's answer in a `<nav>`) is the page's.
_LINK_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menubar", "menu"})
# Class or id words: of such a landmark ("links"), or of a container that is furniture
# whole ("whole": consent banners, newsletter boxes, breadcrumbs, a table of contents, a
# wiki's navigation boxes, whose items carry years and counts).
_NAMES = re.compile(
    r"(?<![a-z0-9])(?:(?P<whole>cookies?|consent|gdpr|onetrust|cmp-|newsletter|breadcrumbs?|toc|navbox)|"
    r"(?P<links>nav(?:bar|igation)?|mega-?menu|main-?menu|site-?menu|menu-?bar|primary-?menu|"
    r"share-?bar|sharing|social-?share|skip-?link))(?![a-z])",
    re.I,
)
LABEL_WORDS = 4  # a line of at most this many words and no digit is a menu's label
LINK_BAR = 3  # a line of this many links within the site, and a label at most, is a menu anywhere
_NOT_NAVIGATION = ("tel:", "mailto:", "sms:")  # a link that calls or writes: contact details
NONE, LINKS, WHOLE = 0, 1, 2  # furniture: none, a landmark's links and labels, the whole container
NO_CONTROL, LINK, BUTTON, AWAY = 0, 1, 2, 3  # what a piece of text is in (AWAY: a link off the site)
MAX_HEADING_CHARS = 120  # a longer "heading" is a styled paragraph, not a name for what follows
OTHER_TEXT_HEADING = "## Other text on the page"
ELSEWHERE_HEADING = "### Elsewhere on the page"  # lines under no heading, after some that were
PATH_SEPARATOR = " › "
SHORT_WORDS = 3  # a line of fewer words is matched whole, and only where it stands (see `other_text`)
# A repeat of a line this long is a copy (a block shown twice for two screen sizes); a
# shorter line ("Mar 18", an author's name, "4.5 out of 5") means something where it is.
REPEAT_CHARS = 50
_WS = re.compile(r"\s+")
_LEGAL = re.compile(r"(?:©|\(c\)|copyright\b)", re.I)  # a landmark's copyright notice is the site's, not the page's
_KEY = re.compile(r"\w+", re.UNICODE)
# "[12]", "[a]", "[note 3]", "[edit]", "[citation needed]" (lower-cased by then)
_FOOTNOTE = re.compile(r"\[(?:\d{1,4}|[a-z][a-z ]{0,24}\d{0,4})\]")


def key(text: str) -> str:
    """A line's words, lower-cased, for matching lines across the tree, the rendered
    text and the main text (which writes table rows and emphasis its own way)."""
    # Markdown's escapes are not words, nor are footnote marks, which the main text drops.
    text = text.replace("\\", "").lower()
    return " ".join(_KEY.findall(_FOOTNOTE.sub(" ", text) if "[" in text else text))


class _Words:
    """Whether a line's words stand in some lines: the exact line for a line of one or
    two words (which may stand anywhere), else every run of three of its words. Linear
    in the lines, where a substring search per line would be quadratic."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.lines = set(keys)

    @cached_property
    def trigrams(self) -> set[tuple[str, str, str]]:  # only if a longer line is looked up
        words = " ".join(self.keys).split()
        return set(zip(words, words[1:], words[2:]))

    def __call__(self, k: str) -> bool:
        words = k.split()
        if len(words) < SHORT_WORDS:
            return k in self.lines
        return all(g in self.trigrams for g in zip(words, words[1:], words[2:]))


@dataclass
class PageLines:
    """The page's lines by what they are, as keys (`key`), in page order."""

    furniture: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    # Where each content line sits, at each of its places: the headings above it, below
    # the page's title (a heading's own path ends with itself).
    paths: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    headings: set[str] = field(default_factory=set)


# Furniture is a container: elements of other kinds (a link, an item, a span) are not looked at.
_CANDIDATES = etree.XPath(
    "//*[self::div or self::section or self::ul or self::ol or self::table or self::form or self::dialog]"
    "[@class or @id or @role] | //nav | //header | //footer | //aside"
)
_IN_CONTENT = etree.XPath("boolean(ancestor::main or ancestor::article)")


def _furniture(doc: etree._Element) -> dict[etree._Element, int]:
    """The page's furniture containers, and what each is (LINKS or WHOLE). A container
    that holds the page's main content (a `<main>`, an `<article>`, the `<h1>`) is none,
    whatever its class names say (`<body class="… newsletter-style-light …">`)."""
    wrappers = {a for el in doc.iter("main", "article", "h1") for a in el.iterancestors()}
    out: dict[etree._Element, int] = {}
    for el in _CANDIDATES(doc):
        if el in wrappers:
            continue
        tag = el.tag
        named = {m.lastgroup for m in _NAMES.finditer(f"{el.get('class') or ''} {el.get('id') or ''}")}
        if "whole" in named:
            out[el] = WHOLE
        elif (
            named
            or tag in ("nav", "aside")
            or (el.get("role") or "").lower() in _LINK_ROLES
            or (tag in ("header", "footer") and not _IN_CONTENT(el))  # the site's, not an article's own
        ):
            out[el] = LINKS
    return out


def _is_label(text: str) -> bool:
    return (len(text.split()) <= LABEL_WORDS and not any(c.isdigit() for c in text)) or _LEGAL.match(text.lstrip()) is not None


def _site(host: str) -> str:
    return host.lower().removeprefix("www.")


_HREFS = etree.XPath("//a/@href")


def _sites(doc: etree._Element, url: str) -> set[str]:
    """The site a page's links stay within: its own host, and the host most of its links
    go to when that is another (a page saved or served away from its site)."""
    hosts: Counter[str] = Counter()
    for href in _HREFS(doc):
        href = href.strip().lower()
        if href and not href.startswith(_NOT_NAVIGATION):
            hosts[_host(href)] += 1
    sites = {_site(urlsplit(url).netloc)}
    if hosts:
        top, n = hosts.most_common(1)[0]
        if top and n * 2 > sum(hosts.values()):
            sites.add(top)
    return sites


def _host(href: str) -> str:
    """The site of a link's address, "" for one within the page's own (a relative address)."""
    return _site(urlsplit(href).netloc) if "//" in href else ""


def _control(el: etree._Element, sites: set[str]) -> int:
    """BUTTON for a button; LINK for a link within the site, what menus are made of;
    AWAY for a link off the site; NO_CONTROL for a link that calls or writes."""
    if el.tag == "button" or (el.get("role") or "").lower() == "button":
        return BUTTON
    if el.tag != "a":
        return NO_CONTROL
    href = (el.get("href") or "").strip().lower()
    if href.startswith(_NOT_NAVIGATION):
        return NO_CONTROL
    host = _host(href)
    return LINK if not host or host in sites else AWAY


def _names(path: tuple[tuple[int, str], ...]) -> tuple[str, ...]:
    """A heading path as shown: below the page's title (its `<h1>`), which every line shares."""
    return tuple(name for level, name in path if level > 1)


def read_lines(doc: etree._Element, url: str = "") -> PageLines:
    """One pass over the tree: every line of text with what it is."""
    lines = PageLines()
    sites = _sites(doc, url)
    furnished = _furniture(doc)
    parts: list[tuple[str, int]] = []  # the line so far: texts, and whether each is a LINK's, a BUTTON's…
    links = 0  # links within the site on the line so far
    path: tuple[tuple[int, str], ...] = ()  # the headings above, with their levels
    names: tuple[str, ...] = ()  # and their names
    # Per open element: its furniture, the control it is in, the level of the heading it is
    # in, and for a sectioning element the headings when it opened (else None).
    stack: list[tuple[int, int, int, tuple[tuple[int, str], ...] | None]] = [(NONE, NO_CONTROL, 0, None)]

    def flush() -> None:
        nonlocal parts, path, names, links
        bar, links = links >= LINK_BAR, 0
        if not parts:
            return
        said, parts = parts, []
        text = " ".join("".join(t for t, _ in said).split())
        if not (k := key(text)):
            return
        furniture, _, heading, _ = stack[-1]
        if furniture == WHOLE or (
            (furniture == LINKS or bar)
            # Links, and a label at most. In a landmark, a link off the site is a menu's too (a
            # saved page's links all leave its address), unless it names a figure: a map of
            # the address, a phone number.
            and _is_label("".join(t for t, c in said if not c or (c == AWAY and any(map(str.isdigit, t)))))
        ) or all(c == BUTTON and _is_label(t) for t, c in said if not t.isspace()):  # "Add to cart": anywhere
            lines.furniture.append(k)
            return
        lines.content.append(k)
        if heading and len(text) <= MAX_HEADING_CHARS:
            path = (*(h for h in path if h[0] < heading), (heading, text))
            names = _names(path)
            lines.headings.add(k)
        lines.paths.setdefault(k, []).append(names)

    walker = etree.iterwalk(doc, events=("start", "end"))
    for event, el in walker:
        tag = el.tag if isinstance(el.tag, str) else ""
        if event == "start":
            if not tag:
                continue  # a comment: only its tail is text
            if tag in _NO_TEXT:
                flush()
                stack.append(stack[-1])
                walker.skip_subtree()
                continue
            if tag in _BLOCK:
                flush()
            furniture, control, heading, _ = stack[-1]
            if not control and (tag in ("a", "button") or el.get("role") == "button"):
                control = _control(el, sites)
                links += control == LINK
            stack.append((
                max(furniture, furnished.get(el, NONE)),
                control,
                _HEADING.get(tag, heading),
                path if tag in _SECTIONING else None,
            ))
            if el.text:
                parts.append((el.text, control))
        else:
            if tag:
                if tag in _BLOCK or tag in _NO_TEXT:
                    flush()
                if (saved := stack.pop()[3]) is not None and saved is not path:
                    path, names = saved, _names(saved)
            if el.tail:
                parts.append((el.tail, stack[-1][1]))
    flush()
    return lines


def _furniture_lines(keys: list[str], furniture: _Words, content: _Words) -> list[bool]:
    """Which lines are furniture: those the tree has as furniture only (as a line of its
    own, else by its words); a line it has both ways ("Canada" in a table and in a
    menu of countries) is what the line before it is."""
    out: list[bool] = []
    before = False
    for k in keys:
        if not k:
            out.append(False)
            continue
        if k in furniture.lines:
            found = before if k in content.lines else True
        else:
            found = furniture(k) and not content(k)
        out.append(found)
        before = found
    return out


def rendered_lines(rendered: str) -> list[str]:
    """The rendered text as lines; runs of tab-separated lines (how the browser renders
    table rows) become rows, set apart by blank lines."""
    out: list[str] = []
    run: list[str] = []

    def end_run() -> None:
        if len(run) > 1:
            out.extend(["", *(join_row(c.strip().replace("|", "/") for c in r.split("\t") if c.strip()) for r in run), ""])
        else:
            out.extend(_WS.sub(" ", r) for r in run)
        run.clear()

    for raw in rendered.splitlines():
        line = raw.strip()
        if not line:
            continue
        if "\t" in line:
            run.append(line)
            continue
        end_run()
        out.append(line)
    end_run()
    return out


def other_text(doc: etree._Element, url: str, main: str, rendered: str) -> str:
    """The rendered lines that are content but not in `main`, in page order, each run
    under its heading path; "" when there are none."""
    lines = read_lines(doc, url)
    furniture, content = _Words(lines.furniture), _Words(lines.content)
    in_main = _Words([key(line) for line in main.splitlines()])
    out: list[str] = []
    seen: set[str] = set()
    path: tuple[str, ...] = ()
    shown: tuple[str, ...] | None = None  # the path last written out
    heading_at = -1  # where the paths written since the last line start in `out`
    in_main_since = False  # whether a line under them was left out as the main text's

    def show(new: tuple[str, ...]) -> None:
        nonlocal shown, heading_at, in_main_since
        if heading_at >= 0 and in_main_since:
            del out[heading_at:]  # the main text has what is under them: they head nothing here
            heading_at = -1
        if heading_at < 0:
            heading_at, in_main_since = len(out), False
        out.extend(["", f"### {PATH_SEPARATOR.join(new)}" if new else ELSEWHERE_HEADING, ""])
        shown = new

    shown_lines = rendered_lines(rendered)
    keys = [key(line) for line in shown_lines]
    flags = zip(_in_main(keys, in_main), _furniture_lines(keys, furniture, content))
    for line, k, (is_main, is_furniture) in zip(shown_lines, keys, flags):
        if not line:
            if out and out[-1]:
                out.append("")
            continue
        if len(places := lines.paths.get(k, ())) == 1:
            path = places[0]  # a line the page has in several places says nothing of where this one is
        if not k or k in seen:
            continue
        if len(k) >= REPEAT_CHARS:
            seen.add(k)
        if is_furniture:
            continue
        if is_main:
            in_main_since = True
            continue
        if k in lines.headings:
            show(path)  # a heading the main text lacks: a card's title, say, whatever follows it
            continue
        if path != shown and (path or shown):
            show(path)
        out.append(line)
        heading_at = -1
    if heading_at >= 0 and in_main_since:
        del out[heading_at:]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _in_main(keys: list[str], in_main: _Words) -> list[bool]:
    """Which lines are the main text's. A line of a few words is by its neighbours: the
    main text's where it stands among the main text's lines (a table's header cell, a
    label), not where it stands among others (the name above a reply is not the first
    post's, though the main text has it too)."""
    found = [bool(k) and len(k.split()) >= SHORT_WORDS and in_main(k) for k in keys]
    short = [bool(k) and len(k.split()) < SHORT_WORDS for k in keys]
    nxt = False  # whether the next longer line is the main text's
    after: list[bool] = [False] * len(keys)
    for i in range(len(keys) - 1, -1, -1):
        after[i] = nxt
        if keys[i] and not short[i]:
            nxt = found[i]
    before = False
    for i, k in enumerate(keys):
        if short[i]:
            found[i] = before and (k in in_main.lines or after[i])
        if k:
            before = found[i]
    return found
