"""Answers already given: the same question about the same page content to
the same model is answered again from memory, without a model call.

The key is the model's identity, the question (case and spacing aside), each
tab's URL and content hash, and the page budget: any change to what the model
would have been sent misses the cache.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from .context import PageContext
from .events import Citation

DEFAULT_CACHE_SIZE = 256


@dataclass(frozen=True)
class CachedAnswer:
    answer: str
    pass_: int
    citations: list[Citation]
    dropped_citations: int = 0


class AnswerCache:
    """A bounded LRU map from (model, question, pages) to the answer given."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_SIZE) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, CachedAnswer] = OrderedDict()

    @staticmethod
    def key(model: str, question: str, context: PageContext) -> str:
        pages = [(t.url, t.content_hash, t.error or "", t.selection) for t in context.tabs]
        raw = repr((model, " ".join(question.casefold().split()), pages, context.budget_per_tab))
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, key: str) -> CachedAnswer | None:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, key: str, answer: CachedAnswer) -> None:
        self._entries[key] = answer
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
