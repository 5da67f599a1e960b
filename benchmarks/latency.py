"""Latency benchmark: time from a question to its first streamed token.

    python -m benchmarks.latency [--reps N] [--ttft-ms 300] [--tokens-per-s 50] [--out FILE.json] [--plots DIR]
    python -m benchmarks.latency --model gemini-2.5-flash   # the real service (GOOGLE_API_KEY)

A thin layer over `chatagent.runtime.Runtime`, as the CLI and the side panel's
host are: one runtime (extraction workers, context builder, model client) built
from `Settings` (`server.bench_settings`) that point the real
`ChatGoogleGenerativeAI` client (google-genai SDK over httpx) at the local
Gemini-compatible server (`chatagent.testing.gemini_server`, fixed server
TTFT), or at the real service with `--model`. Questions go through
`Runtime.conversation(tabs, hooks=...).ask()`. The pages are real pages in
headless Chromium, served on 127.0.0.1 (gunzipped on the fly) with third-party
hosts unresolvable, so nothing waits on a network that is not there; that
browser is the benchmark's own (`server.launch_browser`, or the caller's), and
its tabs are given to the runtime as tabs from elsewhere, as the side panel's
are (the runtime's own browser would be launched without those flags).

Measured per question:
- **TTFT** = first `token` event received by the consumer − `ask()` started;
- **server TTFT** = the server's own arrival → first chunk written, from its
  request record (`RecordedRequest.server_ttft_s`);
- **overhead** = TTFT − server TTFT = (request arrival − ask started)
  + (our token event − first chunk written). All stamps are `perf_counter()`
  in this process (the server runs in a thread of it), so they compare exactly.

The overhead is split into phases through the public API only: the run hooks
(`chatagent.hooks.RunHooks`: `context_built`, `request_sent`, `first_chunk`),
the timings the agent's `PageContext` carries, and a `Tab` wrapper
(`_TimedTab`) that notes when each tab's snapshot starts and ends:
- `snapshot`: the first tab's snapshot started → the last one returned (all
  tabs in parallel);
- `extraction`: `PageContext.extraction_ms` (which `ContextBuilder.build`
  measures from its start through extraction: cache hits are ~free) minus
  `snapshot`;
- `budget`: `PageContext.budget_ms` (token counting, allocation, BM25 selection);
- `prompt`: the `context_built` hook → the `request_sent` hook: the pass-1
  request built (history, `build_messages`) and handed to the client;
- `client_http`: `request_sent` → request arrived at the server, plus first
  chunk written → our `token` event (LangChain + google-genai + httpx + the
  event queue; the `first_chunk` hook splits the second part into
  `client_receive_ms` and `token_event_ms` in the JSON);
- `other`: ask() → the first snapshot started (the conversation's agent, task
  start-up), and `build()` done → `context_built` (change notes).
The phases add up to the overhead exactly.

Scenarios:
- `warm_1tab`: one tab, already extracted by an earlier (untimed) question of
  the same conversation; a follow-up question.
- `cold_1tab`: one tab not read before, model client warm.
- `cold_10tab`: ten tabs, none read before.
- `prefetched_10tab`: `chat`'s first question: ten tabs not read before, then
  read (snapshot, extraction, page analysis) by `ContextBuilder.prefetch`
  while the question was typed (untimed); the question's own snapshots find
  the pages unchanged.
- `first_q_nowarm` / `first_q_warm`: the first question of a session: a new
  `Runtime` as `chatagent ask` builds it for one tab (so extraction runs in
  this process's threads, not in workers), its model client made but not
  connected, one tab not read before, without / with `Runtime.warm()` run
  beforehand (as `Runtime.open` does while the tabs load).
A tab "not read before" is a new tab, opened for the question and left to
settle for `SETTLE_S` (untimed), closed after it, at a URL not asked for
before (`server.fresh_url`): the page server adds "(read N)" to the page's
title, so its content, and every cache keyed by it (the runtime's extraction
cache, token counts and page analysis), is new, and the first snapshot moves
the whole HTML, as a first read does.
The shared runtime's workers and model client stay warm, so `cold_*` is a new
page in a warm session. Pages given as URLs of another server (`--pages URL`)
get only a new URL: their extraction is new, but their text is not, so their
token counts and page analysis may come from an earlier rep.

With `model=` (a real model by name) there is no local server: the service's
own TTFT cannot be seen, so each question's TTFT is split into `local` (ask()
→ `request_sent`: the phases above up to `prompt`) and `model_and_network`
(the rest: the client, the network and the service), for the first four
scenarios; each question stops at its first token, which spares the service
the rest of the answer.

Percentiles: `benchmarks.stats` (linear interpolation between ranks).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from rich.console import Console
from rich.progress import Progress

from chatagent.browser.base import Browser, PageSnapshot, ScrollDirection, ScrollResult, Tab, TabFailure
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.context import PageContext
from chatagent.events import Done, ErrorEvent, Token
from chatagent.hooks import RunHooks
from chatagent.runtime import Conversation, Runtime
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, TextReply

from .data import DEFAULT_DATA_DIR
from .report import machine, progress_bar
from .server import PageServer, bench_settings, browser_version, fresh_url, launch_browser
from .stats import median, summary

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "pages"
TEN_TABS = 10
MODEL_NAME = "gemini-2.5-flash"
ANSWER = "The page says so clearly in its main section [Tab 1]."
GOALS_MS = {"warm_1tab": 20.0, "cold_1tab": 100.0, "cold_10tab": 300.0}
# A page that has just loaded keeps Chromium busy for a while (ten at once: their
# first snapshot took ~170 ms at once, ~60 ms a second later); a cold question is
# about a page not read yet, not about one still loading.
SETTLE_S = 1.0
PHASES = ("snapshot", "extraction", "budget", "prompt", "client_http", "other")
REAL_PHASES = ("snapshot", "extraction", "budget", "prompt", "other")
FIXTURE_PAGES = (
    "article.html", "listing.html", "long.html", "product.html", "table.html",
    "instructions.html", "two_a.html", "two_b.html", "latin1.html", "js_rendered.html",
)
QUESTIONS = (
    "What does this page say about {kw}?",
    "Summarise what the page tells me about {kw}.",
    "Which figures or dates are given for {kw}?",
    "Who is involved in {kw}, according to the page?",
    "Is there anything about {kw} that stands out?",
)


# ---------------------------------------------------------------- pages


def default_pages(n: int = TEN_TABS, data_dir: Path = DEFAULT_DATA_DIR) -> list[Path]:
    """`n` WCXB test pages spread evenly over the set (same ones every run), else the fixtures."""
    html = Path(data_dir) / "wcxb-test" / "html"
    found = sorted(html.glob("*.html.gz"), key=lambda p: (len(p.name), p.name)) if html.is_dir() else []
    if len(found) >= n:
        step = len(found) / n
        return [found[int(i * step)] for i in range(n)]
    return fixture_pages(n)


def fixture_pages(n: int = TEN_TABS) -> list[Path]:
    """The project's own small fixture pages: a quick look at every scenario."""
    return [FIXTURES / name for name in FIXTURE_PAGES[:n]]


