"""chatagent: ask questions about web pages, one tab or several compared.

The public API is loaded lazily: `import chatagent` stays cheap for the CLI
and the bridge host, which import only what they use.
"""

from __future__ import annotations

from importlib import import_module

# Not `typing.TYPE_CHECKING`: this runs before `chatagent.__main__` holds
# Ctrl-C, and a Ctrl-C in an import here would end in a traceback.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "ChatAgent": "agent",
    "MAX_TURNS": "agent",
    "Browser": "browser",
    "PageSnapshot": "browser",
    "StaticTab": "browser",
    "Tab": "browser",
    "TabFailure": "browser",
    "find_browser": "browser",
    "AnswerCache": "cache",
    "allocate": "budget",
    "fit_text": "budget",
    "ContextBuilder": "context",
    "PageContext": "context",
    "TabContext": "context",
    "BrowserError": "errors",
    "BrowserNotFoundError": "errors",
    "ChatAgentError": "errors",
    "ModelConfigError": "errors",
    "ModelError": "errors",
    "TabError": "errors",
    "ToolError": "errors",
    "Event": "events",
    "parse_event": "events",
    "Extracted": "extraction",
    "ExtractionPool": "extraction",
    "Extractor": "extraction",
    "History": "history",
    "Model": "models",
    "load_model": "models",
    "RetryPolicy": "retry",
    "Conversation": "runtime",
    "Runtime": "runtime",
    "Settings": "settings",
    "count_tokens": "tokens",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chatagent' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


if TYPE_CHECKING:
    from typing import Any

    from .agent import MAX_TURNS, ChatAgent
    from .browser import Browser, PageSnapshot, StaticTab, Tab, TabFailure, find_browser
    from .budget import allocate, fit_text
    from .cache import AnswerCache
    from .context import ContextBuilder, PageContext, TabContext
    from .errors import (
        BrowserError, BrowserNotFoundError, ChatAgentError, ModelConfigError, ModelError, TabError,
        ToolError,
    )
    from .events import Event, parse_event
    from .extraction import Extracted, ExtractionPool, Extractor
    from .history import History
    from .models import Model, load_model
    from .retry import RetryPolicy
    from .runtime import Conversation, Runtime
    from .settings import Settings
    from .tokens import count_tokens
