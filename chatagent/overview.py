"""An overview of a page too long for its budget: every part of it, in page order, in proportion to its length.

For a request about the page as a whole ("summarize this", `ranking.scope`), the parts that match
the request's words are no guide: the model must see all of the page. So the page's main content
is cut into parts, at its headings and, where a part is long, into stretches of about the same
length, and each part gets a share of the budget in proportion to its length: its heading and
its opening (a part's opening sentences say what it is about, as a paragraph's first sentence
does), as many of its sentences as its share holds. A part that fits its share is kept whole.
When there are more parts than the budget holds even one sentence of each, the shortest are left
out, never for their words.

Only the main content is digested (the text before extraction's "other text" and missed
tables): the menus, related links and share buttons after it are not the page. A page whose
main text is shorter than the budget is digested whole, the rest of its text with it.

The text starts with a marker that says it is an overview (`markers.overview_marker`), and each
gap is "[…]" (`markers.GAP`): the marker already says how much was left out, and a count at
every gap would cost more than the sentence it stands for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .markers import GAP, overview_marker
from .tokens import count_tokens

SEGMENT_TOKENS = 250  # of the budget a stretch of the page gets, about: 8 stretches at 2,000 tokens
MIN_SEGMENTS = 6  # a page is never cut into fewer stretches than this (where it has the paragraphs)
MIN_SENTENCE_WORDS = 8  # a part's opening sentence is one of at least this many words
SHORT_LINE_WORDS = 6
LABEL_WORDS = 4  # a shorter line that is no heading (a label, a date, a button) is no part of an overview  # a shorter line at a part's start (a caption, a date) is passed over
MAX_OPENING_WORDS = 45
SNAP = 0.35  # of a stretch's length: how far a cut moves to start at a heading  # an opening sentence longer than this is cut at a word, with "…"
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
_HEADING = re.compile(r"^#{1,6}\s")
# The headings extraction puts above what is not the page's main text (`extraction`, `page_lines`).
AFTER_MAIN = ("## Other text on the page", "## Tables not in the main text")


@dataclass
class Piece:
    """A paragraph, line or row of the page, as the budgeter cut it."""

    text: str
    tokens: int
    joiner: str = "\n\n"  # what stands before it when it follows the piece before it

    @property
    def heading(self) -> bool:
        return bool(_HEADING.match(self.text))

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass
class _Stretch:
    pieces: list[Piece] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)


@dataclass(frozen=True)
class Overview:
    text: str
    tokens: int
    parts: int  # parts of the page (its headings below the title; 1 with none)
    shown: int  # parts shown some of


def main_pieces(pieces: Sequence[Piece], budget: int) -> list[Piece]:
    """The pieces of the page's main content, or all of them where the main content is
    shorter than the budget (extraction found little of it)."""
    end = next((i for i, p in enumerate(pieces) if p.text.strip() in AFTER_MAIN), len(pieces))
    main = list(pieces[:end])
    return main if sum(p.tokens for p in main) >= budget else [p for p in pieces if p.text.strip() not in AFTER_MAIN]


def _stretches(pieces: Sequence[Piece], budget: int) -> list[_Stretch]:
    """The page cut into stretches of about the same length, as many as the budget gives
    SEGMENT_TOKENS each (MIN_SEGMENTS at least), each cut moved to a heading near it so
    that a stretch starts where a part does."""
    count = max(MIN_SEGMENTS, budget // SEGMENT_TOKENS)
    size = sum(p.tokens for p in pieces) / count
    starts = [0] * len(pieces)  # each piece's first token
    for i in range(1, len(pieces)):
        starts[i] = starts[i - 1] + pieces[i - 1].tokens
    cuts = [0]
    for k in range(1, count):
        at = size * k
        near = [i for i in range(cuts[-1] + 1, len(pieces)) if abs(starts[i] - at) <= size * SNAP and pieces[i].heading]
        i = min(near, key=lambda i: abs(starts[i] - at)) if near else next(
            (i for i in range(cuts[-1] + 1, len(pieces)) if starts[i] + pieces[i].tokens / 2 >= at), len(pieces))
        if cuts[-1] < i < len(pieces):
            cuts.append(i)
    return [_Stretch(list(pieces[a:b])) for a, b in zip(cuts, [*cuts[1:], len(pieces)])]


def _opening(seg: _Stretch, room: int) -> list[Piece]:
    """The stretch's opening within `room` tokens: whole pieces, then whole sentences of the
    next; at least its first sentence (cut at MAX_OPENING_WORDS words) whatever the room."""
    body = seg.pieces
    start = 0
    # A caption, a date or a label before the text: passed over, where text follows.
    while start < len(body) - 1 and body[start].words < SHORT_LINE_WORDS and not body[start].heading:
        start += 1
    out: list[Piece] = []
    used = 0
    for p in body[start:]:
        if used + p.tokens <= room:
            out.append(p)
            used += p.tokens
            continue
        sentences = _SENTENCE.split(p.text)
        kept: list[str] = []
        for s in sentences:
            t = count_tokens(s) + 1
            if used + t > room and (out or kept):
                break
            kept.append(s)
            used += t
        if kept:
            text = " ".join(kept)
            if not out and len(kept) == 1 and len(text.split()) > MAX_OPENING_WORDS and used > room:
                text = " ".join(text.split()[:MAX_OPENING_WORDS]) + " …"
            out.append(Piece(text, count_tokens(text) + 1, p.joiner))
        break
    return out


def _shares(needs: list[int], floors: list[int], total: int) -> list[int]:
    """`total` split in proportion to `needs`, each at least its floor, none more than its need."""
    shares = list(floors)
    left = total - sum(floors)
    open_ = [i for i in range(len(needs)) if needs[i] > shares[i]]
    while left > 0 and open_:
        weight = sum(needs[i] for i in open_) or 1
        given = 0
        for i in open_:
            add = min(needs[i] - shares[i], int(left * needs[i] / weight))
            shares[i] += add
            given += add
        open_ = [i for i in open_ if needs[i] > shares[i]]
        if given == 0:
            break
        left -= given
    return shares


def overview(pieces: Sequence[Piece], budget: int, original_tokens: int) -> Overview:
    """The overview, in `budget` tokens, of a page (`original_tokens` long) cut into `pieces`;
    its title (a first heading of level 1) leads it."""
    title = pieces[0].text if pieces and pieces[0].text.startswith("# ") else ""
    body = [p for p in (pieces[1:] if title else pieces) if p.heading or p.words >= 0]
    stretches = _stretches(body, budget)
    parts = max(sum(p.heading for p in body), 1)
    room = budget - count_tokens(overview_marker(parts, parts, original_tokens)) - 2 - (count_tokens(title) + 2 if title else 0)
    gap = count_tokens(GAP) + 2
    floors = [sum(p.tokens for p in _opening(s, 0)) + gap for s in stretches]
    needs = [s.tokens + gap for s in stretches]
    while True:
        shares = _shares(needs, floors, room)
        text, used, shown = _render(stretches, shares, parts, original_tokens, title)
        tokens = count_tokens(text)
        if tokens <= budget or room <= 0:
            return Overview(text, tokens, parts, shown)
        room -= tokens - budget + 8  # the pieces' counts missed joins: take it off the shares and try again


def _render(stretches: list[_Stretch], shares: list[int], parts: int, original: int, title: str
            ) -> tuple[str, int, int]:
    """The overview's text, the page's tokens it shows and the parts it shows some of."""
    out: list[str] = []
    shown = used = 0
    whole_before = True  # all of the page before this stretch is shown
    for seg, share in zip(stretches, shares):
        opening = _opening(seg, max(share - count_tokens(GAP) - 2, 0))
        if not opening:
            whole_before = False
            continue
        if not whole_before:
            out.append(GAP)
        out.append("".join((p.joiner if k else "") + p.text for k, p in enumerate(opening)))
        whole_before = len(opening) == len(seg.pieces) and all(a is b for a, b in zip(opening, seg.pieces))
        used += sum(p.tokens for p in opening)
        shown += sum(p.heading for p in opening) or (not out or not seg.pieces[0].heading and shown == 0)
    if not whole_before:
        out.append(GAP)
    lead = [title] if title else []
    shown = min(max(shown, 1), parts)
    return "\n\n".join([*lead, overview_marker(shown, parts, max(original - used, 0)), *out]), used, shown
