"""A worker process's watch on its owner: an owner killed outright (SIGKILL, a
crash) never says goodbye, and a worker waiting for work, or an idle sibling's
pipe, would keep it alive forever. Shared by the extraction workers and the
offline model's readers."""

from __future__ import annotations

import os
import threading
import time

OWNER_CHECK_S = 1.0  # how often a worker checks that its owner is alive


def exit_with(owner: int) -> None:
    """End this process, from a daemon thread, once process `owner` is gone."""
    threading.Thread(target=_watch, args=(owner,), name="owner-watch", daemon=True).start()


def _watch(owner: int) -> None:
    while True:
        time.sleep(OWNER_CHECK_S)
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass  # alive, and not ours to signal
