"""The offline model's summary of a page: its parts in order, each by its opening sentence or two, in its own words.

For a request about the page as a whole (`TabContext.scope`, decided by `ranking.scope`), the
offline model cannot write a summary, but it can quote one: the tab's text is cut into parts (an
overview's stretches, between its "[…]" gaps, or, for a page sent whole, stretches of the same
length, as `overview.py` cuts a page), and each part is given by its first sentences of
MIN_SENTENCE_WORDS words or more, as many as its share of SUMMARY_WORDS holds (one at least).
A part left out is left out for its length: when there are more parts than the words allow,
the shortest go. A request for the main points gets a list; any other, a line per part.
Every line is the page's words, and `citations.cite_quotes` cites the blocks it quotes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..markers import GAP, is_marker
from ..overview import MIN_SEGMENTS, Piece, stretches
from ..ranking.scope import Request
from ..rows import is_row
from ..tables import clean
from ..tokens import count_tokens

SUMMARY_WORDS = 200  # of a long page's summary, at most, about; a tab's share when several are summarised
MIN_TAB_WORDS = 80  # ...but never less than this a tab
MIN_SENTENCE_WORDS = 8  # a shorter sentence (a caption, a label) does not stand for a part
MAX_SENTENCE_WORDS = 40  # a longer one is quoted up to here, with "…"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9À-Ý])")
_HEADING = re.compile(r"^#{1,6}\s")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Tab:
    """One tab to summarise: its id ("1"), title and text as the context gives them."""

    tab_id: str
    title: str
    text: str


def _parts(text: str) -> list[list[str]]:
    """The tab's text as parts, each a list of its paragraphs: split at an overview's gaps and
    at headings (which are left out), or, with neither, cut as an overview cuts a page."""
    runs: list[list[str]] = [[]]
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if para == GAP or _HEADING.match(para):
            runs.append([])
        elif para and not is_marker(para):
            runs[-1].append(para)
    runs = [r for r in runs if r]
    if len(runs) == 1:
        pieces = [Piece(p, count_tokens(p)) for p in runs[0]]
        runs = [[p.text for p in s.pieces] for s in stretches(pieces, 0, MIN_SEGMENTS)]
    return runs


def _sentences(paragraphs: Sequence[str]) -> list[list[str]]:
    """A part's lines that can stand for it, in order, each as its sentences that can: prose,
    not rows, headings or labels."""
    out = []
    for para in paragraphs:
        for line in para.splitlines():
            line = _LIST_ITEM.sub("", line)
            if is_row(line) or _HEADING.match(line) or is_marker(line):
                continue
            kept = [s for s in _SENTENCE.split(clean(line).strip()) if len(s.split()) >= MIN_SENTENCE_WORDS]
            if kept:
                out.append(kept)
    return out


def _cut(sentence: str) -> str:
    words = sentence.split()
    return sentence if len(words) <= MAX_SENTENCE_WORDS else " ".join(words[:MAX_SENTENCE_WORDS]) + " …"


def summarize_tab(text: str, words: int = SUMMARY_WORDS) -> list[str]:
    """One line per part shown, each its opening sentence (and the one after it in the same
    line of the page, where the part's share holds it), within about `words` words."""
    parts = list(map(_sentences, _parts(text)))
    order = [i for i, lines in enumerate(parts) if lines]
    # More parts than one sentence each allows: the shortest parts (by what they have to say) go first.
    lengths = {i: sum(len(s.split()) for line in parts[i] for s in line) for i in order}
    kept = set(order)
    for i in sorted(order, key=lambda i: (lengths[i], -i)):
        if sum(len(_cut(parts[j][0][0]).split()) for j in kept) <= words or len(kept) == 1:
            break
        kept.discard(i)
    total = max(sum(lengths[j] for j in kept), 1)
    out = []
    for i in (i for i in order if i in kept):
        first, *rest = parts[i][0]
        chosen = [_cut(first)]
        if rest and first == chosen[0] and len(first.split()) + len(rest[0].split()) <= words * lengths[i] / total:
            chosen.append(_cut(rest[0]))
        out.append(" ".join(chosen))
    return out


def summary(question: str, tabs: Sequence[Tab]) -> str | None:
    """The summary of `tabs` for a whole-page `question`, a list for its main points; None when
    no tab has a sentence to quote."""
    bullet = "- " if Request.parse(question).lists else ""
    each = max(SUMMARY_WORDS // max(len(tabs), 1), MIN_TAB_WORDS)
    blocks = []
    for tab in tabs:
        lines = summarize_tab(tab.text, each)
        if not lines:
            continue
        # A list's items one a line; otherwise a paragraph a part, which Markdown keeps apart.
        body = ("\n" if bullet else "\n\n").join(f"{bullet}{line}" for line in lines)
        if len(tabs) > 1:
            body = f"From [Tab {tab.tab_id}] {clean(tab.title)}:\n\n{body}"
        blocks.append(body)
    return "\n\n".join(blocks) if blocks else None


_CITED = re.compile(r"\[\d+\.\d+\]\s*$")
_FROM_TAB = re.compile(r"^From \[Tab \d+\]")


def only_cited(text: str) -> str:
    """A summary's lines that cite a block (`citations.cite_quotes` found them on the page), under
    the headings of the tabs that still have one: a line that cites none is not known to be the
    page's words."""
    blocks: list[list[str]] = [[]]
    for line in text.split("\n"):
        if _FROM_TAB.match(line):
            blocks.append([line])
        elif not line.strip() or _CITED.search(line):
            blocks[-1].append(line)
    kept = [b for b in blocks if any(_CITED.search(line) for line in b)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join("\n".join(b) for b in kept)).strip("\n")
