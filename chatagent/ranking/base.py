"""The retrieval interface: an `Analyser` turns text into terms, a `Ranker`
scores a query against a fixed list of passages.

Every user of retrieval (question-aware selection in `budget`, the offline
`extractive` model) analyses text with an `Analyser` from here, so a term and
a stop word mean the same thing everywhere. A `Query` is analysed once and
can be scored against any number of rankers (a page has several indexes).

A ranking method is one module implementing `Ranker` (`bm25.BM25Ranker`);
callers receive a `RankerFactory` rather than naming one, so another method
(embeddings, say) slots in beside BM25 without touching them.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import chain

import Stemmer

# bm25s's English stop words (`bm25s.stopwords.STOPWORDS_EN`): only the words
# that carry nothing in any text.
STOPWORDS_EN = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)
# The function words questions are phrased in ("how many … does the page say"):
# gone too when what matters is a question's topic.
QUESTION_WORDS = frozenset(
    "how much many what which who whom whose when where why does do did done has have had can could would should "
    "may might must shall its i you me my your we our us them him her his she he any some all please tell give show "
    "shown find list listed name say said page pages tab tabs according mentioned mention about from than been being "
    "so very just also only there here were am within without during between among per via upon onto across "
    "through toward towards more most less least".split()
)
_WORD = re.compile(r"(?u)\b\w\w+\b")  # two or more word characters, as bm25s (and scikit-learn) split
_COMBINING = re.compile(r"[\u0300-\u036f]+")


@lru_cache(maxsize=1)
def english_stemmer() -> Stemmer.Stemmer:
    """One Snowball stemmer per process, shared by every analyser."""
    return Stemmer.Stemmer("english")


def fold(text: str) -> str:
    """Accents off ("Škoda" → "Skoda"): questions are often typed without them."""
    if text.isascii():
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


@dataclass(frozen=True)
class Query:
    """A question as rankers see it: its text, and its terms as the caller's
    analyser made them (repeats count again)."""

    text: str
    terms: tuple[str, ...]

    def without(self, terms: Collection[str]) -> Query:
        """The same question without some of its terms (those a page's title already answers)."""
        return Query(self.text, tuple(t for t in self.terms if t not in terms))


@dataclass(frozen=True)
class Analyser:
    """Text to terms: accents folded (if `fold_accents`), lower-cased, split into
    words of two or more characters, `stopwords` dropped, the rest stemmed."""

    stopwords: frozenset[str] = STOPWORDS_EN
    fold_accents: bool = True

    def terms(self, text: str) -> list[str]:
        return self.analyse([text])[0]

    def analyse(self, texts: Iterable[str]) -> list[list[str]]:
        """The terms of each text; every distinct word is stemmed once."""
        stop = self.stopwords
        words = [[w for w in self._words(text) if w not in stop] for text in texts]
        distinct = list(dict.fromkeys(chain.from_iterable(words)))
        stem = dict(zip(distinct, english_stemmer().stemWords(distinct))).__getitem__
        return [list(map(stem, ws)) for ws in words]

    def stems(self, words: Sequence[str]) -> list[str]:
        """Each word's stem, stop words included: one for one with `words`."""
        return english_stemmer().stemWords([self._normal(w) for w in words])

    def query(self, text: str) -> Query:
        return Query(text, tuple(self.terms(text)))

    def _normal(self, text: str) -> str:
        return (fold(text) if self.fold_accents else text).lower()

    def _words(self, text: str) -> list[str]:
        return _WORD.findall(self._normal(text))


# Pages: only the stop words that carry nothing; accents folded.
ENGLISH = Analyser()
# Questions' topics: their function words gone too. Accents are kept (`fold`
# is not applied): the extractive model has always matched them as typed.
CONTENT_WORDS = Analyser(STOPWORDS_EN | QUESTION_WORDS, fold_accents=False)


class Ranker(ABC):
    """A fixed list of passages, indexed once, then scored against any number
    of queries. A new method is a subclass that indexes in `__init__` and
    implements `scores`."""

    def __init__(self, passages: Sequence[str], analyser: Analyser = ENGLISH) -> None:
        self.passages = tuple(passages)
        self.analyser = analyser

    def __len__(self) -> int:
        return len(self.passages)

    @cached_property
    def terms(self) -> list[list[str]]:
        """Each passage's terms, as `analyser` makes them."""
        return self.analyser.analyse(self.passages)

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Every term of every passage."""
        return frozenset(chain.from_iterable(self.terms))

    @abstractmethod
    def scores(self, query: Query) -> list[float]:
        """One score per passage, in order: higher is more relevant, and 0.0
        (never less) means unrelated; callers take any score above 0.0 for a
        match, so a method whose similarities are never zero (embeddings)
        cuts them off at its own threshold. A query that matches nothing, or
        has no terms, scores 0.0 everywhere."""


# What callers receive to build their indexes: a `Ranker` subclass, or any
# callable with its constructor's signature.
RankerFactory = Callable[[Sequence[str], Analyser], Ranker]
