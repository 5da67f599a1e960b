"""Make sure a Chromium is available for chatagent (used by `make setup`).

Found by chatagent's own discovery: nothing to do. Missing and running as root
with apt-get: install Debian's `chromium`. Otherwise say what to install and
exit 1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from chatagent.browser.discovery import find_browser
from chatagent.errors import BrowserNotFoundError


def _found() -> str | None:
    try:
        return find_browser(os.environ.get("CHATAGENT_BROWSER"))
    except BrowserNotFoundError:
        return None


def main() -> int:
    path = _found()
    if path:
        print(f"browser: {path}")
        return 0
    if os.environ.get("CHATAGENT_BROWSER"):
        # An explicit but broken setting is the user's to fix, not ours to paper over.
        find_browser(os.environ["CHATAGENT_BROWSER"])  # raises with the message naming the setting
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if is_root and shutil.which("apt-get"):
        print("No Chromium found; installing Debian's chromium package…", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], check=True, env=env)
        path = _found()
        if path:
            print(f"browser: {path}")
            return 0
    try:
        find_browser(os.environ.get("CHATAGENT_BROWSER"))
    except BrowserNotFoundError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrowserNotFoundError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        sys.exit(1)
    except subprocess.CalledProcessError as exc:
        print(f"error: installing chromium failed ({exc}); install it by hand or set CHATAGENT_BROWSER.",
              file=sys.stderr)
        sys.exit(1)
