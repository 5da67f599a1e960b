"""Main-text extraction: trafilatura first, then what it dropped that matters.

trafilatura is excellent on articles but drops many data tables (infoboxes,
results, specifications) and much of listings, product pages, SPAs and forms.
Two supplements, each under its own heading so the budgeter can rank them:
- data tables trafilatura missed, rebuilt from the HTML as markdown tables
  (navigation/layout tables are skipped), since questions are so often about them;
- when the output is still small next to what the browser rendered, the
  rendered lines it missed, so nothing the user can see is lost.
Articles are left alone: their text is most of what renders, and they rarely
hold tables, so neither supplement kicks in and no boilerplate gets in.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import Executor

import lxml.html
import trafilatura
from lxml import etree
from pydantic import BaseModel, Field

from .browser.base import PageSnapshot

log = logging.getLogger(__name__)

# Below this share of the rendered text's words, and below MIN_MAIN_WORDS, trafilatura
# missed too much (an app, a listing). A short article on a busy page is neither:
# measured on AEB, supplementing those swapped F1 0.92 for 0.88.
MIN_MAIN_SHARE = 0.15
MIN_MAIN_WORDS = 50
SUPPLEMENT_HEADING = "## Other text on the page"
TABLES_HEADING = "## Tables not in the main text"
# A table counts as missed when fewer than this share of its rows are in the main text
# (a row is there when all of its cells are: single cells like "1648" match anywhere).
MISSED_TABLE_SHARE = 0.8
MAX_CELL_CHARS = 300  # longer cells are prose in a layout table, not data
_NAV_TABLE = re.compile(r"nav|menu|footer|header|sidebar|metadata|persondata|breadcrumb|toc|mbox|ambox", re.I)
_NAV_ANCESTORS = "ancestor::nav or ancestor::footer or ancestor::header or ancestor::aside or ancestor::*[@role='navigation']"
_DROP_IN_CELLS = "|".join(
    [".//script", ".//style", ".//noscript", ".//template",
     ".//sup[contains(concat(' ', normalize-space(@class), ' '), ' reference ')]",
     ".//*[contains(concat(' ', normalize-space(@style), ' '), 'display:none')]"]
)
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


class Extracted(BaseModel):
    """A tab's text as the model will see it, before budgeting."""

    tab_id: str
    url: str
    title: str
    text: str
    method: str  # "trafilatura", "rendered", or "trafilatura" plus "+tables" and/or "+rendered"
    content_hash: str
    notes: list[str] = Field(default_factory=list)


