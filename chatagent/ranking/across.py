"""Which of several tabs a question is about: a score per tab, comparable across them.

A page's own index (`bm25`) weighs a term by its rarity on that page, so its
scores say which passage of the page fits best, not whether the page fits
better than another. Across tabs a term weighs by the tabs it is found in (a
word every tab has tells them apart no more than a stop word), and a tab
scores what its best place holds of the question's weight: two neighbouring
passages, so that terms a sentence or two apart still count together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .base import QUESTION_WORDS, STOPWORDS_EN, Analyser

# Questions' topics, analysed as pages are (accents folded, same stems).
TOPIC = Analyser(STOPWORDS_EN | QUESTION_WORDS)


def _idf(tabs: int, found_in: int) -> float:
    """BM25's (Lucene's) inverse document frequency, tabs for documents: ~0 for a term every tab has."""
    return math.log(1 + (tabs - found_in + 0.5) / (found_in + 0.5))


def tab_relevance(terms: Sequence[str], tabs: Sequence[Sequence[frozenset[str]]]) -> list[float]:
    """Each tab's share, in [0, 1], of the question's weight found in its best two neighbouring passages.

    `terms`: the question's (`TOPIC.terms`); `tabs`: each tab's passages, as sets of terms (an
    empty list for a tab with none). 0.0 everywhere when no term is in any tab."""
    asked = set(terms)
    if not asked or not tabs:
        return [0.0] * len(tabs)
    held = [set().union(*passages) & asked if passages else set() for passages in tabs]
    n = len(tabs)
    weight = {t: _idf(n, sum(t in h for h in held)) for t in asked}
    full = sum(weight.values())
    out = []
    for passages, h in zip(tabs, held):
        if not h:
            out.append(0.0)
            continue
        found = [p & h for p in passages]
        best = max(sum(weight[t] for t in (a | b)) for a, b in zip(found, [*found[1:], set()]))
        out.append(best / full)
    return out
