"""Chat models by name. Every one is a LangChain chat model, so the agent is
provider-agnostic: `extractive` (offline default), `gemini-*`, `openai:MODEL`."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from ..errors import ModelConfigError
from .extractive import ExtractiveChatModel

DEFAULT_GEMINI = "gemini-2.5-flash"


def default_model_name(env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return DEFAULT_GEMINI if env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") else "extractive"


def get_chat_model(name: str | None = None, **options: Any) -> BaseChatModel:
    """Build the chat model called `name` (None: the default for this environment)."""
    name = (name or default_model_name()).strip()
    if name == "extractive":
        return ExtractiveChatModel()
    if name.startswith(("gemini-", "models/gemini-", "gemma-")):
        from .gemini import make_gemini

        return make_gemini(name, **options)
    if name.startswith("openai:"):
        from .openai import make_openai

        return make_openai(name.removeprefix("openai:"), **options)
    raise ModelConfigError(
        f"Unknown model {name!r}. Use 'extractive' (offline), a Gemini model such as "
        f"'{DEFAULT_GEMINI}', or 'openai:MODEL' for an OpenAI-compatible server."
    )


def model_label(model: BaseChatModel) -> str:
    """The model as users name it: 'extractive', 'gemini-2.5-flash', 'openai:llama3.1'."""
    if isinstance(model, ExtractiveChatModel):
        return "extractive"
    name = str(getattr(model, "model", None) or getattr(model, "model_name", None) or type(model).__name__)
    if type(model).__module__.startswith("langchain_openai"):
        return f"openai:{name}"
    return name.removeprefix("models/")


def model_identity(model: BaseChatModel) -> str:
    """Label plus endpoint: the same name served elsewhere is another model."""
    base_url = getattr(model, "base_url", None) or getattr(model, "openai_api_base", None) or ""
    return f"{model_label(model)}@{base_url}" if base_url else model_label(model)


def key_setting(model: BaseChatModel) -> str:
    """The setting a user fixes when the service refuses the credentials."""
    module = type(model).__module__
    if module.startswith("langchain_google_genai"):
        return "GOOGLE_API_KEY (and GOOGLE_GEMINI_BASE_URL, if you set it)"
    if module.startswith("langchain_openai"):
        return "OPENAI_API_KEY and CHATAGENT_OPENAI_BASE_URL"
    return "the model's API key"


__all__ = [
    "DEFAULT_GEMINI", "ExtractiveChatModel", "default_model_name", "get_chat_model", "key_setting",
    "model_identity", "model_label",
]