# ---------------------------------------------------------------- probes


class _TimedTab(Tab):
    """A tab that notes when each of its snapshots starts and ends in `reads`;
    everything else is the wrapped tab's own (its label included)."""

    def __init__(self, tab: Tab, reads: list[tuple[float, float]]) -> None:
        self.tab = tab
        self.tab_id = tab.tab_id
        self._reads = reads

    @property
    def label(self) -> str:
        return self.tab.label

    @label.setter
    def label(self, value: str) -> None:
        self.tab.label = value

    async def snapshot(self) -> PageSnapshot:
        t = time.perf_counter()
        try:
            return await self.tab.snapshot()
        finally:
            self._reads.append((t, time.perf_counter()))

    async def screenshot(self) -> bytes:
        return await self.tab.screenshot()

    async def scroll(self, direction: ScrollDirection = "down", to_text: str | None = None) -> ScrollResult:
        return await self.tab.scroll(direction, to_text)

    async def close(self) -> None:
        await self.tab.close()


class _Probe(RunHooks):
    """The stamps of the question being timed: the run hooks' (the first of each)
    and the snapshots of its tabs. Questions run one at a time; `reset` before each."""

    def __init__(self) -> None:
        self.reads: list[tuple[float, float]] = []  # filled by the `_TimedTab`s
        self.reset()

    def reset(self) -> None:
        self.reads.clear()
        self.context: PageContext | None = None
        self.t_context: float | None = None
        self.t_request: float | None = None
        self.t_chunk: float | None = None

    def context_built(self, context: PageContext) -> None:
        if self.context is None:
            self.context, self.t_context = context, time.perf_counter()

    def request_sent(self, pass_: int, turn: int, messages: list[BaseMessage]) -> None:
        if self.t_request is None:
            self.t_request = time.perf_counter()

    def first_chunk(self, pass_: int, turn: int) -> None:
        if self.t_chunk is None:
            self.t_chunk = time.perf_counter()


