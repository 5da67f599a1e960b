"""Load benchmark: `chatagent mcp --http` replicas behind HAProxy, sharing one
Playwright browser server, under N concurrent MCP clients.

    python -m benchmarks.scale [--clients 32] [--calls 3] [--pages 24] [--browser-cpus LIST | --shared] [--out FILE.json]

Setup, all on loopback: WikiTableQuestions pages (`../shared/data`) served by
`benchmarks.server.PageServer`; one browser server started as the README says
(`playwright launch-server`, the system Chromium, third-party hosts
unresolvable as in every benchmark here); replicas (`chatagent mcp --http`,
their own settings file: the defaults) and HAProxy in front of them, with a
configuration written by `benchmarks.fleet`.

Each scenario: `clients` MCP clients (the SDK's streamable HTTP client, all in
this process) at once, each making `calls` `read_pages` calls one after the
other, each on a page no cache has seen (`?fresh=N`). Scenarios: 1 replica; 2
replicas; 2 replicas, one stopped with SIGTERM once a third of the calls are
answered (it drains). A call is answered (a result), failed (an error result)
or lost (no result reached its client). Throughput is answered calls over the
scenario's wall time; latency is each call's, at the client. Peak memory is
the PSS of the replicas' and the browser server's processes (shared pages
counted once), sampled every 0.5 s, with the browser's renderer processes at most (a page each, so bounded
by the replicas × the `max_tabs` setting, plus Chromium's spare renderer and
one exiting). A page the browser could not load within the `timeout` setting
counts as a failed call.

The limit: the same pages read by plain Playwright from the same browser
server, `clients` pages at once (load, then the body's text), as fast as it
allows. Skipped, saying why, where HAProxy is not installed.

Layout: as a deployment runs its browser servers on machines of their own,
the browser server and its browser run on one CPU (the first this process may
use; `--browser-cpus LIST` for others) and everything else (the replicas,
HAProxy, the clients, plain Playwright's client) on the rest: the limit is
then what that browser server allows. With `--shared` (or on one CPU) every
process shares every CPU, so the replicas' own work, extraction above all,
takes CPU the browser then lacks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .data import DEFAULT_DATA_DIR, load_wtq, sample
from .fleet import NO_HAPROXY, Replica, haproxy, haproxy_path, replica
from .report import describe_machine, machine, md_table
from .server import OFFLINE_ARGS, PageServer, fresh_url, playwright_browser_server
from .stats import quantile

TOKEN = "scale-benchmark-token-0123456789abcdef"
MAX_TABS = 20  # per replica: the setting's default
THROUGHPUT_GOAL = 0.7  # of plain Playwright's pages/s
STOP_AFTER = 1 / 3  # of the calls answered, one replica is stopped
# Renderers beyond the tabs: Chromium keeps a spare one ready, and a closed tab's takes a moment to exit.
RENDERER_SLACK = 2


@dataclass
class Tally:
    latencies_s: list[float] = field(default_factory=list)
    failed: int = 0
    lost: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return len(self.latencies_s)


def process_tree(roots: list[int]) -> list[int]:
    """The processes `roots` and their descendants, now (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


class Sampler:
    """Peak memory of some process trees (PSS: each shared page counted once across them, where RSS
    would count Chromium's shared memory once per process), and their Chromium renderers at most,
    every 0.5 s (from /proc)."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.peak_pss_mb = 0.0
        self.peak_renderers = 0
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        pss_kb, renderers = 0, 0
        for pid in process_tree(self.roots):
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
                pss_kb += int(rollup.split("\nPss:", 1)[1].split()[0])
                renderers += b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes()
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
        self.peak_pss_mb = max(self.peak_pss_mb, pss_kb / 1024)
        self.peak_renderers = max(self.peak_renderers, renderers)

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.5)

    def __enter__(self) -> "Sampler":
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task:
            self._task.cancel()


@contextlib.asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # the client checks each result against these schemas
        yield session


async def mcp_clients(url: str, urls: list[list[str]], tally: Tally, on_answer: Any = None) -> None:
    async def one(mine: list[str]) -> None:
        made = 0
        try:
            async with mcp_client(url) as session:
                for u in mine:
                    made += 1
                    t0 = time.perf_counter()
                    try:
                        result = await session.call_tool("read_pages", {"urls": [u]})
                    except Exception as exc:  # noqa: BLE001 - no result reached the client: lost
                        tally.lost += 1
                        tally.errors.append(f"lost: {type(exc).__name__}: {exc}"[:300])
                        continue
                    page = {} if result.is_error else result.structured_content["pages"][0]
                    if result.is_error or page.get("error"):  # the call, or its one page, failed
                        tally.failed += 1
                        why = result.content[0].text if result.is_error else f"{page['error']} {page['notes']}"
                        tally.errors.append(f"failed: {why}"[:300])
                    else:
                        tally.latencies_s.append(time.perf_counter() - t0)
                        if on_answer:
                            on_answer()
        except Exception as exc:  # noqa: BLE001 - the client's connection failed: its calls not made are lost
            tally.lost += len(mine) - made
            tally.errors.append(f"client: {type(exc).__name__}: {exc}"[:300])

    await asyncio.gather(*(one(mine) for mine in urls))


def _figures(tally: Tally, wall_s: float, calls: int) -> dict[str, Any]:
    lat = tally.latencies_s
    return {
        "calls": calls, "answered": tally.answered, "failed": tally.failed, "lost": tally.lost,
        "wall_s": wall_s, "pages_per_s": tally.answered / wall_s if wall_s else 0.0,
        "latency_s": {f"p{int(q * 100)}": quantile(lat, q) for q in (0.5, 0.95, 0.99)},
        "errors": tally.errors[:10],
    }


async def plain_playwright(ws: str, urls: list[list[str]]) -> dict[str, Any]:
    """The limit: each worker's pages loaded and their body text read, by Playwright alone."""
    from playwright.async_api import async_playwright

    tally = Tally()
    async with async_playwright() as pw:
        browser = await pw.chromium.connect(ws)
        context = await browser.new_context()

        async def worker(mine: list[str]) -> None:
            for u in mine:
                t0 = time.perf_counter()
                page = await context.new_page()
                try:
                    await page.goto(u, wait_until="load", timeout=30_000)
                    await page.evaluate("document.body.innerText")
                    tally.latencies_s.append(time.perf_counter() - t0)
                except Exception as exc:  # noqa: BLE001 - counted, as a failed call is
                    tally.failed += 1
                    tally.errors.append(str(exc)[:300])
                finally:
                    await page.close()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(mine) for mine in urls))
        wall = time.perf_counter() - t0
        await browser.close()
    return _figures(tally, wall, sum(map(len, urls)))


