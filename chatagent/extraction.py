"""A page's text for questions: its main text first, then everything else it shows.

trafilatura finds the main text (an article's body, a thread's first post),
which ranks first: a page cut with no question keeps it. But questions are as
often about what it drops: data tables (infoboxes, results, specifications),
a forum's replies, a product's specs, prices, shipping and returns, a
service's plans, hours and contact details, a listing's items. So, each under
its own heading for the budgeter to rank:
- data tables trafilatura missed, rebuilt from the HTML as markdown tables
  (navigation/layout tables are skipped);
- every other rendered line that is content, in page order under its heading
  path, with page furniture (menus, the site's header and footer links,
  consent banners) told apart by structure (`page_lines`).
Nothing is dropped for its length: the budgeter chooses what a question needs.
An article's byline, which trafilatura drops, is put back when the page names
an author. What a page says of itself in its markup, its authors and the day
it was first published (htmldate, without its guesses from the text), travels
beside the text (`Extracted.authors`, `published`) rather than in it.

Tables are written tersely ("|a|b|c|"): on table-heavy pages they are most of
the text, and the spaces markdown pads pipes with cost 8% of a table's tokens
for nothing (5% of all the text of the WTQ pages). Each value stays under its
column: cells spanning rows or header columns are repeated where they span
(`table_spans`) and empty cells are kept, at 1.7% more tokens on the WTQ pages.
Pages too big for trafilatura (its time grows faster than the DOM) are not
given to it: their rendered text is used, all of it up to a bound on memory
(the budgeter then selects what a question needs), and a note says so.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from itertools import islice
from urllib.parse import unquote

import lxml.html
import trafilatura
from htmldate import find_date
from lxml import etree
from pydantic import BaseModel, ConfigDict, Field
from trafilatura.metadata import examine_meta, extract_meta_json
from trafilatura.utils import load_html

from . import pdf, pdf_worker
from .browser.base import PageSnapshot
from .extraction_pool import ExtractionLimit, ExtractionPool, PoolBroken
from .page_lines import OTHER_TEXT_HEADING, other_text, rendered_lines
from .page_text import PageText
from .rows import join_row, row_cells
from .table_spans import ROWS, fill_spans

log = logging.getLogger(__name__)

TABLES_HEADING = "## Tables not in the main text"
# A table counts as missed when fewer than this share of its rows are in the main text
# (a row is there when all of its cells are: single cells like "1648" match anywhere).
MISSED_TABLE_SHARE = 0.8
MAX_CELL_CHARS = 300  # longer cells are prose in a layout table, not data
TABLE_SAMPLE_ROWS = 50  # rows checked per table when deciding whether the main text has it
# Above either size trafilatura stalls: its time grows faster than the DOM (on 2
# cores: 0.35 s for the largest page of the evaluation data, ~10k elements; 1-3 s
# for 36k; 25 s for a 2.4 MB table of ~165k). The rendered text is used instead
# (or, with none, the HTML's head up to the caps).
MAX_HTML_CHARS = 5_000_000
MAX_HTML_ELEMENTS = 20_000
# Text beyond this is not kept, a bound on memory and time: ~6M tokens, twice a
# 10 MB page's text; the budgeter analyses this much in ~8.5 s (CPU) into ~310 MB.
# A question's answer may be anywhere on a page, so nothing less is cut.
MAX_TEXT_CHARS = 20_000_000
# The extraction cache keeps no more text than this, pages' rendered text included
# (the newest result whatever its size).
CACHE_CHARS = 40_000_000
BYLINE_MAX_CHARS = 200  # a rendered line longer than this is prose, not a byline
# At the start of a class or id word: "plainrowheaders" (a data table's class) is no header.
_NAV_TABLE = re.compile(r"(?<![a-z])(?:nav|menu|footer|header|sidebar|metadata|persondata|breadcrumb|toc|mbox|ambox)", re.I)
# Compiled once: a WTQ page has ~600 table cells, each looked into.
_IN_NAV = etree.XPath(
    "boolean(ancestor::nav or ancestor::footer or ancestor::header or ancestor::aside or ancestor::*[@role='navigation'])"
)
_DROP_IN_CELLS = etree.XPath("|".join(
    [".//script", ".//style", ".//noscript", ".//template",
     ".//sup[contains(concat(' ', normalize-space(@class), ' '), ' reference ')]",
     ".//*[contains(concat(' ', normalize-space(@style), ' '), 'display:none')]"]
))
_ROW_CELLS = etree.XPath("./th|./td")
_CAPTION = etree.XPath("./caption")
_LEAF_TABLES = etree.XPath("//table[not(.//table)]")
# A table cell's sort key ("Theil, Anders" before "Anders Theil"): the site's stylesheet
# hides it (MediaWiki's `sortkey`), which trafilatura cannot know, so it would read
# "Theil, AndersAnders Theil". Not rendered where the stylesheet loads: dropped.
_SORT_KEYS = etree.XPath("//*[contains(concat(' ', normalize-space(@class), ' '), ' sortkey ')]")
_WS = re.compile(r"\s+")


class Extracted(BaseModel):
    """A tab's text as the model will see it, before budgeting."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tab_id: str
    url: str
    title: str
    text: str
    method: str  # "trafilatura", "rendered", or "trafilatura" plus "+tables" and/or "+rendered"
    content_hash: str
    notes: list[str] = Field(default_factory=list)
    reused: bool = False  # from the cache: this content was extracted before
    # What the page says of itself in its markup: its authors and the day it was
    # first published (ISO), "who wrote this?" and "when was this published?".
    authors: list[str] = Field(default_factory=list)
    published: str = ""
    # The page as the reader finds it, which a quote of it must be found in (`blocks.off_page`);
    # None when that is not known: a PDF, or a page no browser rendered (`PageSnapshot.rendered`).
    page: PageText | None = Field(default=None, exclude=True, repr=False)

    @property
    def chars(self) -> int:
        """What it holds in memory, about, in characters."""
        return len(self.text) + 2 * len(self.page or "")