async def open_timed(browser: Browser, urls: Sequence[str], probe: _Probe) -> list[Tab]:
    """Open `urls` as tabs whose snapshots `probe` sees; every one must open."""
    opened = await browser.open_tabs(list(urls))
    tabs = [_TimedTab(t, probe.reads) for t in opened if isinstance(t, Tab)]
    if bad := [t.message for t in opened if isinstance(t, TabFailure)]:
        await close_all(tabs)
        raise RuntimeError(f"pages failed to open: {bad}")
    return tabs


async def close_all(tabs: Sequence[Tab]) -> None:
    for tab in tabs:
        await tab.close()


# ---------------------------------------------------------------- one question


def _question(title: str, i: int) -> str:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", title)]
    kw = max(words, key=len) if words else "the main topic"
    return QUESTIONS[i % len(QUESTIONS)].format(kw=kw)


async def ask_timed(
    conversation: Conversation, probe: _Probe, server: GeminiServer | None, question: str
) -> dict[str, Any]:
    """Ask one question of `conversation` (made with `hooks=probe`); return its TTFT
    and phases (ms), and with a local `server` its server TTFT and overhead.
    Without one, stop at the first token."""
    probe.reset()
    before = len(server.requests) if server else 0
    t_token: float | None = None
    cpu_ms = 0.0
    done: Done | None = None
    c0 = time.process_time()
    t0 = time.perf_counter()
    events = conversation.ask(question)
    try:
        async for event in events:
            if t_token is None and isinstance(event, Token):
                t_token = time.perf_counter()
                cpu_ms = (time.process_time() - c0) * 1000
                if server is None:
                    break  # a real service: the rest of the answer costs tokens and tells us nothing
            if isinstance(event, ErrorEvent):
                raise RuntimeError(f"the agent failed: {event.code}: {event.message}")
            if isinstance(event, Done):
                done = event
    finally:
        await events.aclose()
    if t_token is None:
        raise RuntimeError("the answer never produced a token")
    ctx, t_ctx, t_req = probe.context, probe.t_context, probe.t_request
    if ctx is None or t_ctx is None or t_req is None or probe.t_chunk is None or not probe.reads:
        raise RuntimeError("a phase was not stamped: did a run hook not fire?")
    ms = lambda a, b: (b - a) * 1000  # noqa: E731
    snap_start = min(start for start, _ in probe.reads)
    snap_end = max(end for _, end in probe.reads)
    snapshot = ms(snap_start, snap_end)
    local = {
        "snapshot": snapshot,
        "extraction": ctx.extraction_ms - snapshot,
        "budget": ctx.budget_ms,
        "prompt": ms(t_ctx, t_req),
    }
    other = ms(t0, t_ctx) - ctx.extraction_ms - ctx.budget_ms  # ask() → build(), build() → the hook
    ttft = ms(t0, t_token)
    common = {
        "ttft_ms": ttft,
        # CPU time of this process (all its threads) from ask() to the token: the
        # part of the overhead that other load on the machine can only stretch.
        # It includes the server thread's own work; Chromium and the Playwright driver are other processes.
        "python_cpu_ms": cpu_ms,
        "tabs": len(ctx.tabs),
        "context_tokens": ctx.tokens,
        "question": question,
    }
    if server is None:
        return {
            **common,
            "local_ms": ms(t0, t_req),
            "model_and_network_ms": ms(t_req, t_token),
            "phases_ms": {**local, "other": other},
        }
    gens = [r for r in server.requests[before:] if r.is_generate]
    if not gens or done is None or gens[0].first_chunk_at is None:
        raise RuntimeError("no generate request recorded, or the run did not finish")
    req: RecordedRequest = gens[0]
    server_ttft = ms(req.arrived_at, req.first_chunk_at)
    return {
        **common,
        "server_ttft_ms": server_ttft,
        "overhead_ms": ttft - server_ttft,
        "pre_request_ms": ms(t0, req.arrived_at),
        "post_chunk_ms": ms(req.first_chunk_at, t_token),
        "client_send_ms": ms(t_req, req.arrived_at),
        "client_receive_ms": ms(req.first_chunk_at, probe.t_chunk),
        "token_event_ms": ms(probe.t_chunk, t_token),
        "phases_ms": {
            **local,
            "client_http": ms(t_req, req.arrived_at) + ms(req.first_chunk_at, t_token),
            "other": other,
        },
        "agent_first_token_ms": done.timings.first_token_ms,
        "agent_extraction_ms": done.timings.extraction_ms,
        "agent_budget_ms": done.timings.budget_ms,
        "request_bytes": len(json.dumps(req.body or {})),
    }