async def _scenario(ws: str, browser_pid: int, n_replicas: int, urls: list[list[str]], warm_url: str,
                    stop_one: bool, env: dict[str, str], max_tabs: int) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        replicas: list[Replica] = [await stack.enter_async_context(replica(TOKEN, browser_ws=ws, env=env))
                                   for _ in range(n_replicas)]
        for r in replicas:  # each replica's connection to the browser server made, its runtime warm
            async with mcp_client(r.url) as session:
                await session.call_tool("read_pages", {"urls": [warm_url]})
        lb = await stack.enter_async_context(haproxy([r.port for r in replicas]))
        tally = Tally()
        total = sum(map(len, urls))
        stopped: dict[str, Any] = {}

        def on_answer() -> None:
            if stop_one and not stopped and tally.answered >= total * STOP_AFTER:
                stopped["after_answered"] = tally.answered
                replicas[0].stop()

        with Sampler([browser_pid, *(r.proc.pid for r in replicas)]) as sampler:
            t0 = time.perf_counter()
            await mcp_clients(lb.url, urls, tally, on_answer)
            wall = time.perf_counter() - t0
            sampler.sample()
        served = await lb.served()
        if stopped:
            stopped["exit_status"] = await asyncio.wait_for(replicas[0].proc.wait(), 300)
    return {"replicas": n_replicas, **_figures(tally, wall, total), "served": served, "stopped": stopped or None,
            "peak_pss_mb": sampler.peak_pss_mb, "peak_renderers": sampler.peak_renderers,
            "tab_cap": n_replicas * max_tabs}


SCENARIOS = {"1 replica": (1, False), "2 replicas": (2, False), "2 replicas, one stopped": (2, True)}


