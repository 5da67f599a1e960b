"""OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) via the
optional langchain-openai extra."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from ..errors import ModelConfigError

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"  # Ollama's OpenAI-compatible endpoint


def make_openai(model: str, **options: Any) -> BaseChatModel:
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise ModelConfigError(
            "openai:* models need the optional extra: pip install 'chatagent[openai]'"
        ) from exc
    if not model:
        raise ModelConfigError("Name the model after 'openai:', e.g. openai:llama3.1")
    base_url = options.pop("base_url", None) or os.environ.get("CHATAGENT_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    # Local servers ignore the key, but the client insists on one.
    key = options.pop("api_key", None) or os.environ.get("OPENAI_API_KEY") or "not-needed"
    options.setdefault("max_retries", 0)  # chatagent.retry retries, visibly and within bounds
    return ChatOpenAI(model=model, base_url=base_url, api_key=key, streaming=True, stream_usage=True, **options)
