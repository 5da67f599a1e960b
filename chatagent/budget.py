"""Token budgets: split a total across tabs, then fit each tab's text into its share.

Two ways to fit a text that is too long:
- no question: keep the head, cut at a paragraph or sentence boundary;
- with a question: keep the page head plus the chunks that BM25 ranks highest
  against the question, in document order, with a marker for every gap.
  A chunk's score mixes its own BM25 score with that of its block (the table
  or section it belongs to), so the rows of the table a question is about win
  over stray matches elsewhere; table rows are ranked and shown with their
  table's header (and caption), so a row group out of context still reads.
Every marker says how much was left out, so neither the model nor the user
mistakes a partial page for a whole one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import bm25s
import Stemmer
from pydantic import BaseModel

from .tokens import count_tokens

CHUNK_TOKENS = 96  # small enough to pick precisely, large enough to carry context
# Row groups are larger: every gap in a table costs a marker and a repeated header.
TABLE_CHUNK_TOKENS = 256
HEAD_SHARE = 0.12  # of a tab's budget, always kept when selecting: title, lead, infobox
BLOCK_WEIGHT = 1.0  # weight of the block's (table's, section's) score next to the chunk's own
NEIGHBOUR_SHARE = 0.5  # of a chunk's score passed on to the chunks either side of it
REFERENCE_FACTOR = 0.2  # reference lists match many keywords and answer nothing
MIN_TAB_BUDGET = 64
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
_HEADING = re.compile(r"^#{1,6}\s")


class Fitted(BaseModel):
    text: str
    tokens: int
    original_tokens: int
    truncated: bool = False  # head kept, tail cut
    selected: bool = False  # question-relevant parts kept
    omitted_tokens: int = 0


def omitted_marker(tokens: int, *, selected: bool) -> str:
    why = "less related to the question" if selected else "further down the page"
    return f"[… {tokens:,} tokens {why} left out …]"


def allocate(needs: list[int], total: int) -> list[int]:
    """Split `total` tokens across tabs needing `needs` tokens (water-filling).

    Each tab gets an equal share; a tab needing less keeps only what it needs and
    the rest is shared among the longer tabs, repeatedly.
    """
    shares = [0] * len(needs)
    pending = [i for i, n in enumerate(needs) if n > 0]
    left = max(total, 0)
    while pending and left > 0:
        share = left // len(pending)
        if share == 0:
            break
        small = [i for i in pending if needs[i] <= share]
        if not small:
            for i in pending:
                shares[i] = share
            left -= share * len(pending)
            break
        for i in small:
            shares[i] = needs[i]
            left -= needs[i]
        pending = [i for i in pending if i not in small]
    return shares


@dataclass
class _Unit:
    """A paragraph, table row or sentence: the smallest piece kept or dropped."""

    text: str
    tokens: int
    section: str = ""
    table_header: str = ""  # caption, header (+ separator) rows for a table-row unit
    joiner: str = "\n\n"  # what goes before it when it follows its predecessor
    block: int = 0  # the table or section it belongs to
    in_table: bool = False


@dataclass
class _Chunk:
    units: list[_Unit] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.units) + 1

    def rank_text(self) -> str:
        first = self.units[0]
        return " ".join(filter(None, [first.section, first.table_header, *(u.text for u in self.units)]))


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _table_header(lines: list[str]) -> int:
    """How many leading lines of a table block form its header: an optional caption,
    the first row, and a separator row if there is one (trafilatura writes none)."""
    n = 0 if _is_row(lines[0]) else 1
    n += 1
    if n < len(lines) and set(lines[n].strip()) <= set("|-: "):
        n += 1
    return n


def _split_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    section = ""
    block = 0
    table: tuple[str, int] | None = None  # header and block of the table just read
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        lines = para.splitlines()
        if _HEADING.match(lines[0]):
            section = lines[0].lstrip("#").strip()
            block += 1
        if all(_is_row(line) for line in lines[1:]) and (_is_row(lines[0]) or len(lines) > 1):
            if table is not None and _is_row(lines[0]):
                header, tblock = table  # more rows of the same table after a blank line
                body = lines
            else:
                n = _table_header(lines)
                header = "\n".join(lines[:n])
                block += 1
                tblock = block
                units.append(_Unit(header, count_tokens(header), section, block=tblock, in_table=True))
                body = lines[n:]
            for row in body:
                units.append(_Unit(row, count_tokens(row) + 1, section, header, "\n", tblock, True))
            table = (header, tblock)
            block += 1  # prose after a table is not part of it
            continue
        table = None
        tokens = count_tokens(para)
        if tokens <= CHUNK_TOKENS * 2:
            units.append(_Unit(para, tokens + 1, section, block=block))  # + the "\n\n" before it
            continue
        # Long paragraph (or a list): split into lines, then sentences.
        first = True
        for line in lines:
            pieces = _SENTENCE.split(line) if count_tokens(line) > CHUNK_TOKENS else [line]
            for j, piece in enumerate(pieces):
                joiner = "\n\n" if first else (" " if j else "\n")
                units.append(_Unit(piece, count_tokens(piece) + 1, section, "", joiner, block))
                first = False
    return units


def _chunks(units: list[_Unit]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    cur = _Chunk()
    for u in units:
        limit = TABLE_CHUNK_TOKENS if u.table_header else CHUNK_TOKENS
        boundary = bool(cur.units) and (
            cur.tokens + u.tokens > limit
            or u.section != cur.units[-1].section
            or u.table_header != cur.units[-1].table_header
            or u.block != cur.units[-1].block
        )
        if boundary:
            chunks.append(cur)
            cur = _Chunk()
        cur.units.append(u)
    if cur.units:
        chunks.append(cur)
    return chunks


def _join(units: list[_Unit]) -> str:
    out: list[str] = []
    for i, u in enumerate(units):
        if i:
            out.append(u.joiner)
        out.append(u.text)
    return "".join(out)


@lru_cache(maxsize=1)
def english_stemmer() -> Stemmer.Stemmer:
    """One Snowball stemmer per process: BM25 here and in the extractive model share it."""
    return Stemmer.Stemmer("english")


def rank(passages: list[str], query: str) -> list[float]:
    """BM25 scores of `passages` against `query` (stemmed, English stopwords)."""
    if not passages or not query.strip():
        return [0.0] * len(passages)
    kw = dict(stopwords="en", stemmer=english_stemmer(), show_progress=False)
    corpus = bm25s.tokenize(passages, **kw)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    q = bm25s.tokenize([query], return_ids=False, **kw)[0]
    q = [t for t in q if t in corpus.vocab]
    if not q:
        return [0.0] * len(passages)
    return [float(s) for s in retriever.get_scores(q)]


def fit_text(text: str, budget: int, question: str | None = None) -> Fitted:
    """Fit `text` into `budget` tokens; see the module docstring."""
    total = count_tokens(text)
    if total <= budget:
        return Fitted(text=text, tokens=total, original_tokens=total)
    budget = max(budget, MIN_TAB_BUDGET)
    units = _split_units(text)
    if question and question.strip():
        fitted = _select(units, budget, question, total)
        if fitted is not None:
            return fitted
    return _head(units, budget, total)


def _head(units: list[_Unit], budget: int, total: int) -> Fitted:
    reserve = count_tokens(omitted_marker(total, selected=False)) + 2
    kept: list[_Unit] = []
    used = 0
    for u in units:
        if used + u.tokens > budget - reserve:
            # Fill the remainder with whole sentences of this unit, if any fit.
            for sentence in _SENTENCE.split(u.text):
                t = count_tokens(sentence) + 1
                if used + t > budget - reserve:
                    break
                kept.append(_Unit(sentence, t, joiner=" " if kept and kept[-1].text in u.text else u.joiner))
                used += t
            break
        kept.append(u)
        used += u.tokens
    while True:
        body = _join(kept)
        omitted = max(total - count_tokens(body), 0)
        marker = omitted_marker(omitted, selected=False)
        text = f"{body}\n\n{marker}" if body else marker
        tokens = count_tokens(text)
        if tokens <= budget or not kept:
            break
        # Per-unit counts missed a merge or a joiner: drop units from the end until it fits.
        over = tokens - budget
        while kept and over > 0:
            over -= kept.pop().tokens
    return Fitted(text=text, tokens=tokens, original_tokens=total, truncated=True, omitted_tokens=omitted)


def _select(units: list[_Unit], budget: int, question: str, total: int) -> Fitted | None:
    chunks = _chunks(units)
    scores, best_block = _scores(chunks, question)
    if not any(s > 0 for s in scores):
        return None  # nothing matches: the head is the best guess
    gap_cost = count_tokens(omitted_marker(total, selected=True)) + 2
    keep: set[int] = set()
    used = 0

    def cost(i: int) -> int:
        c = chunks[i]
        extra = gap_cost
        header = c.units[0].table_header
        if header and not (i - 1 in keep and chunks[i - 1].units[-1].table_header == header):
            extra += count_tokens(header) + 1
        return c.tokens + extra

    head_budget = int(budget * HEAD_SHARE)
    for i in range(len(chunks)):
        if used + chunks[i].tokens > head_budget:
            break
        keep.add(i)
        used += chunks[i].tokens
    # The block (table, section) that matches best, whole if it fits: aggregate
    # questions ("how many…", "which … most") need every row, not the matching ones.
    if best_block is not None:
        members = [i for i, c in enumerate(chunks) if c.units[0].block == best_block and i not in keep]
        whole = 0
        if members:
            header = chunks[members[0]].units[0].table_header
            whole = sum(chunks[i].tokens for i in members) + gap_cost + count_tokens(header)
        if members and used + whole <= budget:
            keep.update(members)
            used += whole
    for i in sorted(range(len(chunks)), key=lambda j: (-scores[j], j)):
        if i in keep or scores[i] <= 0:
            continue
        c = cost(i)
        if used + c <= budget:
            keep.add(i)
            used += c
    # Leftover room: widen the kept parts with their neighbours, best first.
    for i in sorted(range(len(chunks)), key=lambda j: (-scores[j], j)):
        for n in (i + 1, i - 1):
            if 0 <= n < len(chunks) and n not in keep and i in keep:
                c = cost(n)
                if used + c <= budget:
                    keep.add(n)
                    used += c
    text = _assemble(chunks, keep)
    omitted = max(total - sum(chunks[i].tokens for i in keep), 0)
    tokens = count_tokens(text)
    if tokens > budget:  # estimates drifted (joins, markers): trim from the least relevant end
        return _head(_split_units(text), budget, total)
    return Fitted(text=text, tokens=tokens, original_tokens=total, selected=True, omitted_tokens=omitted)


_CITATION = re.compile(r"^\s*(?:\d+\.\s*)?(?:\*\*)?\^", re.M)


def _is_reference_list(chunk: _Chunk) -> bool:
    """Wiki-style notes ("1. ^ Author (2011). Title. Retrieved …"): they echo the
    page's keywords without answering anything."""
    lines = [line for u in chunk.units for line in u.text.splitlines() if line.strip()]
    return bool(lines) and sum(bool(_CITATION.match(line)) for line in lines) * 2 >= len(lines)


