"""Gemini through langchain-google-genai. The client reads GOOGLE_API_KEY and
GOOGLE_GEMINI_BASE_URL itself; we only refuse early when no key is set."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from ..errors import ModelConfigError


def make_gemini(model: str, **options: Any) -> BaseChatModel:
    from langchain_google_genai import ChatGoogleGenerativeAI

    key = options.pop("api_key", None) or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
    if not key:
        raise ModelConfigError(
            f"Model {model!r} needs a Gemini API key: set GOOGLE_API_KEY "
            "(or use --model extractive, which works offline)."
        )
    base_url = options.pop("base_url", None) or os.environ.get("GOOGLE_GEMINI_BASE_URL")
    # One attempt per call: chatagent.retry retries, visibly and within bounds
    # (the SDK's default retries silently for up to a minute).
    kwargs: dict[str, Any] = {"model": model, "google_api_key": key, "max_retries": 1, **options}
    if base_url:
        kwargs["base_url"] = base_url
    return ChatGoogleGenerativeAI(**kwargs)
