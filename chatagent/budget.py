"""Token budgets: split a total across tabs, then fit each tab's text into its share.

Two ways to fit a text that is too long:
- no question: keep the head, cut at a paragraph or sentence boundary;
- with a question: keep the page head plus the chunks that BM25 ranks highest
  against the question, in document order, with a marker for every gap.
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
HEAD_SHARE = 0.12  # of a tab's budget, always kept when selecting: title, lead, infobox
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
    table_header: str = ""  # header + separator rows for a table-row unit
    joiner: str = "\n\n"  # what goes before it when it follows its predecessor


@dataclass
class _Chunk:
    units: list[_Unit] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.units) + 1

    def rank_text(self) -> str:
        first = self.units[0]
        return " ".join(filter(None, [first.section, first.table_header, *(u.text for u in self.units)]))


def _split_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    section = ""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        lines = para.splitlines()
        if _HEADING.match(lines[0]):
            section = lines[0].lstrip("#").strip()
        if all(line.lstrip().startswith("|") for line in lines) and len(lines) > 2:
            header = "\n".join(lines[:2]) if set(lines[1].strip()) <= set("|-: ") else ""
            body = lines[2:] if header else lines
            if header:
                units.append(_Unit(header, count_tokens(header), section))
            for i, row in enumerate(body):
                units.append(_Unit(row, count_tokens(row) + 1, section, header, "\n" if header or i else "\n\n"))
            continue
        tokens = count_tokens(para)
        if tokens <= CHUNK_TOKENS * 2:
            units.append(_Unit(para, tokens, section))
            continue
        # Long paragraph (or a list): split into lines, then sentences.
        first = True
        for line in lines:
            pieces = _SENTENCE.split(line) if count_tokens(line) > CHUNK_TOKENS else [line]
            for j, piece in enumerate(pieces):
                joiner = "\n\n" if first else (" " if j else "\n")
                units.append(_Unit(piece, count_tokens(piece) + 1, section, "", joiner))
                first = False
    return units


def _chunks(units: list[_Unit]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    cur = _Chunk()
    for u in units:
        boundary = bool(cur.units) and (
            cur.tokens + u.tokens > CHUNK_TOKENS
            or u.section != cur.units[-1].section
            or u.table_header != cur.units[-1].table_header
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
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def rank(passages: list[str], query: str) -> list[float]:
    """BM25 scores of `passages` against `query` (stemmed, English stopwords)."""
    if not passages or not query.strip():
        return [0.0] * len(passages)
    kw = dict(stopwords="en", stemmer=_stemmer(), show_progress=False)
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
    body = _join(kept)
    omitted = max(total - count_tokens(body), 0)
    text = f"{body}\n\n{omitted_marker(omitted, selected=False)}" if body else omitted_marker(omitted, selected=False)
    return Fitted(text=text, tokens=count_tokens(text), original_tokens=total, truncated=True, omitted_tokens=omitted)


def _select(units: list[_Unit], budget: int, question: str, total: int) -> Fitted | None:
    chunks = _chunks(units)
    scores = rank([c.rank_text() for c in chunks], question)
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