def _norm(line: str) -> str:
    return _WS.sub(" ", line).strip().lower()


def _parse(html: str) -> lxml.html.HtmlElement | None:
    """The page's tree as trafilatura parses it, its tables' spans filled in
    (`table_spans`), for both trafilatura and the missed-table pass; None when unparsable."""
    if not html.strip():
        return None
    try:
        doc = load_html(html)
    except Exception as exc:  # the parser's zoo of errors on odd input
        log.debug("unparsable HTML: %s", exc)
        return None
    if doc is not None:
        for key in _SORT_KEYS(doc):
            key.drop_tree()
        fill_spans(doc)
        _name_terms(doc)
        _collapse_line_breaks(doc)
    return doc


# A line break in a text node is a space where the page renders it (outside <pre> and
# the like); trafilatura keeps it beside inline markup, so a sentence read as
# "…its keyboard, its\n    silence under load…" would end at "its".
_LINE_BREAK = re.compile(r"[ \t\r\f]*\n\s*")
_KEEPS_BREAKS = etree.XPath("//pre|//pre//*|//textarea|//code|//code//*|//script|//style")


def _collapse_line_breaks(doc: lxml.html.HtmlElement) -> None:
    kept = set(_KEEPS_BREAKS(doc))
    for el in doc.iter(etree.Element):
        if el.text and "\n" in el.text and el not in kept:
            el.text = _LINE_BREAK.sub(" ", el.text)
        if el.tail and "\n" in el.tail and el.getparent() not in kept:
            el.tail = _LINE_BREAK.sub(" ", el.tail)


# A list item's own blocks: trafilatura writes their texts end to end, with nothing between.
_ITEM_BLOCKS = frozenset("div p h1 h2 h3 h4 h5 h6 section article header footer address figcaption".split())
MAX_ITEM_BLOCKS = 8
GLUE_SCAN_CHARS = 400_000_000  # characters of text scanned for glued blocks, in all


