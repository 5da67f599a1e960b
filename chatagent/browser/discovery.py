"""Find a Chromium to drive without downloading one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import BrowserNotFoundError


_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/snap/bin/chromium",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/opt/google/chrome/chrome",
    "/usr/bin/microsoft-edge",
    "/usr/bin/brave-browser",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)
_PATH_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

INSTALL_HINT = (
    "No Chromium-based browser found. Install one (Debian/Ubuntu: "
    "`sudo apt-get install chromium`; macOS: install Google Chrome) or name a Chrome/Chromium "
    "executable with `chatagent config set browser PATH` (or CHATAGENT_BROWSER)."
)


def _playwright_chromium() -> str | None:
    """The Chromium that `playwright install` put in its cache, if any."""
    root = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache/ms-playwright")
    if not root.is_dir():
        return None
    for exe in sorted(root.glob("chromium-*/chrome-linux*/chrome"), reverse=True):
        if os.access(exe, os.X_OK):
            return str(exe)
    return None


def find_browser(explicit: str | None = None) -> str:
    """The path of `explicit` (the `browser` setting) or of a Chromium found
    on this machine; else `BrowserNotFoundError`."""
    if explicit:
        path = shutil.which(explicit) or explicit
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise BrowserNotFoundError(
            f"The browser setting {explicit!r} is not an executable file. Fix it with "
            "`chatagent config set browser PATH` (or CHATAGENT_BROWSER), or unset it to have one found."
        )
    found = _playwright_chromium()
    if found:
        return found
    for cand in _CANDIDATES:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    for name in _PATH_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserNotFoundError(INSTALL_HINT)
