"""A one-page call beside a huge offline question, in `chatagent mcp` over stdio (issue 54 row 9).

One `chatagent mcp` (the SDK's client, stdio), the offline model, pages on
a loopback origin (`chatagent.testing.many_parts`). First a one-page
`read_pages` call, alone, `--runs` times; then `ask_pages` with a question
of 60 parts over 10 pages (minutes of reading unbounded), and once it is
reading (its "reading them" progress, then `--settle` seconds for its
extraction), the same one-page call `--runs` times while it runs, one
issued every `--spacing` seconds (each on its own, as separate clients
would). Reported:
each call's latency, the medians, their ratio, and whether the question was
still running when each call ended (a call that waited for it shows not).

    .venv/bin/python -m benchmarks.offline_beside [--runs 5] [--settle 3] [--spacing 1] [--offline-timeout 60]
    .venv/bin/python -m benchmarks.offline_beside --daemon   # one-page `chatagent ask`s through a daemon
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from chatagent.testing.many_parts import TABS, many_parts, serving

ROOT = Path(__file__).resolve().parent.parent


async def one_page(session: ClientSession, url: str) -> float:
    t0 = time.perf_counter()
    result = await session.call_tool("read_pages", {"urls": [url]})
    took = time.perf_counter() - t0
    if result.is_error or "Ledger" not in result.structured_content["pages"][0]["text"]:
        raise SystemExit(f"the one-page call failed: {result.content}")
    return took


async def main(runs: int, settle: float, spacing: float, offline_timeout: float) -> None:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
           "CHATAGENT_OFFLINE_TIMEOUT": f"{offline_timeout:g}", "CHATAGENT_DEADLINE": "600"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "chatagent", "mcp"], cwd=str(ROOT), env=env)
    with serving() as base:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await one_page(session, f"{base}/ledger/100")  # its start: browser, workers
            alone = [await one_page(session, f"{base}/ledger/{101 + i}") for i in range(runs)]
            reading = asyncio.Event()

            async def progress(done: float, total: float | None, message: str | None) -> None:
                if "reading them" in (message or ""):
                    reading.set()

            t0 = time.perf_counter()
            bomb = asyncio.create_task(session.call_tool(
                "ask_pages", {"urls": [f"{base}/ledger/{i}" for i in range(TABS)], "question": many_parts()},
                progress_callback=progress))
            await reading.wait()
            await asyncio.sleep(settle)  # its pages extracted and fitted: then its model reads
            beside, running = await calls_beside(session, base, bomb, runs, spacing)
            asked = await bomb
            bomb_s = time.perf_counter() - t0
    answer = asked.structured_content["answer"] if not asked.is_error else str(asked.content)
    report(alone, beside, running, bomb_s, answer, "read_pages (MCP)")


async def calls_beside(session: ClientSession, base: str, bomb: asyncio.Task[Any], runs: int,
                       spacing: float) -> tuple[list[float], list[bool]]:
    """The one-page call `runs` times while `bomb` runs, one issued every `spacing` s (each on
    its own, as separate clients would): each call's latency, and whether `bomb` still ran after it."""
    async def spaced(i: int) -> tuple[float, bool]:
        await asyncio.sleep(i * spacing)
        took = await one_page(session, f"{base}/ledger/{201 + i}")
        return took, not bomb.done()

    beside, running = zip(*await asyncio.gather(*(spaced(i) for i in range(runs))))
    return list(beside), list(running)


def _ask(env: dict[str, str], url: str, question: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "chatagent", "ask", url, "-q", question, "--json"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def timed_ask(env: dict[str, str], url: str) -> float:
    t0 = time.perf_counter()
    out, err = _ask(env, url, "How much did the harbour ferry cost?").communicate(timeout=300)
    if '"type":"done"' not in out:
        raise SystemExit(f"the one-page ask failed: {err[-500:]}")
    return time.perf_counter() - t0


def daemon_main(runs: int, settle: float, offline_timeout: float) -> None:
    """The same through a daemon: one-page `chatagent ask`s, alone, then one after another
    beside the question asked through the same daemon, from `settle` s after it was asked."""
    with tempfile.TemporaryDirectory(prefix="chatagent-bench-") as directory, serving() as base:
        env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)), "CHATAGENT_DAEMON_DIR": directory,
               "CHATAGENT_OFFLINE_TIMEOUT": f"{offline_timeout:g}", "CHATAGENT_DEADLINE": "600"}
        env.pop("GOOGLE_API_KEY", None)
        subprocess.run([sys.executable, "-m", "chatagent", "daemon", "start"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        try:
            timed_ask(env, f"{base}/ledger/100")  # its first ask: browser, workers
            alone = [timed_ask(env, f"{base}/ledger/{101 + i}") for i in range(runs)]
            t0 = time.perf_counter()
            bomb = subprocess.Popen([sys.executable, "-m", "chatagent", "ask", *(f"{base}/ledger/{i}" for i in range(TABS)),
                                     "-q", many_parts(), "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            # Its pages opened and read: then its model reads. Not its pass_start event: where the
            # reading holds the daemon's loop, the event is sent only once the reading has ended.
            time.sleep(settle)
            beside, running = [], []
            for i in range(runs):  # one after another: each ask is a process, and starting it is CPU
                beside.append(timed_ask(env, f"{base}/ledger/{201 + i}"))
                running.append(bomb.poll() is None)
            out, _ = bomb.communicate(timeout=600)
            bomb_s = time.perf_counter() - t0
        finally:
            subprocess.run([sys.executable, "-m", "chatagent", "daemon", "stop"], cwd=ROOT, env=env, capture_output=True)
    report(alone, list(beside), list(running), bomb_s, out.splitlines()[-1] if out else "", "chatagent ask (daemon)")


def report(alone: list[float], beside: list[float], running: list[bool], bomb_s: float, answer: str, call: str,
           beside_what: str = "the 60-part question") -> None:
    print(f"one-page {call} alone (s): {' '.join(f'{x:.2f}' for x in alone)}")
    print(f"beside {beside_what} (s): {' '.join(f'{x:.2f}' for x in beside)}")
    print(f"question still running after each: {' '.join('yes' if r else 'no' for r in running)}")
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"median alone {a:.2f} s, beside {b:.2f} s: {b / a:.1f}x")
    print(f"the question took {bomb_s:.1f} s; its answer begins: {answer[:160]!r}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--settle", type=float, default=3.0)
    p.add_argument("--spacing", type=float, default=1.0)
    p.add_argument("--offline-timeout", type=float, default=60.0)
    p.add_argument("--daemon", action="store_true", help="one-page `chatagent ask`s through a daemon instead")
    args = p.parse_args()
    if args.daemon:
        daemon_main(args.runs, args.settle * 2, args.offline_timeout)
    else:
        asyncio.run(main(args.runs, args.settle, args.spacing, args.offline_timeout))