def _unglued(doc: lxml.html.HtmlElement | None, text: str) -> str:
    """`text` with a space where trafilatura glued two blocks of a list item together: a
    product card's brand, price and blurb read "Kestrel Outdoor$189.95Waterproof", which no
    reader can split and no word search matches ("waterproof"). Spacing the blocks in the
    tree does not help: trafilatura trims it."""
    if doc is None or not text:
        return text
    spaced: dict[str, str] = {}
    for item in doc.iter("li"):
        ends = []
        for block in item:
            if isinstance(block.tag, str) and block.tag in _ITEM_BLOCKS and (words := block.text_content().split()):
                ends.append((words[0], words[-1]))
        # Every later block, not only the next: one trafilatura drops leaves its neighbours touching.
        for i, (_, left) in enumerate(ends[:MAX_ITEM_BLOCKS]):
            for right, _ in ends[i + 1 : MAX_ITEM_BLOCKS]:
                spaced[left + right] = f"{left} {right}"
    # Each look is a scan of the text: on a huge page, the first items' joins only (~0.1 s at most).
    looks = max(1, GLUE_SCAN_CHARS // max(len(text), 1))
    found = [glued for glued in islice(spaced, looks) if glued in text]
    if not found:
        return text
    # Never split what the page itself writes as one ("foot" + "ball" beside "football"). Its
    # text nodes one by one: minified HTML has nothing between blocks, so its whole text is glued too.
    page = " ".join(doc.itertext())
    for glued in sorted(found, key=len, reverse=True):
        if glued not in page:
            text = text.replace(glued, spaced[glued])
    return text


MAX_TERM_CHARS = 60
MAX_PAIRED_VALUE_CHARS = 300  # a longer value is a passage of its own, not a line with its term
_PAIR_BLOCKS = frozenset("address article aside blockquote dd details div dl dt fieldset figure footer form "
                         "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table ul".split())


def _name_terms(doc: lxml.html.HtmlElement) -> None:
    """A description list's terms end with a colon, so each reads as naming the value that
    follows it ("Memory:" then "32 GB"): otherwise a spec sheet becomes a list of words and
    values no reader can pair up. A term with one short value is one line with it
    ("Weight: 1.28 kg"), the passage an answer about it quotes."""
    for dt in list(doc.iter("dt")):
        after = dt.getnext()
        words = dt.text_content().strip()
        if after is None or after.tag != "dd" or not words or len(words) > MAX_TERM_CHARS:
            continue
        if not words.endswith(":"):
            _append(dt, ":", trim=True)
        if _pairs(after):
            _append(dt, " " + (after.text or ""))
            for child in list(after):
                dt.append(child)  # with its tail
            after.drop_tree()  # its tail (the space before the next term) stays


def _pairs(dd: lxml.html.HtmlElement) -> bool:
    """Whether `dd` is its term's one value, and a short line of text."""
    nxt = dd.getnext()
    return (
        (nxt is None or nxt.tag != "dd")
        and len(dd.text_content()) <= MAX_PAIRED_VALUE_CHARS
        and not any(isinstance(el.tag, str) and el.tag in _PAIR_BLOCKS for el in dd.iterdescendants())
    )


def _append(el: lxml.html.HtmlElement, text: str, *, trim: bool = False) -> None:
    """`text` at the end of `el`'s content (`trim`: right after its last word)."""
    def end(before: str | None) -> str:
        return ((before or "").rstrip() if trim else before or "") + text

    if len(el):
        el[-1].tail = end(el[-1].tail)
    else:
        el.text = end(el.text)


def _main_text(doc: lxml.html.HtmlElement | None, url: str) -> str:
    if doc is None:
        return ""
    try:
        text = trafilatura.extract(
            doc,
            url=url or None,
            output_format="markdown",
            include_tables=True,
            include_formatting=True,
            include_comments=False,
            include_links=False,
            include_images=False,
            favor_recall=True,
            deduplicate=False,
        )
    except Exception as exc:  # trafilatura raises a zoo of parser errors on odd input
        log.debug("trafilatura failed on %s: %s", url, exc)
        return ""
    return _tidy(text or "")


_REF_SUP = re.compile(r"<sup>\s*(?:\\?\[[^<\]]{0,40}\\?\]\s*)+</sup>")
_BACKLINKS = re.compile(r"(?:\s*<sup>\**[a-z]{1,2}\**</sup>)+")  # "^ a b c" jump-back letters in wiki notes
_ESCAPED_BRACKET = re.compile(r"\\([\[\]])")


def _cell(cell: str) -> str:
    # Bold and italics in table cells are mostly styling: tokens, little meaning.
    cell = cell.strip().replace("**", "")
    if len(cell) > 2 and cell[0] == cell[-1] == "*" and "*" not in cell[1:-1]:
        cell = cell[1:-1]
    return cell


def _tidy(text: str) -> str:
    # Citation markers ("<sup>\[12\]</sup>") cost tokens and say nothing to the model;
    # neither do empty table cells, nor the spaces markdown puts around pipes.
    text = _ESCAPED_BRACKET.sub(r"\1", _BACKLINKS.sub("", _REF_SUP.sub("", text)))
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            if not stripped.strip("|- \t"):
                continue  # empty, or a separator row
            cells = [_cell(c) for c in row_cells(stripped)]
            # Empty cells stay, so the cells after them keep their columns (`table_spans`);
            # a row of one cell (a caption, a title spanning the table) is that cell.
            line = join_row(cells if sum(map(bool, cells)) > 1 else filter(None, cells))
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _cell_text(cell: etree._Element) -> str:
    for bad in _DROP_IN_CELLS(cell):
        bad.drop_tree()
    text = _WS.sub(" ", cell.text_content()).strip()
    return text.replace("|", "/")  # a pipe would break the markdown row


def _table_markdown(table: etree._Element) -> tuple[str, list[list[str]]] | None:
    """A data table as markdown rows (first row = header) plus its rows' cells; None for layout/nav tables."""
    rows: list[list[str]] = []
    for tr in ROWS(table):
        cells = [_cell_text(c) for c in _ROW_CELLS(tr)]
        if any(len(c) > MAX_CELL_CHARS for c in cells):
            return None
        if any(cells):
            rows.append(cells)
    if len(rows) < 2 or max(len(r) for r in rows) < 2:
        return None
    lines = [join_row(r) for r in rows]
    caption = _CAPTION(table)
    if caption:
        lines.insert(0, _WS.sub(" ", caption[0].text_content()).strip())
    return "\n".join(lines), rows


def _heading_before(table: etree._Element) -> str:
    for el in table.itersiblings(preceding=True):
        if isinstance(el.tag, str) and re.fullmatch(r"h[1-6]", el.tag):
            return _WS.sub(" ", el.text_content()).replace("[edit]", "").strip()
        if isinstance(el.tag, str) and el.tag == "table":
            return ""  # a heading above the previous table is that table's
    return ""


def _missed_tables(doc: lxml.html.HtmlElement, main: str) -> list[str]:
    """Data tables in `doc` that the main text lacks, as markdown blocks in page order."""
    haystack = _norm(main)
    out: list[str] = []
    for table in _LEAF_TABLES(doc):
        if _NAV_TABLE.search(f"{table.get('class', '')} {table.get('id', '')} {table.get('role', '')}"):
            continue
        if _IN_NAV(table):
            continue
        heading = _heading_before(table)
        rendered = _table_markdown(table)
        if rendered is None:
            continue
        md, rows = rendered
        # A sample of the rows decides: checking every cell of a 4,000-row table
        # against the whole text takes seconds.
        sample = rows[:: max(1, len(rows) // TABLE_SAMPLE_ROWS)]
        present = sum(all(_norm(c) in haystack for c in row if c) for row in sample)
        if present >= MISSED_TABLE_SHARE * len(sample):
            continue
        out.append(f"### {heading}\n\n{md}" if heading else md)
    return out


def _author(html: str) -> list[str]:
    """The author names a page declares in its <head> (meta tags, JSON-LD), as
    trafilatura reads them; [] when none. Only the head is parsed: it is cheap."""
    end = html.find("</head>")
    if end < 0:
        return []
    try:
        head = lxml.html.fromstring(html[:end] + "</head></html>")
        meta = extract_meta_json(head, examine_meta(head))
    except Exception as exc:  # odd markup or JSON-LD: no byline is no loss
        log.debug("no metadata: %s", exc)
        return []
    author = meta.author or ""
    # trafilatura's own rule: a single word ("admin", "staff") is not a name
    return [a.strip() for a in author.split(";") if " " in a.strip()]


def _published(doc: lxml.html.HtmlElement | None, url: str) -> str:
    """The day the page says it was first published (its metadata, its URL, a
    `<time>`…), as htmldate reads it without its extensive search, which would
    take any date in the text for it; "" when it says none."""
    if doc is None:
        return ""
    try:
        return find_date(doc, extensive_search=False, original_date=True, url=url or None) or ""
    except Exception as exc:  # odd markup: no date is no loss
        log.debug("no publication date: %s", exc)
        return ""


def _byline(names: list[str], main: str, rendered: str) -> str:
    """The byline trafilatura dropped: the rendered line naming the author (it
    usually carries the date too), else "By <author>"; "" when the main text
    already names the author or the page declares none (`names`, `_author`)."""
    haystack = _norm(main)
    if not names or any(_norm(n) in haystack for n in names):
        return ""
    for line in rendered.splitlines():
        line = _WS.sub(" ", line).strip()
        if len(line) <= BYLINE_MAX_CHARS and any(n.lower() in line.lower() for n in names):
            return line
    return "By " + ", ".join(names)


def _with_byline(main: str, byline: str) -> str:
    # After the title heading, if the text starts with one: the title stays first.
    first, sep, rest = main.partition("\n")
    if first.startswith("# ") and sep:
        return f"{first}\n\n{byline}\n\n{rest.lstrip()}"
    return f"{byline}\n\n{main}"


def _elements(html: str) -> int:
    return html.count("<") - html.count("</")  # a tag count without parsing


def _oversized(html: str) -> str:
    """Why `html` is too big for trafilatura ("" when it is not)."""
    elements = _elements(html)
    if len(html) <= MAX_HTML_CHARS and elements <= MAX_HTML_ELEMENTS:
        return ""
    return f"{len(html) / 1e6:.1f} MB of HTML, about {elements:,} elements"


def _head_of(html: str) -> str:
    """The start of `html` within both caps, cut before a tag."""
    elements = max(_elements(html), 1)
    cut = min(len(html), MAX_HTML_CHARS, int(len(html) * MAX_HTML_ELEMENTS / elements))
    at = html.rfind("<", 0, cut)
    return html[: at if at > 0 else cut]


def _capped(text: str) -> tuple[str, tuple[int, int] | None]:
    """`text` cut at the last line break within MAX_TEXT_CHARS, and if it was
    cut, its length and the characters kept."""
    if len(text) <= MAX_TEXT_CHARS:
        return text, None
    cut = text.rfind("\n", 0, MAX_TEXT_CHARS)
    kept = cut if cut > 0 else MAX_TEXT_CHARS
    return text[:kept], (len(text), kept)


def _cut_note(what: str, cut: tuple[int, int]) -> str:
    length, kept = cut
    return (
        f"This page's {what} is too long to read whole ({length:,} characters): only its first {kept:,} "
        f"characters are used; the last {length - kept:,} are left out."
    )


def _pdf_title(snapshot: PageSnapshot, doc: pdf.PdfText) -> str:
    name = snapshot.url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return snapshot.title.strip() or doc.title or unquote(name)


def _pages(n: int) -> str:
    return "1 page" if n == 1 else f"{n:,} pages"


def extract_pdf(snapshot: PageSnapshot) -> Extracted:
    """A PDF's text layer, page by page, within its bounds (see `chatagent.pdf_worker`)."""
    notes = list(snapshot.notes)
    try:
        doc = pdf_worker.read_text(snapshot.pdf)
    except pdf_worker.PdfLimitError as exc:
        doc = pdf.PdfText()
        notes.append(f"This PDF could not be read: {exc}")
    except pdf.PdfError as exc:
        doc = pdf.PdfText()
        notes.append(f"This PDF could not be read (it may be damaged, or protected by a password): {exc}.")
    text = "" if doc.scanned else pdf.as_text(doc)
    if doc.scanned:
        notes.append(
            f"This PDF has no text layer ({_pages(doc.page_count)}, scanned or drawn): there is no text to read "
            "here; a screenshot shows its current page."
        )
    notes += doc.notes
    return Extracted(
        tab_id=snapshot.tab_id,
        url=snapshot.url,
        title=_pdf_title(snapshot, doc),
        text=text,
        method="pdf",
        content_hash=snapshot.content_hash,
        notes=notes,
    )


def extract_snapshot(snapshot: PageSnapshot) -> Extracted:
    """Pure, CPU-bound: call it off the event loop (see `Extractor`)."""
    if snapshot.pdf:
        return extract_pdf(snapshot)
    html = snapshot.html
    rendered, rendered_cut = _capped(snapshot.visible_text.strip())
    notes = list(snapshot.notes)
    if oversized := _oversized(html):
        if rendered:
            html = ""  # the rendered text is already there: nothing to parse
        else:
            html = _head_of(html)
            notes.append(f"This page is very large ({oversized}): only the start of its HTML was read.")
    doc = _parse(html)
    published = _published(doc, snapshot.url)  # before the missed-table pass changes the tree
    authors = _author(html)
    main = _unglued(doc, _main_text(doc, snapshot.url))
    method = "trafilatura"
    # After trafilatura, which copies the tree: reading the tables drops notes from their cells.
    if main and doc is not None and (tables := _missed_tables(doc, main)):
        main = f"{main}\n\n{TABLES_HEADING}\n\n" + "\n\n".join(tables)
        method = "trafilatura+tables"
    if main and (byline := _byline(authors, main, rendered)):
        main = _with_byline(main, byline)
    # Everything else the page shows that is content, after the main text: what the
    # question is about may be anywhere on the page, and the budgeter chooses.
    other = other_text(doc, snapshot.url, main, rendered) if doc is not None else ""
    text = main
    if not main:
        text, method = other or "\n".join(rendered_lines(rendered)).strip(), "rendered"
    elif other:
        text = f"{main}\n\n{OTHER_TEXT_HEADING}\n\n{other}"
        method += "+rendered"
    text, text_cut = _capped(text)
    if oversized and rendered:
        notes.append(
            f"This page is very large ({oversized}): its visible text ({len(text):,} characters) is used as it "
            "is, without main-text extraction, so menus and other page furniture may be in it."
        )
    if rendered_cut and "rendered" in method:
        notes.append(_cut_note("visible text", rendered_cut))
    if text_cut:
        notes.append(_cut_note("text", text_cut))
    if not text.strip():
        notes.append("No readable text on this page (it may be an image, a canvas or still loading).")
    return Extracted(
        tab_id=snapshot.tab_id,
        url=snapshot.url,
        title=snapshot.title.strip(),
        text=text,
        method=method,
        content_hash=snapshot.content_hash,
        notes=notes,
        authors=authors,
        published=published,
        page=PageText(snapshot.visible_text) if snapshot.rendered and snapshot.visible_text.strip() else None,
    )


# A small page that takes extraction's rarer paths once: trafilatura with its
# readability and justext fallbacks (the text is short) and the missed-table pass.
_WARM_HTML = """<!DOCTYPE html><html><head><title>Warm-up</title></head><body>
<nav><a href="/">Home</a> <a href="/a">About</a></nav>
<h1>Warm-up page</h1><p>This page only warms the extraction pipeline up.</p>
<h2>Results</h2><table><tr><th>City</th><th>Population</th></tr>
<tr><td>Springfield</td><td>30,720</td></tr><tr><td>Shelbyville</td><td>25,113</td></tr></table>
<footer>Copyright nobody</footer></body></html>"""
_WARM_RENDERED = (
    "Home About\nWarm-up page\nThis page only warms the extraction pipeline up.\n"
    "Results\nCity Population\nSpringfield 30,720\nShelbyville 25,113\nCopyright nobody"
)


def _warm_page() -> tuple[str, str]:
    """A long page with the parts real ones have (menus, an article's sections, lists, a
    table, links, scripts, a footer): extraction takes its main path, which the small
    page's fallbacks do not, so a worker's first real page costs what its later ones do."""
    sections = []
    for i in range(1, 9):
        paragraphs = "".join(
            f"<p>Paragraph {j} of section {i} tells how the <a href='/s{i}/{j}'>town's {j}th district</a> "
            f"grew from {1900 + i * 7 + j} on, with <em>figures</em>, <strong>names</strong> and dates.</p>"
            for j in range(1, 5)
        )
        items = "".join(f"<li>Item {j} of list {i}: a short fact</li>" for j in range(1, 5))
        sections.append(f"<section><h2>Section {i}</h2>{paragraphs}<ul>{items}</ul></section>")
    rows = "".join(f"<tr><td>City {i}</td><td>{30_000 + i * 1_234:,}</td><td>{1850 + i}</td></tr>" for i in range(12))
    html = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Warm-up</title>"
        "<meta name='author' content='Nobody'><style>body{margin:0}</style>"
        "<script>var warm = 1;</script></head><body>"
        "<header><nav><a href='/'>Home</a> <a href='/a'>About</a> <a href='/c'>Contact</a></nav></header>"
        "<main><article><h1>Warm-up page</h1><p class='byline'>By Nobody, 1 January 2020</p>"
        + "".join(sections)
        + "<h2>Results</h2><table><thead><tr><th>City</th><th>Population</th><th>Founded</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></article>"
        "<aside><h3>Related</h3><ul><li><a href='/r1'>Related one</a></li><li><a href='/r2'>Related two</a></li></ul></aside>"
        "</main><footer><p>Copyright nobody</p><a href='/privacy'>Privacy</a></footer></body></html>"
    )
    return html, _visible(html)


def _visible(html: str) -> str:
    """The warm-up page's text much as a browser renders it: a line per block."""
    text = re.sub(r"<(script|style)[^>]*>.*?</\1>|<title>.*?</title>", "", html, flags=re.S)
    text = re.sub(r"</?(p|h[1-6]|li|tr|section|header|footer|aside|nav|table|article)[^>]*>", "\n", text)
    return "\n".join(line.strip() for line in re.sub(r"<[^>]+>", " ", text).splitlines() if line.strip())


# trafilatura and lxml keep parser state per process that two threads must not
# use at once: ten tabs extracted on ten threads crash the process ("double
# free or corruption") within a few rounds. Threads take turns; tabs extract
# in parallel only in an ExtractionPool's worker processes.
_EXTRACTING = threading.Lock()


def extract_in_process(snapshot: PageSnapshot) -> Extracted:
    """`extract_snapshot` on a thread of this process: one at a time, but for
    PDFs, which wait on a process of their own (`pdf_worker`) and hold no lock."""
    if snapshot.pdf:
        return extract_pdf(snapshot)
    with _EXTRACTING:
        return extract_snapshot(snapshot)


def warm_extraction() -> None:
    """Load extraction's lazy parts now, on a short page and a long one: trafilatura's
    first justext fallback loads every stoplist (154k words, 0.15-0.4 s), and its main
    path has set-up of its own (tens of milliseconds on a worker's first page)."""
    for html, rendered in ((_WARM_HTML, _WARM_RENDERED), _warm_page()):
        extract_in_process(PageSnapshot(
            tab_id="warm-up", url="http://localhost/warm-up", title="Warm-up", html=html, visible_text=rendered
        ))


def given_up(snapshot: PageSnapshot, reason: str) -> Extracted:
    """What a tab keeps of a page whose extraction passed a limit (`ExtractionLimit.reason`):
    its visible text as the browser rendered it, within MAX_TEXT_CHARS, without extraction."""
    what = "PDF" if snapshot.pdf else "page"
    text, cut = _capped(snapshot.visible_text.strip())
    kept = ("its visible text is used as it is, without main-text extraction, so menus and other page furniture "
            "may be in it" if text else "none of its text could be kept")
    notes = [*snapshot.notes, f"This {what} {reason}: {kept}."]
    if cut:
        notes.append(_cut_note("visible text", cut))
    return Extracted(
        tab_id=snapshot.tab_id, url=snapshot.url, title=snapshot.title.strip(), text=text, method="rendered",
        content_hash=snapshot.content_hash, notes=notes,
        page=PageText(snapshot.visible_text) if snapshot.rendered and text else None,
    )


class Extractor:
    """Extracts snapshots concurrently off the event loop, caching by content hash
    (the last `cache_size` results, within CACHE_CHARS of text).

    `pool`: where extraction runs, each page within its limits; None is the
    loop's default thread pool, one page at a time and unbounded (for library
    use and tests: every front end's runtime has a pool). A page past a limit
    keeps its visible text (`given_up`); if no worker can be had, extraction
    goes on in this process's threads. Content that is
    being extracted is not extracted again meanwhile: a tab read ahead and the
    question that follows, or two tabs showing one page, share one run."""

    def __init__(self, pool: ExtractionPool | None = None, cache_size: int = 256) -> None:
        self._pool = pool
        # content hash → (result, the notes extraction itself added)
        self._cache: dict[str, tuple[Extracted, list[str]]] = {}
        self._cache_size = cache_size
        self._running: dict[str, asyncio.Future[tuple[Extracted, list[str]]]] = {}

    async def extract(self, snapshot: PageSnapshot) -> Extracted:
        key = snapshot.content_hash
        hit = self._cache.get(key)
        reused = hit is not None
        if hit is None:
            job = self._running.get(key)
            if job is None:
                job = self._running[key] = asyncio.ensure_future(self._extract_and_keep(key, snapshot))
                job.add_done_callback(lambda done: self._finished(key, done))
            # Shielded: one caller giving up (a cancelled question) does not stop the others' run.
            hit = await asyncio.shield(job)
        # Same content may sit in another tab: keep this tab's identity and
        # its own load notes, plus what extraction found about the content.
        result, own = hit
        return result.model_copy(update={"tab_id": snapshot.tab_id, "notes": [*snapshot.notes, *own], "reused": reused})

    async def _extract_and_keep(self, key: str, snapshot: PageSnapshot) -> tuple[Extracted, list[str]]:
        result = await self._run(snapshot)
        kept = (result, result.notes[len(snapshot.notes):])
        self._cache[key] = kept
        chars = sum(e.chars for e, _ in self._cache.values())
        while len(self._cache) > 1 and (len(self._cache) > self._cache_size or chars > CACHE_CHARS):
            chars -= self._cache.pop(next(iter(self._cache)))[0].chars
        return kept

    def _finished(self, key: str, job: asyncio.Future[tuple[Extracted, list[str]]]) -> None:
        self._running.pop(key, None)
        if not job.cancelled():
            job.exception()  # seen here: every caller that still waits gets it too

    async def _run(self, snapshot: PageSnapshot) -> Extracted:
        """In the pool when there is one, else on a thread of this process, one
        extraction at a time (`extract_in_process`)."""
        loop = asyncio.get_running_loop()
        if self._pool is not None:
            try:
                return await self._pool.extract(snapshot)
            except ExtractionLimit as exc:
                log.info("extraction of %s given up: %s", snapshot.url, exc.reason)
                return await loop.run_in_executor(None, given_up, snapshot, exc.reason)
            except PoolBroken as exc:
                log.warning("extraction workers are gone (%s); extracting in this process from now on", exc)
                self._pool = None
        return await loop.run_in_executor(None, extract_in_process, snapshot)

    async def extract_many(self, snapshots: list[PageSnapshot]) -> list[Extracted]:
        return list(await asyncio.gather(*(self.extract(s) for s in snapshots)))
