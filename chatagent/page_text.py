"""The page as its reader finds it: its rendered text (the browser's innerText,
frames and open shadow roots included), and which words of a quote are in it.

A citation's quote must be text the reader can find on the page, and
extraction reads what the page does not render (collapsed or hidden parts),
or writes it otherwise (a thread laid out as a table, characters the page
garbles that the browser shows otherwise). Only whitespace is normalised: a
quote whose apostrophe, or any other character, differs is not the page's words.
"""

from __future__ import annotations

import re

# A run of a quote's words that is on the page stands for the quote when it is at least
# MIN_RUN_WORDS long and more than half of the quote ("Lunar silver" of "Colour: Lunar
# silver"), or a clause of its own (CLAUSE_WORDS): a few words of a paragraph the page
# hides are often its menu's, and would support nothing.
MIN_RUN_WORDS = 2
CLAUSE_WORDS = 8


def spaced(text: str) -> str:
    return " ".join(text.split())


class PageText:
    """A page's rendered text, whitespace normalised."""

    def __init__(self, rendered: str) -> None:
        lines = [" ".join(line.split()) for line in rendered.splitlines()]
        self._broken = "\n".join(line for line in lines if line)  # its lines: where a text fragment stops
        self.text = self._broken.replace("\n", " ")
        # Most quotes are a rendered line whole (a paragraph, an item, a row's cells): found
        # without a scan of the page, which on the biggest pages takes milliseconds a quote.
        self._lines = frozenset(lines)

    def __len__(self) -> int:
        return len(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PageText) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def has(self, quote: str) -> bool:
        q = spaced(quote)
        return bool(q) and (q in self._lines or q in self.text)

    def ends(self, quote: str) -> tuple[str, str] | None:
        """Where `quote`, on the page across its lines (a term and its value), starts and
        ends: a text fragment's words never run across the page's blocks, so its link names
        the two; None for a quote within a line, or not on the page."""
        q = spaced(quote)
        if not q or q in self._lines or q in self._broken:
            return None
        found = re.search("[ \n]".join(map(re.escape, q.split(" "))), self._broken)
        if found is None:
            return None
        parts = found.group(0).split("\n")
        return parts[0], parts[-1]

    def runs(self, quote: str) -> list[str]:
        """The longest runs of `quote`'s words that are on the page, longest first
        (the earliest first on a tie), each long enough to stand for it (MIN_RUN_WORDS);
        [`quote`] when it is on the page whole."""
        words = quote.split()
        if self.has(quote):
            return [" ".join(words)]
        found: list[tuple[int, int]] = []
        start = 0
        # A run on the page has every run within it on the page too: one pass, each word
        # added once and dropped once, finds every run that cannot be made longer.
        for end in range(1, len(words) + 1):
            while start < end and not self.has(" ".join(words[start:end])):
                start += 1
            longer = end < len(words) and self.has(" ".join(words[start:end + 1]))
            if start < end and not longer:
                found.append((start, end))
        kept = sorted((r for r in found if _stands_for(r[1] - r[0], len(words))), key=lambda r: (r[0] - r[1], r[0]))
        return [" ".join(words[a:b]) for a, b in kept]


def _stands_for(run: int, words: int) -> bool:
    return run >= MIN_RUN_WORDS and (2 * run > words or run >= CLAUSE_WORDS)
