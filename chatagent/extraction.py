"""Main-text extraction: trafilatura first, the rendered text where it falls short.

trafilatura is excellent on articles but drops much of listings, product pages,
SPAs and forms. When its output is small next to what the browser rendered, the
rendered lines it missed are appended under a separate heading, so nothing the
user can see is lost, and the budgeter can still rank them by relevance.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import Executor

import trafilatura
from pydantic import BaseModel, Field

from .browser.base import PageSnapshot

log = logging.getLogger(__name__)

# Below this share of the rendered text's words, trafilatura missed too much.
MIN_MAIN_SHARE = 0.6
SUPPLEMENT_HEADING = "## Other text on the page"
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


class Extracted(BaseModel):
    """A tab's text as the model will see it, before budgeting."""

    tab_id: str
    url: str
    title: str
    text: str
    method: str  # "trafilatura", "rendered" or "trafilatura+rendered"
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


def _tidy(text: str) -> str:
    # Empty markdown table cells ("|  |  |") cost tokens and say nothing.
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and not stripped.strip("|- \t"):
            continue
        lines.append(re.sub(r"(\|\s+)+\|", "|", line) if stripped.startswith("|") else line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


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
    text = main
    if not main:
        text, method = "\n".join(line.strip() for line in rendered.splitlines() if line.strip()), "rendered"
    elif rendered_words and _words(main) < MIN_MAIN_SHARE * rendered_words:
        missing = _missing_lines(main, rendered)
        if missing:
            text = f"{main}\n\n{SUPPLEMENT_HEADING}\n\n" + "\n".join(missing)
            method = "trafilatura+rendered"
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