def _norm(line: str) -> str:
    return _WS.sub(" ", line).strip().lower()


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _main_text(html: str, url: str) -> str:
    if not html.strip():
        return ""
    try:
        text = trafilatura.extract(
            html,
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
_ITALIC_CELL = re.compile(r"(?<=\| )\*([^*|]+)\*(?= \|)")
_ESCAPED_BRACKET = re.compile(r"\\([\[\]])")


def _tidy(text: str) -> str:
    # Citation markers ("<sup>\[12\]</sup>") cost tokens and say nothing to the model;
    # neither do empty markdown table cells ("|  |  |").
    text = _ESCAPED_BRACKET.sub(r"\1", _BACKLINKS.sub("", _REF_SUP.sub("", text)))
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and not stripped.strip("|- \t"):
            continue
        if stripped.startswith("|"):
            # Bold and italics in table cells are mostly styling: tokens, little meaning.
            line = _ITALIC_CELL.sub(r"\1", re.sub(r"(\|\s+)+\|", "|", line).replace("**", ""))
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _cell_text(cell: etree._Element) -> str:
    for bad in cell.xpath(_DROP_IN_CELLS):
        bad.drop_tree()
    text = _WS.sub(" ", cell.text_content()).strip()
    return text.replace("|", "/")  # a pipe would break the markdown row


def _table_markdown(table: etree._Element) -> tuple[str, list[list[str]]] | None:
    """A data table as markdown rows (first row = header) plus its rows' cells; None for layout/nav tables."""
    rows: list[list[str]] = []
    for tr in table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr"):
        cells = [_cell_text(c) for c in tr.xpath("./th|./td")]
        if any(len(c) > MAX_CELL_CHARS for c in cells):
            return None
        if any(cells):
            rows.append(cells)
    if len(rows) < 2 or max(len(r) for r in rows) < 2:
        return None
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    caption = table.xpath("./caption")
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


def _missed_tables(html: str, main: str) -> list[str]:
    """Data tables in `html` that the main text lacks, as markdown blocks in page order."""
    if "<table" not in html.lower():
        return []
    try:
        doc = lxml.html.fromstring(html)
    except (ValueError, etree.ParserError):
        return []
    haystack = _norm(main)
    out: list[str] = []
    for table in doc.xpath("//table[not(.//table)]"):
        if _NAV_TABLE.search(f"{table.get('class', '')} {table.get('id', '')} {table.get('role', '')}"):
            continue
        if table.xpath(_NAV_ANCESTORS):
            continue
        heading = _heading_before(table)
        rendered = _table_markdown(table)
        if rendered is None:
            continue
        md, rows = rendered
        present = sum(all(_norm(c) in haystack for c in row if c) for row in rows)
        if present >= MISSED_TABLE_SHARE * len(rows):
            continue
        out.append(f"### {heading}\n\n{md}" if heading else md)
    return out


def _missing_lines(main: str, rendered: str) -> list[str]:
    """Rendered lines whose text is absent from the main text, in page order."""
    haystack = _norm(main)
    out: list[str] = []
    seen: set[str] = set()
    for line in rendered.splitlines():
        key = _norm(line)
        if not key or key in seen:
            continue
        seen.add(key)
        if key not in haystack:
            out.append(_WS.sub(" ", line).strip())
    return out


def extract_snapshot(snapshot: PageSnapshot) -> Extracted:
    """Pure, CPU-bound: call it off the event loop (see `Extractor`)."""
    main = _main_text(snapshot.html, snapshot.url)
    rendered = snapshot.visible_text.strip()
    rendered_words = _words(rendered)
    method = "trafilatura"
    if main and (tables := _missed_tables(snapshot.html, main)):
        main = f"{main}\n\n{TABLES_HEADING}\n\n" + "\n\n".join(tables)
        method = "trafilatura+tables"
    text = main
    if not main:
        text, method = "\n".join(line.strip() for line in rendered.splitlines() if line.strip()), "rendered"
    elif rendered_words and _words(main) < min(MIN_MAIN_SHARE * rendered_words, MIN_MAIN_WORDS):
        missing = _missing_lines(main, rendered)
        if missing:
            text = f"{main}\n\n{SUPPLEMENT_HEADING}\n\n" + "\n".join(missing)
            method += "+rendered"
    notes = list(snapshot.notes)
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
    )


class Extractor:
    """Extracts snapshots concurrently off the event loop, caching by content hash."""

    def __init__(self, executor: Executor | None = None, cache_size: int = 256) -> None:
        self._executor = executor  # None: the loop's default thread pool
        self._cache: dict[str, Extracted] = {}
        self._cache_size = cache_size

    async def extract(self, snapshot: PageSnapshot) -> Extracted:
        key = snapshot.content_hash
        hit = self._cache.get(key)
        if hit is not None:
            # Same content may sit in another tab: keep this tab's identity.
            return hit.model_copy(update={"tab_id": snapshot.tab_id, "notes": list(snapshot.notes) or hit.notes})
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._executor, extract_snapshot, snapshot)
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = result
        return result

    async def extract_many(self, snapshots: list[PageSnapshot]) -> list[Extracted]:
        return list(await asyncio.gather(*(self.extract(s) for s in snapshots)))