def _scores(chunks: list[_Chunk], question: str) -> tuple[list[float], int | None]:
    """Each chunk's BM25 score plus BLOCK_WEIGHT × its block's, both scaled to [0, 1];
    and the best-matching block."""
    own = rank([c.rank_text() for c in chunks], question)
    own = [s * REFERENCE_FACTOR if s > 0 and _is_reference_list(c) else s for s, c in zip(own, chunks)]
    # A neighbour inherits part of a match's score: "the year after X", "who won
    # before Y" need the rows around the matching one.
    own = [
        max(s, NEIGHBOUR_SHARE * max(own[i - 1] if i else 0.0, own[i + 1] if i + 1 < len(own) else 0.0))
        for i, s in enumerate(own)
    ]
    blocks: dict[int, list[int]] = {}
    for i, c in enumerate(chunks):
        blocks.setdefault(c.units[0].block, []).append(i)
    if BLOCK_WEIGHT <= 0 or len(blocks) < 2:
        return own, None
    ids = [b for b in blocks if not all(_is_reference_list(chunks[i]) for i in blocks[b])]
    if not ids:
        return own, None
    # A block's text: its first chunk with heading and header, then the rest plain.
    texts = [
        " ".join(chunks[i].rank_text() if n == 0 else _join(chunks[i].units) for n, i in enumerate(blocks[b]))
        for b in ids
    ]
    block_scores = dict(zip(ids, rank(texts, question)))
    top_own = max(own) or 1.0
    top_block = max(block_scores.values()) or 1.0
    combined = []
    for i, c in enumerate(chunks):
        b = block_scores.get(c.units[0].block, 0.0)
        combined.append(own[i] / top_own + BLOCK_WEIGHT * b / top_block if own[i] > 0 or b > 0 else 0.0)
    # Only a table is taken whole: prose is served well enough chunk by chunk.
    tables = [b for b in ids if chunks[blocks[b][0]].units[0].in_table]
    best = max(tables, key=lambda b: block_scores[b], default=None)
    return combined, (best if best is not None and block_scores[best] > 0 else None)


def _assemble(chunks: list[_Chunk], keep: set[int]) -> str:
    parts: list[str] = []
    prev = -1
    for i in sorted(keep):
        c = chunks[i]
        if i != prev + 1:
            skipped = sum(chunks[j].tokens for j in range(prev + 1, i))
            parts.append(omitted_marker(skipped, selected=True))
        header = c.units[0].table_header
        continues = prev == i - 1 and prev >= 0 and chunks[prev].units[-1].table_header == header
        if header and not continues:
            parts.append(header + "\n" + _join(c.units).lstrip("\n"))
        elif continues and header:
            parts[-1] += "\n" + _join(c.units)
        else:
            parts.append(_join(c.units))
        prev = i
    if prev < len(chunks) - 1:
        skipped = sum(chunks[j].tokens for j in range(prev + 1, len(chunks)))
        parts.append(omitted_marker(skipped, selected=True))
    return "\n\n".join(parts)