class LayoutError(ValueError):
    """CPUs for the browser server that this process cannot give it, or that leave none for the rest."""


@contextlib.contextmanager
def cpu_layout(browser_cpus: frozenset[int] | None) -> Iterator[frozenset[int] | None]:
    """This process (and so the replicas, HAProxy and the clients it starts) on the
    CPUs `browser_cpus` leaves, for the `with` block; yields those (None: no layout)."""
    if not browser_cpus:
        yield None
        return
    mine = frozenset(os.sched_getaffinity(0))
    rest = mine - browser_cpus
    if not browser_cpus <= mine:
        raise LayoutError(f"--browser-cpus {_cpu_list(browser_cpus)}: CPU {_cpu_list(browser_cpus - mine)} is not "
                          f"one this benchmark may use ({_cpu_list(mine)}).")
    if not rest:
        raise LayoutError(f"--browser-cpus {_cpu_list(browser_cpus)} leaves no CPU for the replicas and the clients "
                          f"(this benchmark may use {_cpu_list(mine)}).")
    os.sched_setaffinity(0, rest)
    try:
        yield rest
    finally:
        os.sched_setaffinity(0, mine)


def deployment_layout() -> frozenset[int] | None:
    """The browser server's CPUs by default: the first this process may use, if it may use another; else None (shared)."""
    cpus = sorted(os.sched_getaffinity(0))
    return frozenset(cpus[:1]) if len(cpus) > 1 else None


