"""A semantic signal beside BM25: static word embeddings.

Side-panel questions paraphrase the page ("how heavy is it" of "the frame
weighs 700 grams"), and where the budget is small the passage BM25 ranks first
for the question's words is often not the one with the answer. A passage's
vector is the mean of its tokens' vectors (WordLlama's `l2_supercat`, 256
dimensions, MIT: 32,000 tokens); relevance is its cosine with the question's.
Where it is used, and where BM25 alone decides: `budget`, docs/retrieval.md.

The weights and tokenizer are files of the `wordllama` wheel. They are read
with `safetensors` and `tokenizers` directly: importing `wordllama` itself
configures the root logger (`logging.basicConfig`), and nothing here needs
its code. Nothing is ever downloaded; a wheel without the files fails at once.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

MODEL = "l2_supercat"
TEXTS_AT_ONCE = 256  # tokenized together: their encodings are held at once
TOKENS_AT_ONCE = 32_768  # vectors gathered together: 32 MB


class WordVectors:
    """The token vectors and their tokenizer: read once per process (`word_vectors`)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        # Stored as float16; summed as float32 (32 MB), or a long passage's sum loses its digits.
        weights = load_file(str(folder / "weights" / f"{MODEL}_256.safetensors"))["embedding.weight"]
        self.matrix: np.ndarray = weights.astype(np.float32)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizers" / f"{MODEL}_tokenizer_config.json"))
        # Unpadded: a batch padded to its longest text costs its length times its size
        # (a page's blocks: one of 20,000 characters made fifty cost 0.9 s).
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._lock = threading.Lock()  # fits run on several threads; one tokenizer is not shared mid-call

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text (zeros for a text with no tokens). Memory stays
        bounded however much text: TEXTS_AT_ONCE are tokenized, and the vectors of
        at most TOKENS_AT_ONCE tokens gathered, at a time."""
        sums = np.zeros((len(texts), self.matrix.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), TEXTS_AT_ONCE):
            with self._lock:
                encoded = self._tokenizer.encode_batch(list(texts[start:start + TEXTS_AT_ONCE]),
                                                       add_special_tokens=False)
            last = len(self.matrix) - 1
            ids = [np.clip(np.asarray(e.ids, dtype=np.int64), 0, last) for e in encoded]
            lengths = np.array([len(i) for i in ids], dtype=np.int64)
            if 0 < lengths.sum() <= TOKENS_AT_ONCE:  # the usual case: one gather for the batch
                has = lengths > 0
                starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[has]
                gathered = self.matrix[np.concatenate(ids)]
                sums[start:start + len(ids)][has] = np.add.reduceat(gathered, starts, axis=0)
            else:
                for k, one in enumerate(ids):
                    for at in range(0, len(one), TOKENS_AT_ONCE):
                        sums[start + k] += self.matrix[one[at:at + TOKENS_AT_ONCE]].sum(axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)


def _wheel_folder() -> Path:
    spec = importlib.util.find_spec("wordllama")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("The wordllama package, which carries the word vectors, is not installed.")
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=1)
def word_vectors() -> WordVectors:
    """One set of vectors per process (~0.07 s to read), shared by every index."""
    return WordVectors(_wheel_folder())


class Meaning:
    """A fixed list of passages, embedded once, then scored against any number
    of questions: each passage's cosine with the question, 0 at or below 0."""

    def __init__(self, passages: Sequence[str]) -> None:
        self.passages = tuple(passages)
        self._vectors = word_vectors().embed(self.passages)

    def scores(self, question: str) -> list[float]:
        if not self.passages or not question.strip():
            return [0.0] * len(self.passages)
        [q] = word_vectors().embed([question])
        return np.maximum(self._vectors @ q, 0.0).tolist()


# What callers receive to build a semantic index: `Meaning`, or any callable with its constructor's signature.
MeaningFactory = Callable[[Sequence[str]], Meaning]
