"""Hostile model servers against `chatagent ask`: how long past its deadline a
question runs, and how much the chatagent process holds, against each of the
misbehaving OpenAI-compatible stand-ins (`chatagent.testing.openai_server`).

    python -m benchmarks.hostile_streams [--deadline 10] [--limit 120] [--root DIR] [KIND ...]

KINDs: stall (part of an answer, then keep-alives and no chunk), flood (chunks
with nothing in them, at full speed), toolcalls (a reply of 5,000 tool calls),
hugearg (a 50 MB tool argument), tokenize (a /tokenize answer without end).
One JSON line each: `question_s` is the time from the model server's first
request to the last line on stderr (an error, a stop, an answer's
figures), so the pages' loading before it is not counted against the deadline;
`peak_rss_mb` is the ask process's own (the browser's are the browser's);
`killed` says the ask was still running at `--limit` seconds. `--root`: the
chatagent source tree to run (another checkout, to compare); the stand-ins
are always this tree's."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.openai_server import (
    ChatReply, EmptyChunkFlood, HugeArgument, LlamaCppServer, OpenAICompatibleServer, StallReply, ToolCallFlood,
)

ROOT = Path(__file__).resolve().parent.parent
PAGE = ("<html><head><title>Aurora</title></head><body><h1>Aurora X14 Pro</h1>"
        "<p>The Aurora X14 Pro is a laptop. Its battery lasts long.</p></body></html>")
NEED = ChatReply(text=f"{ESCALATION_MARKER} the page does not say")
KINDS = ("stall", "flood", "toolcalls", "hugearg", "tokenize")


def server_for(kind: str) -> OpenAICompatibleServer:
    if kind == "tokenize":
        return LlamaCppServer(endless_tokenize=True)
    return OpenAICompatibleServer(replies={
        "stall": [StallReply(text="The Aurora", keepalive_s=0.5)],
        "flood": [EmptyChunkFlood()],
        "toolcalls": [NEED, ToolCallFlood(calls=5000)],
        "hugearg": [NEED, HugeArgument(mb=50)],
    }[kind])


def rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(kind: str, deadline: float, limit: float, root: Path, page: Path, config: Path) -> dict[str, object]:
    with server_for(kind) as server:
        env = {**os.environ, "PYTHONPATH": str(root), "CHATAGENT_OPENAI_BASE_URL": server.url,
               "CHATAGENT_CONFIG_DIR": str(config)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "chatagent", "ask", str(page), "-q", "What does the page say about the battery?",
             "--model", "openai:local", "--deadline", f"{deadline:g}"],
            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
        ended: list[float] = []
        last: list[str] = []

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:  # its last line ends the question: an error, a stop, or the answer's figures
                if line.strip():
                    ended[:] = [time.monotonic()]
                    last[:] = [line.strip()]

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        start, peak = time.monotonic(), 0
        while proc.poll() is None and time.monotonic() - start < limit:
            peak = max(peak, rss(proc.pid))
            time.sleep(0.1)
        killed = proc.poll() is None
        if killed:
            proc.kill()
        proc.wait()
        reader.join(5)
        first = min((r.at for r in server.requests), default=None)
    return {"kind": kind, "deadline_s": deadline,
            "question_s": round(ended[0] - first, 1) if ended and first is not None else None,
            "killed": killed, "exit": proc.returncode, "peak_rss_mb": round(peak / 1e6),
            "ended_with": last[0][:120] if last else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", metavar="KIND", help=f"any of {', '.join(KINDS)} (default: all)")
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--limit", type=float, default=120.0, help="seconds after which a run is killed")
    parser.add_argument("--root", type=Path, default=ROOT, help="the chatagent tree to run")
    args = parser.parse_args()
    if unknown := set(args.kinds) - set(KINDS):
        parser.error(f"unknown kind(s): {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(PAGE)
        for kind in args.kinds or KINDS:
            print(json.dumps(run(kind, args.deadline, args.limit, args.root.resolve(), page, Path(tmp) / "config")),
                  flush=True)


if __name__ == "__main__":
    main()
