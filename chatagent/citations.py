"""An answer's citations, resolved against the context it was given.

"[Tab 2]" (and a PDF's "[Tab 2, p. 3]") cites a whole tab. "[1.4]" cites block
4 of tab 1 (`blocks.py`): it becomes a `Citation` quoting the page verbatim
(the block, or for a long block the sentence of it that best matches the
answer's words just before the citation; for a block only some runs of whose
words are on the page, the run that best matches them) with a link that
opens the page at that text (a text fragment, `#:~:text=…`). An id that
names no block of the context is dropped and counted, never shown as a
source. With one readable tab, that tab is a source whatever the answer
cites, as before blocks existed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote as percent

from .blocks import Block, cited_ids, plain, split
from .context import TabContext
from .events import Citation
from .ranking import ENGLISH

_TAB = re.compile(r"\[Tab (\d+)(?:, pp?\. [\d–-]+)?\]")  # [Tab 2], and a PDF's [Tab 2, p. 3]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"“‘(\[]?[A-Z0-9])")
_CLAIM_START = re.compile(r"\n|\]")  # where a claim starts: a line, or after a citation
_TRAILING_CITES = re.compile(r"(?:\s*\[[^\]\n]*\])+\s*$")
SENTENCE_QUOTE_CHARS = 160  # a block longer than this is quoted by its best sentence
FRAGMENT_WORDS = 4  # a long quote's link names its first and last words (textStart,textEnd)
EXACT_FRAGMENT_CHARS = 80  # a quote up to this long is named whole in its link


def resolve(answer: str, tabs: Sequence[TabContext]) -> tuple[list[Citation], int]:
    """The citations of `answer` over `tabs` (the context, then any tab pass 2
    re-read), and the number of distinct cited ids that named no block."""
    readable = [t for t in tabs if t.ok]
    by_label = {t.tab_id: t for t in readable}
    blocks: dict[str, tuple[Block, TabContext]] = {b.id: (b, t) for t in readable for b in split(t)}
    whole = dict.fromkeys(m.group(1) for m in _TAB.finditer(answer))
    passages: list[Citation] = []
    seen: set[str] = set()
    dropped: set[str] = set()
    for block_id, start, _ in cited_ids(answer):
        if block_id in seen or block_id in dropped:
            continue
        if block_id not in blocks:
            dropped.add(block_id)
            continue
        seen.add(block_id)
        block, tab = blocks[block_id]
        passages.append(passage(block, tab, claim(answer, start)))
    if not whole and len(by_label) == 1:  # one tab open: it is the answer's source, whatever it cites of it
        whole = {readable[0].tab_id: None}
    tabs_cited = [Citation(tab_id=t.tab_id, url=t.url, title=t.title, label=t.tab_id)
                  for label in by_label if label in whole for t in [by_label[label]]]
    return tabs_cited + passages, len(dropped)


def claim(answer: str, at: int) -> str:
    """The answer's words a citation at `at` stands for: back to the previous citation or the line's start."""
    before = _TRAILING_CITES.sub("", answer[:at]).rstrip()  # "[1.4][1.5]": both stand for the same words
    starts = [m.end() for m in _CLAIM_START.finditer(before)]
    return before[starts[-1] if starts else 0:]


def passage(block: Block, tab: TabContext, said: str) -> Citation:
    last = _SENTENCE.split(said.strip())[-1]
    # Of a block only some runs of whose words are on the page: the run the claim says.
    quote = _best(block.runs, last) if block.runs else block.quote
    if len(quote) > SENTENCE_QUOTE_CHARS and _spaced(quote) not in _spaced(said):
        # Not quoted whole by the answer: the sentence of it that the claim's last sentence says
        # (of a run of short lines on the page, its line).
        quote = _best_part([p for p in block.lines if p], quote, last) if block.more and not block.runs \
            else best_sentence(quote, last)
    if block.is_row and len(block.cells) > 1 and not block.runs and quote == block.quote:
        link = text_fragment(tab.url, block.cells[0], block.cells[-1])
    elif block.ends and quote == block.quote:  # across the page's blocks, where a fragment's words cannot run
        link = text_fragment(tab.url, *block.ends)
    else:
        link = text_fragment(tab.url, *_ends(quote))
    return Citation(tab_id=tab.tab_id, url=link, title=tab.title, label=tab.tab_id, block=block.id, quote=quote)


def _spaced(text: str) -> str:
    return " ".join(text.split())


def best_sentence(text: str, said: str) -> str:
    """The sentence of `text` sharing the most words with `said` (the first on a tie); `text` when none shares any."""
    return _best_part([s for s in _SENTENCE.split(text) if s.strip()], text, said)


def _best_part(parts: Sequence[str], text: str, said: str) -> str:
    """Of `parts` of `text`, the one sharing the most words with `said` (the first on a tie); `text` when none shares any."""
    best = _best(parts, said)
    return best if set(ENGLISH.terms(said)) & set(ENGLISH.terms(best)) else text


def _best(texts: Sequence[str], said: str) -> str:
    """Of `texts` (not empty), the one sharing the most words with `said`, the first on a tie."""
    wanted = set(ENGLISH.terms(said))
    return max(texts, key=lambda t: len(wanted & set(ENGLISH.terms(t))))


def _ends(quote: str) -> tuple[str, ...]:
    if len(quote) <= EXACT_FRAGMENT_CHARS:
        return (quote,)
    words = quote.split()
    if len(words) <= 2 * FRAGMENT_WORDS:
        return (quote,)
    return " ".join(words[:FRAGMENT_WORDS]), " ".join(words[-FRAGMENT_WORDS:])


def text_fragment(url: str, start: str, end: str = "") -> str:
    """`url` opened at the text from `start` (to `end`): "#:~:text=start,end", each part
    percent-encoded as the Text Fragments spec asks ("-", "&" and "," included)."""
    base, _, fragment = url.partition("#")
    directive = _encode(start) + (f",{_encode(end)}" if end else "")
    return f"{base}#{fragment.split(':~:', 1)[0]}:~:text={directive}"


def _encode(text: str) -> str:
    # quote() leaves "-" (and ".", "_", "~") alone; the spec's syntax uses "-" and ",".
    return percent(text, safe="").replace("-", "%2D")


# --- an extractive answer's quotes, cited by block ------------------------

_FROM_TAB = re.compile(r"^\s*From \[Tab \d+\]")  # the offline model's heading over one tab's quotes
_QUOTING = re.compile(r"(?<=[.!?;:])\s+|\s+…$")
MIN_QUOTED_WORDS = 4  # a piece of an answer this long, found in a block, quotes it
MAX_CITED = 4  # ids cited for one line of an answer


def cite_quotes(answer: str, tabs: Sequence[TabContext]) -> str:
    """`answer`, whose lines quote the tabs verbatim (the offline model's), with each
    line citing the blocks it quotes by id: its "[Tab N]" becomes "[N.4][N.5]", or the
    ids follow a line under a "From [Tab N]" heading. A line that quotes no block is left as it is."""
    blocks = {t.tab_id: split(t) for t in tabs if t.ok}
    current = next(iter(blocks)) if len(blocks) == 1 else None
    out = []
    for line in answer.split("\n"):
        if _FROM_TAB.match(line):
            current = _TAB.search(line).group(1)  # type: ignore[union-attr]
            out.append(line)
            continue
        named = {m.group(1) for m in _TAB.finditer(line)}
        tab = next(iter(named)) if len(named) == 1 else current if not named else None
        found = _cited(line, blocks.get(tab or "", []))
        ids = "".join(f"[{i}]" for i in found)
        if not found:
            out.append(line)
        elif named:
            cite = _TAB.search(line)
            assert cite is not None
            # A PDF's "[Tab 1, p. 4]" keeps its page, which the ids do not say: they follow it.
            after = cite.group(0) if ", p" in cite.group(0) else ""
            out.append(f"{line[:cite.start()]}{after}{ids}{line[cite.end():]}")
        else:
            out.append(f"{line.rstrip()} {ids}")
    return "\n".join(out)


def _cited(line: str, blocks: Sequence[Block]) -> list[str]:
    """The ids of the blocks `line` quotes, best first: each adds words of the line that the
    blocks before it do not quote (a clause another block shares does not cite that block)."""
    said = plain(_TAB.sub("", line))  # its Markdown read as a block's words are
    pieces = [p for p in _QUOTING.split(said.lstrip("-*+ ")) if len(p.split()) >= MIN_QUOTED_WORDS]
    covers = {b.id: c for b in blocks if (c := _covers(said, pieces, b))}
    words = {b.id: _quoted_words(said, pieces, b) for b in blocks if b.id in covers}
    # The blocks that quote most of the line first, then those with the longest quote of it (a
    # block written twice, as extraction and as the page shows it, is cited as the page shows it).
    order = sorted(covers, key=lambda i: (-len(covers[i]), -words[i]))  # stable: page order among equals
    found: list[str] = []
    seen: set[object] = set()
    for i in order:
        if covers[i] - seen:
            found.append(i)
            seen |= covers[i]
    page = list(covers)
    return sorted(found[:MAX_CITED], key=page.index)  # the best, in page order


def _quoted_words(said: str, pieces: list[str], block: Block) -> int:
    """The words of the longest quote of `said` in the block."""
    return max((len(q.split()) if q in said else max((len(p.split()) for p in pieces if p in q), default=0)
                for q in block.quotes), default=0)


def _covers(said: str, pieces: list[str], block: Block) -> frozenset[object]:
    """What of `said` (cut into `pieces`) the block is quoted by: the pieces it holds, or
    (for a quote of the block inside the line) the quote; empty when it is not quoted."""
    if block.is_row and len(block.cells) > 1 and not block.runs:
        # "Pier: North-2": every cell of a data row, not a header row's names before their values.
        quoted = all(c in said for c in block.cells) and any(f"{c}:" not in said for c in block.cells)
        return frozenset([block.id]) if quoted else frozenset()
    out: set[object] = set()
    # A run of short lines (a card) is quoted by any of its lines, as each was a block before.
    for quote in (*block.quotes, *(block.lines if block.more and not block.runs else ())):
        if len(quote.split()) >= MIN_QUOTED_WORDS - 1 and quote in said:
            out |= {n for n, p in enumerate(pieces) if p in quote or quote in p} or {quote}
        out |= {n for n, p in enumerate(pieces) if p in quote}
    return frozenset(out)
