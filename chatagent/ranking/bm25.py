"""BM25 (bm25s's Lucene variant, k1 1.5, b 0.75) over the analyser's terms."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import bm25s

from .base import ENGLISH, Analyser, Query, Ranker

# bm25s makes a tqdm bar (hidden) per index, and tqdm's first bar makes a
# multiprocessing lock: with the worker processes' fork server running, the
# resource tracker then warns of a "leaked semaphore" as chatagent exits. A
# thread lock is all a hidden bar needs.
try:
    from tqdm import tqdm
except ImportError:  # bm25s without its "core" extra draws no bars
    pass
else:
    tqdm.set_lock(threading.RLock())


class BM25Ranker(Ranker):
    """Lexical relevance: a query's terms, weighted by their rarity across the passages."""

    def __init__(self, passages: Sequence[str], analyser: Analyser = ENGLISH) -> None:
        super().__init__(passages, analyser)
        self._bm25: bm25s.BM25 | None = None
        if self.vocabulary:  # bm25s cannot index passages of stop words only
            ids = {t: i for i, t in enumerate(self.vocabulary)}
            corpus = [list(map(ids.__getitem__, terms)) for terms in self.terms]
            self._bm25 = bm25s.BM25()
            self._bm25.index((corpus, ids), show_progress=False)

    def scores(self, query: Query) -> list[float]:
        known = [t for t in query.terms if t in self.vocabulary]
        if self._bm25 is None or not known:
            return [0.0] * len(self)
        return [float(s) for s in self._bm25.get_scores(known)]
