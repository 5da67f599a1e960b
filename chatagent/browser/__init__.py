"""Browser backends behind one `Tab` interface."""

from .base import Browser, PageSnapshot, ScrollDirection, ScrollResult, Tab, TabFailure
from .discovery import find_browser
from .static import StaticTab

__all__ = [
    "Browser",
    "PageSnapshot",
    "ScrollDirection",
    "ScrollResult",
    "StaticTab",
    "Tab",
    "TabFailure",
    "find_browser",
]
