"""The side panel's first question, timed through the real native-messaging host.

    python -m benchmarks.bridge_latency [--reps 5] [--think-s 2] [--ttft-ms 300] [--out FILE.json]

Each rep starts a fresh host (`python -m extension_bridge`, as Chrome does when
the panel connects) with the real Gemini client pointed at the local server,
sends `ping`, waits `--think-s` (the user typing), then asks about a fixture
page and times `ask` written → first `token` frame read. A follow-up on the
same page is timed the same way, for scale. Overhead = TTFT − the server's own
TTFT for that request, both `perf_counter()` stamps of this process (the
server runs in a thread of it); the frames' own transit (pipes, JSON) is in it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from extension_bridge.protocol import FrameReader, FrameWriter
from extension_bridge.spawn import spawn_host

from chatagent.testing.gemini_server import GeminiServer

from .latency import FIXTURES
from .report import machine
from .stats import summary

PAGE = FIXTURES / "product.html"
MODEL_NAME = "gemini-2.5-flash"
QUESTIONS = ("How much does the Aurora X14 Pro cost?", "How heavy is it?")


async def _ask(reader: FrameReader, writer: FrameWriter, server: GeminiServer, rid: str, question: str,
               html: str) -> tuple[float, float]:
    """(TTFT, overhead) in ms of one ask; the rest of its answer is read and dropped."""
    before = len(server.requests)
    tab = {"tabId": 41, "url": "https://shop.example/aurora", "title": "Aurora X14 Pro", "html": html}
    t0 = time.perf_counter()
    await writer.send({"type": "ask", "id": rid, "question": question, "tabs": [tab], "model": MODEL_NAME})
    ttft: float | None = None
    while True:
        msg = await asyncio.wait_for(reader.read_json(), 60)
        event = msg.get("event", {}) if msg.get("type") == "event" else {}
        if ttft is None and event.get("type") == "token":
            ttft = (time.perf_counter() - t0) * 1000
        if event.get("type") == "error" or msg.get("type") == "error":
            raise RuntimeError(f"the host failed: {msg}")
        if event.get("type") == "done":
            break
    if ttft is None:
        raise RuntimeError("the answer never produced a token")
    served = [r.server_ttft_s for r in server.requests[before:] if r.server_ttft_s is not None]
    if not served:
        raise RuntimeError("the local server saw no generate request")
    return ttft, ttft - served[-1] * 1000


async def _rep(server: GeminiServer, i: int, think_s: float) -> dict[str, float]:
    # The model asked is the one the settings name, as for a panel whose settings chose it:
    # the host readies that one as the panel connects (the default is the offline model).
    env = {"GOOGLE_API_KEY": "bench", "GOOGLE_GEMINI_BASE_URL": server.url, "CHATAGENT_MODEL": MODEL_NAME}
    async with spawn_host(env, stderr=asyncio.subprocess.DEVNULL) as proc:
        assert proc.stdin and proc.stdout
        reader, writer = FrameReader(proc.stdout), FrameWriter(proc.stdin)
        await writer.send({"type": "ping"})
        await asyncio.wait_for(reader.read_json(), 60)
        await asyncio.sleep(think_s)
        # A page new to every rep: nothing is cached anywhere.
        html = PAGE.read_text().replace("</body>", f"<p>Bench rep {i}.</p></body>")
        first = await _ask(reader, writer, server, "first", QUESTIONS[0], html)
        follow = await _ask(reader, writer, server, "follow-up", QUESTIONS[1], html)
    return {"first_ttft_ms": first[0], "first_overhead_ms": first[1],
            "follow_up_ttft_ms": follow[0], "follow_up_overhead_ms": follow[1]}


async def run_bridge_latency(reps: int, think_s: float = 2.0, server_ttft_ms: float = 300) -> dict[str, Any]:
    t0 = time.perf_counter()
    load = machine()["loadavg"]
    async with GeminiServer(ttft_s=server_ttft_ms / 1000) as server:
        samples = [await _rep(server, i, think_s) for i in range(reps)]
    return {
        "config": {"reps": reps, "think_s": think_s, "server_ttft_ms": server_ttft_ms, "model": MODEL_NAME},
        "samples": samples,
        "summary": {k: summary([s[k] for s in samples]) for k in samples[0]} if samples else {},
        "machine": {**machine(), "loadavg_at_start": load},
        "wall_s": time.perf_counter() - t0,
    }


def format_report(result: dict[str, Any]) -> str:
    cfg, s = result["config"], result["summary"]
    lines = [
        f"side panel → host, server TTFT {cfg['server_ttft_ms']:g} ms, {cfg['think_s']:g} s between connecting "
        f"and asking, reps {cfg['reps']}",
        f"{'question':12s} {'TTFT p50':>9s} {'p90':>7s} {'ovh p50':>8s} {'p90':>7s}",
    ]
    for name, key in (("first", "first"), ("follow-up", "follow_up")):
        t, o = s[f"{key}_ttft_ms"], s[f"{key}_overhead_ms"]
        lines.append(f"{name:12s} {t['p50']:9.1f} {t['p90']:7.1f} {o['p50']:8.1f} {o['p90']:7.1f}")
    lines.append(f"(ms) wall time {result['wall_s']:.1f} s; load average {result['machine']['loadavg'][0]:.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bridge_latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--think-s", type=float, default=2.0, help="seconds between connecting and the first question")
    ap.add_argument("--ttft-ms", type=float, default=300)
    ap.add_argument("--out", type=Path, help="write the results as JSON")
    args = ap.parse_args(argv)
    result = asyncio.run(run_bridge_latency(args.reps, args.think_s, args.ttft_ms))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(format_report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
