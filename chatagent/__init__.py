"""chatagent: ask questions about web pages, one tab or several compared."""

from .browser import Browser, PageSnapshot, StaticTab, Tab, TabFailure, find_browser
from .budget import allocate, fit_text
from .context import ContextBuilder, PageContext, TabContext
from .errors import (
    AbortedError,
    BrowserError,
    BrowserNotFoundError,
    ChatAgentError,
    ModelConfigError,
    ModelError,
    TabError,
    ToolError,
)
from .extraction import Extracted, Extractor
from .tokens import count_tokens

__version__ = "0.1.0"

__all__ = [
    "AbortedError",
    "Browser",
    "BrowserError",
    "BrowserNotFoundError",
    "ChatAgentError",
    "ContextBuilder",
    "Extracted",
    "Extractor",
    "ModelConfigError",
    "ModelError",
    "PageContext",
    "PageSnapshot",
    "StaticTab",
    "Tab",
    "TabContext",
    "TabError",
    "TabFailure",
    "ToolError",
    "allocate",
    "count_tokens",
    "find_browser",
    "fit_text",
]