def _cpu_list(cpus: frozenset[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


async def run_scale(data_dir: Path = DEFAULT_DATA_DIR, clients: int = 32, calls: int = 3,
                    pages: int = 24, max_tabs: int = MAX_TABS, scenarios: tuple[str, ...] = tuple(SCENARIOS),
                    browser_cpus: frozenset[int] | None = None) -> dict[str, Any]:
    """The load benchmark's figures; {"skipped": why} without HAProxy. `browser_cpus`:
    the browser server on those CPUs alone, everything else on the others (see the layout above)."""
    if haproxy_path() is None:
        return {"skipped": NO_HAPROXY}
    chosen = sample(sorted({q.page for q in load_wtq(data_dir)}), pages)
    at_start = machine()
    out: dict[str, Any] = {"config": {"clients": clients, "calls_per_client": calls, "pages": len(chosen),
                                      "max_tabs": max_tabs},
                           "machine": {**at_start, "loadavg_at_start": at_start["loadavg"]}}
    with cpu_layout(browser_cpus) as rest, PageServer() as site, tempfile.TemporaryDirectory() as tmp:
        if rest is not None:
            out["config"]["layout"] = {"browser_cpus": sorted(browser_cpus or ()), "other_cpus": sorted(rest)}
        base = [site.file_url(data_dir / p) for p in chosen]
        fresh = iter(range(1, 10**9))

        def plan() -> list[list[str]]:  # every read a page no cache has seen
            return [[fresh_url(base[(c * calls + i) % len(base)], next(fresh)) for i in range(calls)]
                    for c in range(clients)]

        # The defaults, whatever the user's settings file says.
        env = {"CHATAGENT_CONFIG": str(Path(tmp) / "config.toml"), "CHATAGENT_MAX_TABS": str(max_tabs)}
        async with playwright_browser_server(OFFLINE_ARGS, cpus=browser_cpus) as server:
            out["plain_playwright"] = await plain_playwright(server.ws, plan())
            out["scenarios"] = {}
            for name in scenarios:
                n, stop = SCENARIOS[name]
                out["scenarios"][name] = await _scenario(server.ws, server.pid, n, plan(), fresh_url(base[0], 0),
                                                         stop, env, max_tabs)
    out["machine"]["loadavg"] = machine()["loadavg"]
    out["goals"] = goals(out)
    return out


def goals(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    limit = result["plain_playwright"]["pages_per_s"]
    out: dict[str, dict[str, Any]] = {}
    for name, s in result["scenarios"].items():
        out[f"{name}: none lost or failed"] = {"target": "0 lost, 0 failed", "measured": f"{s['lost']} lost, "
                                               f"{s['failed']} failed", "met": s["lost"] == 0 and s["failed"] == 0}
        if not s["stopped"]:
            share = s["pages_per_s"] / limit if limit else 0.0
            out[f"{name}: throughput"] = {"target": f"≥ {THROUGHPUT_GOAL:.0%} of plain Playwright",
                                          "measured": f"{share:.0%}", "met": share >= THROUGHPUT_GOAL}
        bound = s["tab_cap"] + RENDERER_SLACK
        out[f"{name}: pages open"] = {"target": f"≤ {bound} renderers (replicas × max_tabs + {RENDERER_SLACK})",
                                      "measured": f"{s['peak_renderers']} at most, {s['peak_pss_mb']:,.0f} MB",
                                      "met": s["peak_renderers"] <= bound}
    return out


def report(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"Skipped: {result['skipped']}."
    c = result["config"]
    head = ["", "calls", "answered", "failed", "lost", "pages/s", "p50 s", "p95 s", "p99 s", "peak PSS MB",
            "renderers (cap)"]

    def row(name: str, s: dict[str, Any]) -> list[str]:
        lat = s["latency_s"]
        cap = f"{s['peak_renderers']} ({s['tab_cap']})" if "tab_cap" in s else "—"
        pss = f"{s['peak_pss_mb']:,.0f}" if "peak_pss_mb" in s else "—"
        return [name, str(s["calls"]), str(s["answered"]), str(s["failed"]), str(s.get("lost", 0)),
                f"{s['pages_per_s']:.2f}", *(f"{lat[k]:.1f}" for k in ("p50", "p95", "p99")), pss, cap]

    rows = [row("plain Playwright (the limit)", result["plain_playwright"])]
    rows += [row(name, s) for name, s in result["scenarios"].items()]
    layout = c.get("layout")
    lines = [f"{c['clients']} concurrent MCP clients × {c['calls_per_client']} `read_pages` calls, one page each, "
             f"over {c['pages']} WTQ pages; max_tabs {c['max_tabs']} per replica.",
             f"Layout: the browser server on CPU {_cpu_list(frozenset(layout['browser_cpus']))}, everything else "
             f"on CPU {_cpu_list(frozenset(layout['other_cpus']))}." if layout else
             "Layout: every process shares the machine's CPUs.", "",
             md_table(head, rows), ""]
    for name, s in result["scenarios"].items():
        if s["stopped"]:
            lines.append(f"{name}: SIGTERM after {s['stopped']['after_answered']} answered calls; it exited "
                         f"{s['stopped']['exit_status']}. Requests answered per replica (HAProxy): {s['served']}.")
    lines += ["", md_table(["goal", "target", "measured", "met"],
                           [[k, g["target"], g["measured"], "yes" if g["met"] else "**no**"]
                            for k, g in result["goals"].items()]),
              "", f"Machine: {describe_machine(result['machine'])}."]
    return "\n".join(lines)


def parse_cpus(text: str) -> frozenset[int]:
    try:
        cpus = frozenset(int(c) for c in text.split(","))  # never empty: int("") raises
        if min(cpus) < 0:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of CPU numbers (e.g. 0 or 0,1)") from None
    return cpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--calls", type=int, default=3, help="read_pages calls per client")
    p.add_argument("--pages", type=int, default=24, help="WTQ pages read (each read a fresh copy)")
    p.add_argument("--max-tabs", type=int, default=MAX_TABS, help="each replica's max_tabs setting")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    layout = p.add_mutually_exclusive_group()
    layout.add_argument("--browser-cpus", type=parse_cpus, metavar="LIST",
                        help="run the browser server on these CPUs only (e.g. 0 or 0,1) and everything else on the "
                             "others (default: the first CPU, where there are two or more)")
    layout.add_argument("--shared", action="store_true", help="run every process on every CPU")
    p.add_argument("--out", type=Path, help="also write the raw figures as JSON here")
    args = p.parse_args(argv)
    try:
        result = asyncio.run(run_scale(args.data, args.clients, args.calls, args.pages, args.max_tabs,
                                       browser_cpus=None if args.shared else args.browser_cpus or deployment_layout()))
    except LayoutError as exc:
        p.error(str(exc))
    print(report(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0 if "skipped" in result or all(g["met"] for g in result["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
