"""Where the CPU of a page read goes: plain Playwright against one `chatagent mcp`
replica's `read_pages`, from the same Playwright browser server, by process.

    python -m benchmarks.cpu_per_page [--rounds 3] [--pages 64] [--clients 32] [--browser-cpus LIST]

`clients` at once read `pages` WikiTableQuestions pages (each a fresh copy), first
by plain Playwright (load, then the body's text), then through the replica (one
`read_pages` call a page, straight to it: no HAProxy), alternating for `rounds`
rounds. For each: pages/s, and CPU per page, the whole machine's (from
/proc/stat, so run it on an otherwise quiet machine) and by kind of process:
Chromium's browser process, its renderers (counted in the zygote that reaps
them), its other processes, Playwright's Node (the server's and the replica's
driver), the replica's Python and its extraction workers, and this process
(the clients, and plain Playwright's driver, which it starts and reaps). Medians over the
rounds. Every process shares every CPU unless `--browser-cpus` gives the
browser server CPUs of its own (`benchmarks.scale`'s default layout).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .data import DEFAULT_DATA_DIR, load_wtq, sample
from .fleet import replica
from .report import md_table
from .scale import TOKEN, LayoutError, Tally, cpu_layout, mcp_clients, parse_cpus, plain_playwright
from .server import OFFLINE_ARGS, PageServer, fresh_url, playwright_browser_server

TICKS = os.sysconf("SC_CLK_TCK")
KINDS = ("Chromium browser", "Chromium renderers", "Chromium, other", "Node", "replica (Python)",
         "extraction workers", "the clients")
SETTLE_S = 1.5  # after a run, for closed pages' renderers to exit and be reaped


def _busy_s() -> float:
    """The machine's CPU time so far, all cores, idle and I/O wait left out."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICKS


def _kind(cmdline: str) -> str | None:
    if "chatagent" in cmdline and "multiprocessing" in cmdline:
        return "extraction workers"
    if "chatagent" in cmdline and " mcp " in cmdline:
        return "replica (Python)"
    if "chrom" in cmdline and "--type=" in cmdline:
        # Renderers are forked from the zygote, which reaps them: their CPU ends up in its children's.
        return "Chromium renderers" if "--type=zygote" in cmdline or "--type=renderer" in cmdline else "Chromium, other"
    if "/node " in cmdline or cmdline.startswith("node "):
        return "Node"
    if "chrom" in cmdline and "launch-server" not in cmdline:
        return "Chromium browser"
    return None


def _by_kind() -> Counter[str]:
    """CPU seconds so far of every process of a kind, with the children it has reaped."""
    out: Counter[str] = Counter()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        # This process: the clients, and plain Playwright's driver, which it reaps.
        if (what := "the clients" if int(pid) == os.getpid() else _kind(cmdline)) is not None:
            out[what] += sum(int(v) for v in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
    return out


async def run(data_dir: Path = DEFAULT_DATA_DIR, rounds: int = 3, pages: int = 64, clients: int = 32,
              browser_cpus: frozenset[int] | None = None) -> dict[str, Any]:
    chosen = sample(sorted({q.page for q in load_wtq(data_dir)}), 24)
    fresh = iter(range(1, 10**9))
    runs: dict[str, list[dict[str, float]]] = {"plain Playwright": [], "chatagent read_pages": []}
    with cpu_layout(browser_cpus), PageServer() as site, tempfile.TemporaryDirectory() as tmp:
        base = [site.file_url(data_dir / p) for p in chosen]

        def plan() -> list[list[str]]:
            each = max(1, pages // clients)
            return [[fresh_url(base[(c * each + i) % len(base)], next(fresh)) for i in range(each)]
                    for c in range(clients)]

        env = {"CHATAGENT_CONFIG": str(Path(tmp) / "config.toml")}  # the defaults, whatever the user's settings
        async with playwright_browser_server(OFFLINE_ARGS, cpus=browser_cpus) as server, \
                replica(TOKEN, browser_ws=server.ws, env=env) as r:
            await mcp_clients(r.url, [[fresh_url(base[0], 0)]], Tally())  # its runtime warm, its workers started
            for _ in range(rounds):
                for name in runs:
                    await asyncio.sleep(SETTLE_S)
                    kinds, busy, t0 = _by_kind(), _busy_s(), time.perf_counter()
                    if name == "plain Playwright":
                        read = (await plain_playwright(server.ws, plan()))["answered"]
                    else:
                        tally = Tally()
                        await mcp_clients(r.url, plan(), tally)
                        read = tally.answered
                    wall = time.perf_counter() - t0
                    await asyncio.sleep(SETTLE_S)
                    spent = _by_kind() - kinds
                    runs[name].append({"pages_per_s": read / wall, "machine_ms": (_busy_s() - busy) / read * 1000,
                                       **{k: spent[k] / read * 1000 for k in KINDS}})
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    return {"config": {"rounds": rounds, "pages": pages, "clients": clients,
                       "browser_cpus": sorted(browser_cpus) if browser_cpus else None},
            "runs": runs, "medians": medians}


def report(result: dict[str, Any]) -> str:
    c, m = result["config"], result["medians"]
    plain, ours = m["plain Playwright"], m["chatagent read_pages"]
    rows = [[k, f"{plain[k]:.0f}", f"{ours[k]:.0f}"] for k in KINDS]
    rows += [["**the whole machine**", f"**{plain['machine_ms']:.0f}**", f"**{ours['machine_ms']:.0f}**"],
             ["pages/s", f"{plain['pages_per_s']:.2f}", f"{ours['pages_per_s']:.2f}"]]
    layout = (f"the browser server on CPU {','.join(map(str, c['browser_cpus']))}, the rest on the others"
              if c["browser_cpus"] else "every process on every CPU")
    return "\n".join([
        f"CPU ms per page, medians of {c['rounds']} rounds of {c['pages']} WTQ pages read {c['clients']} at a time; "
        f"{layout}.", "",
        md_table(["", "plain Playwright", "chatagent `read_pages`"], rows), "",
        f"chatagent's pages/s: {ours['pages_per_s'] / plain['pages_per_s']:.0%} of plain Playwright's.",
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cpu_per_page", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pages", type=int, default=64, help="pages read in each run (each a fresh copy)")
    p.add_argument("--clients", type=int, default=32, help="pages read at once")
    p.add_argument("--browser-cpus", type=parse_cpus, metavar="LIST", help="the browser server's own CPUs (e.g. 0)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    args = p.parse_args(argv)
    try:
        result = asyncio.run(run(args.data, args.rounds, args.pages, args.clients, args.browser_cpus))
    except LayoutError as exc:
        p.error(str(exc))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
