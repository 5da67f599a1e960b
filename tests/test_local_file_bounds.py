"""A local file the user names is served to the browser a piece at a time,
and one past `max_response_mb` is refused before it is read: naming a file
far larger than memory costs chatagent no more than naming a small one.
Through `chatagent ask` in a process of its own, its memory read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
HUGE_MB = 640  # sparse: no disk, but a server that read it whole would hold all of it
LIMIT_MB = 64
# Well above an ask's own peak (~180 MB here), well below one holding the file (~790 MB).
RSS_BOUND_MB = 450


def _peak_rss_mb(pid: int, done: threading.Event, peak: list[float]) -> None:
    """The process's high-water mark of resident memory (VmHWM), read until it exits."""
    while not done.is_set():
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]) / 1024)
        except OSError:
            return
        time.sleep(0.02)


def test_a_file_larger_than_memory_is_refused_unread_and_the_other_tab_answered(tmp_path: Path) -> None:
    huge = tmp_path / "ledger.txt"
    with open(huge, "wb") as f:
        f.truncate(HUGE_MB * 1_000_000)
    small = tmp_path / "notes.html"
    small.write_text("<html><head><title>Notes</title></head><body><h1>Notes</h1>"
                     "<p>The launch code is 4417.</p></body></html>")
    # Not forked from the tests' warm server: the process measured is the one that serves the file.
    proc = subprocess.Popen(
        [sys.executable, "-m", "chatagent", "ask", str(huge), str(small), "-q", "What is the launch code?"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "CHATAGENT_MAX_RESPONSE_MB": str(LIMIT_MB)},
    )
    done, peak = threading.Event(), [0.0]
    watcher = threading.Thread(target=_peak_rss_mb, args=(proc.pid, done, peak))
    watcher.start()
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        done.set()
        watcher.join()
    assert proc.returncode == 0, err
    assert f"{huge.as_uri()} is larger than {LIMIT_MB} MB (the max_response_mb setting), so it was not loaded" in err
    assert "raise max_response_mb" in err and "Traceback" not in err
    assert "4417" in out, "the other tab of the question is answered"
    assert 0 < peak[0] < RSS_BOUND_MB, f"chatagent held {peak[0]:.0f} MB for a {HUGE_MB} MB file"
