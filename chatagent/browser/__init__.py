"""Browser backends behind one `Browser`/`Tab` interface, and `open_browser`,
the factory that opens the one the settings name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Browser, PageSnapshot, ScrollDirection, ScrollResult, Tab, TabFailure
from .discovery import find_browser

if TYPE_CHECKING:
    from ..settings import Settings
    from .static import StaticTab


def __getattr__(name: str) -> Any:
    # StaticTab parses HTML with lxml (~15 ms to import): `ask` through a daemon never needs it.
    if name == "StaticTab":
        from .static import StaticTab

        return StaticTab
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


async def open_browser(settings: "Settings") -> Browser:
    """Attach to the running Chrome at `settings.cdp`, use a browser from the
    Playwright browser server at `settings.browser_ws`, or launch a headless
    Chromium (`settings.browser`, else one found on this machine)."""
    from .playwright import PlaywrightBrowser  # Playwright is slow to import: only when a browser is wanted

    if settings.cdp:
        return await PlaywrightBrowser.connect_cdp(settings.cdp, max_response_mb=settings.max_response_mb,
                                                   max_page_chars=settings.max_page_chars)
    if settings.browser_ws:
        return await PlaywrightBrowser.connect_ws(settings.browser_ws, max_response_mb=settings.max_response_mb,
                                                  max_page_chars=settings.max_page_chars)
    return await PlaywrightBrowser.launch(executable_path=find_browser(settings.browser),
                                          max_response_mb=settings.max_response_mb, max_page_chars=settings.max_page_chars,
                                          max_tabs_mb=settings.max_tabs_mb)


__all__ = [
    "Browser",
    "PageSnapshot",
    "ScrollDirection",
    "ScrollResult",
    "StaticTab",
    "Tab",
    "TabFailure",
    "find_browser",
    "open_browser",
]
