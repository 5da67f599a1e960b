"""An overview of a page too long for its budget: all of it, in page order, each stretch by its opening.

For a request about the page as a whole ("summarize this", `ranking.scope`), the parts that match
the request's words are no guide: the model must see all of the page. So the page's main content
is cut into stretches of about the same length (`stretches`): as many as the budget gives
SEGMENT_TOKENS each, each cut moved to a heading near it. Each stretch gets a
share of the budget in proportion to its length, and shows its opening (a part's first sentences
say what it is about, as a paragraph's first sentence does): whole paragraphs, then whole
sentences, its first sentence at least. A stretch that fits its share is shown whole.

Why openings and not the best sentences from all over a stretch: every jump in the text is a
seam the model reads across, so a few runs of the page's own prose stand for it better than
many scattered sentences (and cost a "[…]" each).

Only the main content is digested (the text before extraction's "other text" and missed
tables): the menus, related links and share buttons after it are not the page. A page whose
main text is shorter than the budget is digested whole, the rest of its text with it.

The text is the page's words only: what it is and how much was left out are typed fields
(`Overview.parts`, `shown`, `left_out`), which the prompt says in the tab's header beside its
title (`markers.overview_marker`), so the title line that leads the page's text is left out too.
Each gap is "[…]" (`markers.GAP`): the header already says how much was left out, and a count
at every gap would cost more than the sentence it stands for.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate
from dataclasses import dataclass, field

from .markers import GAP, overview_marker
from .tokens import count_tokens

SEGMENT_TOKENS = 300  # of the budget a stretch of the page gets, about: 6 stretches at 2,000 tokens
MIN_SEGMENTS = 6  # a page is never cut into fewer stretches than this (where it has the paragraphs)
SHORT_LINE_WORDS = 6  # a shorter line at a stretch's start (a caption, a date) is passed over
MAX_OPENING_WORDS = 45  # an opening sentence longer than this is cut at a word, with "…", where it does not fit
SNAP = 0.35  # of a stretch's length: how far a cut moves to start at a heading
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
    of: "Piece | None" = None  # the piece it is the first sentences of

    @property
    def heading(self) -> bool:
        return bool(_HEADING.match(self.text))

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass
class Stretch:
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
    left_out: int  # tokens of the page not shown


def main_pieces(pieces: Sequence[Piece], budget: int) -> list[Piece]:
    """The pieces of the page's main content, or all of them where the main content is
    shorter than the budget (extraction found little of it)."""
    end = next((i for i, p in enumerate(pieces) if p.text.strip() in AFTER_MAIN), len(pieces))
    main = list(pieces[:end])
    if sum(p.tokens for p in main) >= budget:
        return main
    # The rest of the page's text, its prose: the labels, buttons and links between it are not the page.
    return main + [p for p in pieces[end:] if p.text.strip() not in AFTER_MAIN and p.words >= SHORT_LINE_WORDS]


def stretches(pieces: Sequence[Piece], budget: int, count: int | None = None) -> list[Stretch]:
    """The page cut into `count` stretches of about the same length (by default as many as
    the budget gives SEGMENT_TOKENS each, MIN_SEGMENTS at least), each cut moved to a
    heading near it so that a stretch starts where a part does. Not one a section: on a page of
    many short sections that is many seams, and a stretch's opening runs on into the next ones."""
    count = count or max(MIN_SEGMENTS, budget // SEGMENT_TOKENS)
    size = sum(p.tokens for p in pieces) / count
    starts = list(accumulate((p.tokens for p in pieces[:-1]), initial=0))  # each piece's first token
    middles = [a + p.tokens / 2 for a, p in zip(starts, pieces)]
    cuts = [0]
    for k in range(1, count):
        at = size * k
        # Only the pieces within SNAP of the cut are looked at: a page of a million lines is cut as quickly.
        window = range(max(bisect_left(starts, at - size * SNAP), cuts[-1] + 1), bisect_right(starts, at + size * SNAP))
        near = [i for i in window if pieces[i].heading]
        i = min(near, key=lambda i: abs(starts[i] - at)) if near else max(bisect_left(middles, at), cuts[-1] + 1)
        if cuts[-1] < i < len(pieces):
            cuts.append(i)
    return [Stretch(list(pieces[a:b])) for a, b in zip(cuts, [*cuts[1:], len(pieces)])] if pieces else []


def _opening(seg: Stretch, room: int) -> list[Piece]:
    """The stretch's opening within `room` tokens: whole pieces, then whole sentences of the
    next; at least its first sentence (cut at MAX_OPENING_WORDS words) whatever the room."""
    body = seg.pieces
    # A caption, a date or a label before the text: passed over, where text follows.
    start = next((i for i, p in enumerate(body) if p.words >= SHORT_LINE_WORDS or p.heading), 0)
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
            out.append(Piece(text, count_tokens(text) + 1, p.joiner, p))
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


def overview(pieces: Sequence[Piece], budget: int, original_tokens: int, *, whole: bool = True) -> Overview | None:
    """The overview, in `budget` tokens, of a page (`original_tokens` long) cut into `pieces`,
    without its title (a first heading of level 1: the tab's header names it). None when the budget
    holds not even the first sentence of one stretch. `whole`: of all of the page (else of the parts
    a request named). The budget holds the header's words for it (`overview_marker`) too."""
    title = bool(pieces) and pieces[0].text.startswith("# ")
    body = list(pieces[1:] if title else pieces)
    cut = stretches(body, budget)
    # The page's parts, as a reader counts them: its sections (and what stands before the first heading).
    section, n = {}, 0
    for i, p in enumerate(body):
        n += p.heading and i > 0
        section[id(p)] = n
    parts = n + 1
    limit = room = budget - count_tokens(overview_marker(parts, parts, original_tokens, whole=whole))
    gap = count_tokens(GAP) + 2
    floors = [sum(p.tokens for p in _opening(s, 0)) + gap for s in cut]
    # More stretches than the budget holds one sentence of each: the shortest go, never for their words.
    for i in sorted(range(len(cut)), key=lambda i: (cut[i].tokens, -i)):
        if sum(floors) <= room:
            break
        cut[i], floors[i] = Stretch(), 0
    kept = [i for i, s in enumerate(cut) if s.pieces]
    if not kept or sum(floors) > room:
        return None
    # Where a stretch went: before each kept one, and after the last (a gap the text must say).
    holes = [i - before > 1 for before, i in zip([-1, *kept], [*kept, len(cut)])]
    cut, floors = [cut[i] for i in kept], [floors[i] for i in kept]
    needs = [s.tokens + gap for s in cut]
    while True:
        shares = _shares(needs, floors, room)
        shown, used, lines = _render(cut, shares, holes)
        seen = len({section[id(p)] for p in shown})
        text = "\n\n".join(lines)
        tokens = count_tokens(text)
        if tokens <= limit:
            return Overview(text, tokens, parts, seen, max(original_tokens - used, 0))
        if room <= sum(floors):
            return None
        room -= tokens - limit + 8  # the pieces' counts missed joins: take it off the shares and try again


def _render(cut: list[Stretch], shares: list[int], holes: list[bool]) -> tuple[list[Piece], int, list[str]]:
    """The page's pieces the overview shows some of, the tokens it shows, and its paragraphs.
    `holes`: whether a stretch left out lies before each of `cut`, and after the last."""
    out: list[str] = []
    shown: list[Piece] = []
    used = 0
    whole_before = True  # all of the page before this stretch is shown
    for seg, share, hole in zip(cut, shares, holes):
        whole_before = whole_before and not hole
        opening = _opening(seg, max(share - count_tokens(GAP) - 2, 0))
        if not opening:
            whole_before = False
            continue
        if not whole_before:
            out.append(GAP)
        out.append("".join((p.joiner if k else "") + p.text for k, p in enumerate(opening)))
        whole_before = len(opening) == len(seg.pieces) and all(a is b for a, b in zip(opening, seg.pieces))
        shown += [p.of or p for p in opening]
        used += sum(p.tokens for p in opening)
    if not whole_before or holes[-1]:
        out.append(GAP)
    return shown, used, out
