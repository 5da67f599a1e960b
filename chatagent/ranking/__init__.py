"""Retrieval: which passages a question is about (see `base` for the interface)."""

from .base import (
    CONTENT_WORDS,
    ENGLISH,
    QUESTION_WORDS,
    STOPWORDS_EN,
    Analyser,
    Query,
    Ranker,
    RankerFactory,
    english_stemmer,
    fold,
)
from .bm25 import BM25Ranker
from .embeddings import Meaning, MeaningFactory

__all__ = [
    "CONTENT_WORDS",
    "ENGLISH",
    "QUESTION_WORDS",
    "STOPWORDS_EN",
    "Analyser",
    "BM25Ranker",
    "Meaning",
    "MeaningFactory",
    "Query",
    "Ranker",
    "RankerFactory",
    "english_stemmer",
    "fold",
]