# ---------------------------------------------------------------- statistics


def summarise(name: str, description: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    phases = list(samples[0]["phases_ms"]) if samples else []
    out: dict[str, Any] = {
        "description": description,
        "ttft_ms": [s["ttft_ms"] for s in samples],
        "ttft": summary([s["ttft_ms"] for s in samples]),
        "phases_p50_ms": {p: median(s["phases_ms"][p] for s in samples) for p in phases},
        "phases_mean_ms": {p: statistics.fmean(s["phases_ms"][p] for s in samples) for p in phases},
        "python_cpu": summary([s["python_cpu_ms"] for s in samples]),
    }
    if samples and "overhead_ms" in samples[0]:
        overhead = [s["overhead_ms"] for s in samples]
        out.update(server_ttft_ms=[s["server_ttft_ms"] for s in samples], overhead_ms=overhead, overhead=summary(overhead))
        if name in GOALS_MS:
            out["goal_p50_ms"] = GOALS_MS[name]
            out["goal_met"] = out["overhead"]["p50"] <= GOALS_MS[name]
    else:
        out.update(local=summary([s["local_ms"] for s in samples]),
                   model_and_network=summary([s["model_and_network_ms"] for s in samples]))
    out["samples"] = samples
    return out


# ---------------------------------------------------------------- the scenarios


@dataclass
class _Bench:
    """What every scenario needs: the runtime, the browser and the ten pages open in it."""

    runtime: Runtime
    browser: Browser
    tabs: list[Tab]  # the ten pages, open all along (the warm scenario's)
    titles: list[str]
    urls: list[str]
    server: GeminiServer | None
    probe: _Probe
    reads: Iterator[int] = field(default_factory=itertools.count)

    def conversation(self, tabs: list[Tab], runtime: Runtime | None = None) -> Conversation:
        return (runtime or self.runtime).conversation(tabs, hooks=self.probe)

    async def ask(self, conversation: Conversation, question: str) -> dict[str, Any]:
        return await ask_timed(conversation, self.probe, self.server, question)

    @asynccontextmanager
    async def unread(self, urls: list[str]) -> AsyncIterator[list[Tab]]:
        """New tabs showing `urls` as pages no cache has seen (see the module
        docstring), opened before the clock starts and closed after."""
        n = next(self.reads)
        tabs = await open_timed(self.browser, [fresh_url(u, n) for u in urls], self.probe)
        try:
            await asyncio.sleep(SETTLE_S)
            yield tabs
        finally:
            await close_all(tabs)

    def page(self, i: int) -> tuple[Tab, str, str]:
        k = i % len(self.tabs)
        return self.tabs[k], _question(self.titles[k], i), self.urls[k]

    async def cold1(self, i: int) -> dict[str, Any]:
        _, question, url = self.page(i)
        async with self.unread([url]) as tabs:
            return {**await self.ask(self.conversation(tabs), question), "page": url}

    async def warm1(self, i: int) -> dict[str, Any]:
        """A conversation per page; its first question (untimed) extracts the page."""
        tab, question, url = self.page(i)
        conversation = self.conversation([tab])
        await self.ask(conversation, question)
        follow_up = _question(self.titles[i % len(self.tabs)], i + 1)
        return {**await self.ask(conversation, follow_up), "page": url}

    async def cold10(self, i: int) -> dict[str, Any]:
        _, question, _ = self.page(i)
        async with self.unread(self.urls) as tabs:
            return await self.ask(self.conversation(tabs), question)

    async def prefetched10(self, i: int) -> dict[str, Any]:
        """`chat`'s first question: its ten tabs were read while it was typed."""
        _, question, _ = self.page(i)
        async with self.unread(self.urls) as tabs:
            conversation = self.conversation(tabs)
            await self.runtime.builder.prefetch(tabs)  # what `Conversation.prefetch` starts
            return await self.ask(conversation, question)

    async def first(self, i: int, warm: bool) -> dict[str, Any]:
        """The first question of a session: a new runtime, a page not read before."""
        _, question, url = self.page(i)
        async with Runtime(self.runtime.settings) as runtime, self.unread([url]) as tabs:
            if warm:
                await runtime.warm()
            else:
                runtime.models.get()  # the client made, its connection not opened
            return {**await self.ask(self.conversation(tabs, runtime), question), "page": url}

    async def first_nowarm(self, i: int) -> dict[str, Any]:
        return await self.first(i, False)

    async def first_warm(self, i: int) -> dict[str, Any]:
        return await self.first(i, True)

    def scenarios(self) -> list[tuple[str, str, Callable[[int], Awaitable[dict[str, Any]]]]]:
        out: list[tuple[str, str, Callable[[int], Awaitable[dict[str, Any]]]]] = [
            ("warm_1tab", "1 tab already extracted; follow-up question", self.warm1),
            ("cold_1tab", "1 tab, not yet read; client warm", self.cold1),
            ("cold_10tab", "10 tabs, none read yet; client warm", self.cold10),
            ("prefetched_10tab", "10 tabs read ahead while the question was typed (chat)", self.prefetched10),
        ]
        if self.server is not None:  # against a real service these only add connection noise and cost
            out += [
                ("first_q_nowarm", "first question, new runtime, no warm-up; 1 tab not yet read", self.first_nowarm),
                ("first_q_warm", "first question, new runtime after Runtime.warm(); 1 tab not yet read",
                 self.first_warm),
            ]
        return out


async def run_latency(
    reps: int,
    server_ttft_ms: float = 300,
    tokens_per_s: float = 50,
    pages: list[Path | str] | None = None,
    progress: Progress | None = None,
    *,
    preload: bool = True,
    model: str | None = None,
    browser: PlaywrightBrowser | None = None,
    site: PageServer | None = None,
    data_dir: Path = DEFAULT_DATA_DIR,
    warm_up: bool = True,
) -> dict[str, Any]:
    """Run every scenario `reps` times; see the module docstring. `pages`: local
    .html/.html.gz files (served on 127.0.0.1) or URLs; the first 10 are used.
    `model`: a real model by name instead of the local server. `browser` and
    `site`: the caller's, reused (the tabs opened here are closed again), else our own.
    `preload`: `Runtime.warm()` (model and text pipeline) before the questions;
    without it only the model is warmed (`runtime.models.warm`). `warm_up`: the
    untimed questions first (a sample's look at the section leaves them out)."""
    pages = list(pages) if pages else list(default_pages(data_dir=data_dir))
    started = time.perf_counter()
    load_at_start = list(os.getloadavg())
    async with AsyncExitStack() as stack:
        server = None
        if model is None:
            server = stack.enter_context(GeminiServer(
                responder=lambda _r: TextReply(text=ANSWER), ttft_s=server_ttft_ms / 1000, tokens_per_s=tokens_per_s
            ))
            settings = bench_settings(model=MODEL_NAME, google_api_key="test", gemini_base_url=server.url)
        else:
            settings = bench_settings(model=model)
        site = site or stack.enter_context(PageServer())
        br = browser or await stack.enter_async_context(launch_browser())
        urls = [p if isinstance(p, str) and p.startswith(("http://", "https://")) else site.file_url(Path(p)) for p in pages]
        urls = (urls * TEN_TABS)[:TEN_TABS]
        # Extraction runs where `chatagent ask`/`chat` runs it for several tabs: in worker processes.
        runtime = await stack.enter_async_context(Runtime(settings, extraction_workers=True))
        probe = _Probe()

        before = len(server.requests) if server else 0
        t = time.perf_counter()
        await (runtime.warm() if preload else runtime.models.warm())
        warmup: dict[str, Any] = {"ms": (time.perf_counter() - t) * 1000, "pipeline": preload}
        if server is not None:  # does the local server answer what the model's warm-up sends?
            sent = server.requests[before:]
            gets = [r for r in sent if r.method == "GET"]
            warmup["requests"] = [{"method": r.method, "path": r.path, "status": r.status} for r in sent]
            warmup["ok"] = bool(gets) and all(r.status == 200 for r in gets)
        log.info("warm-up: %s", warmup)

        tabs = await open_timed(br, urls, probe)
        try:
            titles = [(await tab.snapshot()).title for tab in tabs]
            bench = _Bench(runtime, br, tabs, titles, urls, server, probe)
            # Untimed questions first, so the process-level one-offs (imports, first
            # use of the thread pool, extraction in this process for a session's
            # runtime) do not land on whichever scenario runs first.
            if warm_up:
                await bench.ask(bench.conversation([tabs[-1]]), "What is this page about?")
                if server is not None:
                    await bench.first_warm(len(tabs) - 1)

            scenarios = bench.scenarios()
            task = progress.add_task(f"latency, {model or 'local server'}", total=reps * len(scenarios)) if progress else None
            # Interleaved (rep by rep, order rotating), so drifting load on the
            # machine spreads over every scenario instead of biasing one.
            samples: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in scenarios}
            for i in range(reps):
                for j in range(len(scenarios)):
                    name, _, one = scenarios[(i + j) % len(scenarios)]
                    samples[name].append(await one(i))
                    if progress is not None and task is not None:
                        progress.advance(task)
            results = {name: summarise(name, description, samples[name]) for name, description, _ in scenarios}
        finally:
            await close_all(tabs)
        chromium = browser_version(br)

    return {
        "config": {
            "reps": reps,
            "server_ttft_ms": server_ttft_ms if model is None else None,
            "tokens_per_s": tokens_per_s if model is None else None,
            "pages": urls,
            "page_files": [str(p) for p in pages if isinstance(p, Path)],
            "preload": preload,
            "warm_up": warm_up,
            "model": model or MODEL_NAME,
            "service": "real" if model else "local server",
        },
        "machine": {**machine(), "loadavg_at_start": load_at_start, "browser": chromium},
        "warm_up": warmup,
        "scenarios": results,
        "goals_ms": GOALS_MS,
        "wall_s": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- CLI


def format_report(result: dict[str, Any]) -> str:
    cfg = result["config"]
    real = cfg.get("service") == "real"
    if real:
        head = f"model {cfg['model']} (the real service), reps {cfg['reps']}, {len(cfg['pages'])} pages"
        cols = f"{'scenario':16s} {'TTFT p50':>9s} {'p90':>7s} {'local p50':>9s} {'model+net':>9s} {'cpu p50':>8s}  "
        phases = REAL_PHASES
    else:
        head = (f"server TTFT {cfg['server_ttft_ms']:g} ms, {cfg['tokens_per_s']:g} tokens/s, reps {cfg['reps']}, "
                f"{len(cfg['pages'])} pages; warm-up GET ok: {result['warm_up'].get('ok')} "
                f"({result['warm_up']['ms']:.1f} ms)")
        cols = f"{'scenario':16s} {'TTFT p50':>9s} {'p90':>7s} {'ovh p50':>8s} {'p90':>7s} {'goal':>6s} {'cpu p50':>8s}  "
        phases = PHASES
    lines = [head, "", cols + " ".join(f"{p:>11s}" for p in phases)]
    for name, s in result["scenarios"].items():
        if real:
            row = (f"{name:16s} {s['ttft']['p50']:9.1f} {s['ttft']['p90']:7.1f} {s['local']['p50']:9.1f} "
                   f"{s['model_and_network']['p50']:9.1f} {s['python_cpu']['p50']:8.1f}  ")
        else:
            goal = f"{s['goal_p50_ms']:g}{'✓' if s['goal_met'] else '✗'}" if "goal_p50_ms" in s else ""
            row = (f"{name:16s} {s['ttft']['p50']:9.1f} {s['ttft']['p90']:7.1f} {s['overhead']['p50']:8.1f} "
                   f"{s['overhead']['p90']:7.1f} {goal:>6s} {s['python_cpu']['p50']:8.1f}  ")
        lines.append(row + " ".join(f"{s['phases_p50_ms'][p]:11.1f}" for p in phases))
    lines.append(
        "(ms; ovh = TTFT - server TTFT; cpu = this process's CPU time from ask() to the token; "
        "phases are per-phase medians, so they need not add up to the overhead median)"
    )
    m = result["machine"]
    lines.append(
        f"wall time {result['wall_s']:.1f} s; {m['cpus']} CPUs, {m['memory_gib']:g} GiB; load average "
        f"{m['loadavg_at_start'][0]:.1f} at start, {m['loadavg'][0]:.1f} at end"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ttft-ms", type=float, default=300)
    ap.add_argument("--tokens-per-s", type=float, default=50)
    ap.add_argument("--model", help="time this real model (e.g. gemini-2.5-flash with GOOGLE_API_KEY) instead of the local server")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--pages", nargs="*", help="local .html/.html.gz files or URLs (default: 10 WCXB test pages)")
    ap.add_argument("--no-preload", action="store_true",
                    help="warm only the model before the questions, not the text pipeline")
    ap.add_argument("--out", type=Path, help="write the full results (raw distributions included) as JSON")
    ap.add_argument("--plots", type=Path, help="write ttft.png and overhead.png into this folder")
    args = ap.parse_args(argv)
    pages: list[Path | str] | None = [p if p.startswith(("http://", "https://")) else Path(p) for p in args.pages] if args.pages else None

    async def go() -> dict[str, Any]:
        with progress_bar(Console(stderr=True)) as progress:
            return await run_latency(args.reps, args.ttft_ms, args.tokens_per_s, pages, progress,
                                     preload=not args.no_preload, model=args.model, data_dir=args.data)

    result = asyncio.run(go())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(format_report(result))
    if args.plots:
        from .plots import plot_overhead, plot_ttft

        args.plots.mkdir(parents=True, exist_ok=True)
        plot_ttft(result, args.plots / "ttft.png")
        if not args.model:
            plot_overhead(result, args.plots / "overhead.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
