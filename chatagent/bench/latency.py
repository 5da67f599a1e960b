"""Latency benchmark: time from a question to its first streamed token.

    python -m chatagent.bench.latency [--reps N] [--ttft-ms 300] [--tokens-per-s 50] [--out FILE.json] [--plots DIR]
    python -m chatagent.bench.latency --model gemini-2.5-flash   # the real service (GOOGLE_API_KEY)

The agent runs as in a real session: real pages in headless Chromium (served on
127.0.0.1, gunzipped on the fly, third-party hosts unresolvable so nothing
waits on a network that is not there), the real `ChatGoogleGenerativeAI`
client (google-genai SDK over httpx) against the local Gemini-compatible
server (`chatagent.testing.gemini_server`) with a fixed server TTFT.

Measured per question:
- **TTFT** = first `token` event received by the consumer − `agent.ask()` started;
- **server TTFT** = the server's own arrival → first chunk written, from its
  request record (`RecordedRequest.server_ttft_s`);
- **overhead** = TTFT − server TTFT = (request arrival − ask started)
  + (our token event − first chunk written). All stamps are `perf_counter()`
  in this process (the server runs in a thread of it), so they compare exactly.

The overhead is split into phases from outside the agent (no hooks in
agent.py): a `ContextBuilder`/`Extractor` subclass stamps the snapshot (CDP),
extraction and budgeting phases, and `chatagent.agent.build_messages` is
wrapped for the prompt build while the benchmark runs:
- `snapshot`: `build()` entered → last tab snapshot returned (all tabs in parallel);
- `extraction`: → `extract_many` returned (cache hits are ~free);
- `budget`: → `build()` returned (token counting, allocation, BM25 selection);
- `prompt`: `build_messages` itself;
- `client_http`: `build_messages` returned → request arrived at the server,
  plus first chunk written → our `token` event (LangChain + google-genai + httpx
  + the event queue);
- `other`: ask() → `build()` entered, and `build()` returned → `build_messages`
  (task start-up, notes, pass-start event).
The phases add up to the overhead exactly.

Scenarios:
- `warm_1tab`: one tab, already extracted by an earlier (untimed) question of
  the same conversation; a follow-up question.
- `cold_1tab`: one tab not yet extracted (a new `ContextBuilder` per question,
  so an empty extraction cache), model client warm.
- `cold_10tab`: ten tabs, none extracted.
  Before each cold question its pages get an attribute set (untimed), so the
  snapshot moves the whole HTML as a first read does, not the stamp an
  unchanged page answers with.
- `prefetched_10tab`: `chat`'s first question: ten tabs, read (snapshot,
  extraction, page analysis) by `ContextBuilder.prefetch` while the question
  was typed (untimed); the question's own snapshots find the pages unchanged.
- `first_q_nowarm` / `first_q_warm`: the first question of a session: a new
  model client (no connection yet), cold 1 tab, without / with `warm_model`
  run beforehand (as `Session.open` does while the tabs load).

With `model=` (a real model by name) there is no local server: the service's
own TTFT cannot be seen, so each question's TTFT is split into `local` (ask()
→ the prompt built: the phases above up to `prompt`) and `model_and_network`
(the rest), for the first three scenarios; each question stops at its first
token, which spares the service the rest of the answer.
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
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from ..browser.base import PageSnapshot, Tab, TabFailure
from ..browser.playwright import PlaywrightBrowser
from ..context import ContextBuilder, PageContext
from ..events import Done, ErrorEvent, Token
from ..extraction import Extracted, ExtractionPool, Extractor
from ..models import get_chat_model
from ..session import warm_model, warm_pipeline
from ..testing.gemini_server import GeminiServer, RecordedRequest, TextReply
from .data import DEFAULT_DATA_DIR
from .report import machine, progress_bar
from .server import PageServer, browser_version, launch_browser

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "pages"
TEN_TABS = 10
MODEL_NAME = "gemini-2.5-flash"
ANSWER = "The page says so clearly in its main section [Tab 1]."
GOALS_MS = {"warm_1tab": 20.0, "cold_1tab": 100.0, "cold_10tab": 300.0}
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
    return [FIXTURES / name for name in FIXTURE_PAGES[:n]]


# ---------------------------------------------------------------- probes


class _Stamps:
    """perf_counter stamps of one question's phases, filled in by the timed builder."""

    def __init__(self) -> None:
        self.build_start: float | None = None
        self.snap_end: float | None = None
        self.extract_end: float | None = None
        self.build_end: float | None = None
        self.prompt_start: float | None = None
        self.prompt_end: float | None = None
        self.tabs = 0
        self.context_tokens = 0
        self.cache_hits = 0


class _TimedExtractor(Extractor):
    def __init__(self, stamps: Callable[[], _Stamps], pool: ExtractionPool) -> None:
        super().__init__(pool)
        self._stamps = stamps

    async def extract_many(self, snapshots: list[PageSnapshot]) -> list[Extracted]:
        st = self._stamps()
        st.snap_end = time.perf_counter()
        st.cache_hits = sum(s.content_hash in self._cache for s in snapshots)
        out = await super().extract_many(snapshots)
        st.extract_end = time.perf_counter()
        return out


class _TimedBuilder(ContextBuilder):
    """A ContextBuilder that stamps its phases; behaviour unchanged."""

    def __init__(self, pool: ExtractionPool) -> None:
        self.current = _Stamps()
        super().__init__(extractor=_TimedExtractor(lambda: self.current, pool))

    async def build(self, tabs: list[Tab | TabFailure], question: str | None = None, **kw: Any) -> PageContext:
        st = self.current
        st.build_start = time.perf_counter()
        ctx = await super().build(tabs, question, **kw)
        st.build_end = time.perf_counter()
        st.tabs = len(tabs)
        st.context_tokens = ctx.tokens
        return ctx


class _PromptProbe:
    """Wraps `chatagent.agent.build_messages` for the benchmark's lifetime."""

    def __init__(self) -> None:
        self.builder: _TimedBuilder | None = None

    def __enter__(self) -> "_PromptProbe":
        from .. import agent as agent_mod

        self._mod = agent_mod
        self._orig = orig = agent_mod.build_messages

        def timed(*args: Any, **kwargs: Any) -> Any:
            st = self.builder.current if self.builder else None
            t0 = time.perf_counter()
            out = orig(*args, **kwargs)
            if st is not None and st.prompt_start is None:
                st.prompt_start, st.prompt_end = t0, time.perf_counter()
            return out

        agent_mod.build_messages = timed
        return self

    def __exit__(self, *exc: object) -> None:
        self._mod.build_messages = self._orig


# ---------------------------------------------------------------- one question


def _question(title: str, i: int) -> str:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", title)]
    kw = max(words, key=len) if words else "the main topic"
    return QUESTIONS[i % len(QUESTIONS)].format(kw=kw)


async def ask_timed(
    agent: Any, builder: _TimedBuilder, server: GeminiServer | None, probe: _PromptProbe, question: str
) -> dict[str, Any]:
    """Ask one question; return its TTFT and phases (ms), and with a local `server`
    its server TTFT and overhead. Without one, stop at the first token."""
    probe.builder = builder
    builder.current = st = _Stamps()
    before = len(server.requests) if server else 0
    t_token: float | None = None
    cpu_ms = 0.0
    done: Done | None = None
    c0 = time.process_time()
    t0 = time.perf_counter()
    events = agent.ask(question)
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
    if not (st.build_start and st.snap_end and st.extract_end and st.build_end and st.prompt_start and st.prompt_end):
        raise RuntimeError("a phase was not stamped: has the agent's pipeline changed?")
    ms = lambda a, b: (b - a) * 1000  # noqa: E731
    ttft = ms(t0, t_token)
    common = {
        "ttft_ms": ttft,
        # CPU time of this process (all its threads) from ask() to the token: the
        # part of the overhead that other load on the machine can only stretch.
        # It includes the server thread's own work; Chromium and the Playwright driver are other processes.
        "python_cpu_ms": cpu_ms,
        "tabs": st.tabs,
        "cache_hits": st.cache_hits,
        "context_tokens": st.context_tokens,
        "question": question,
    }
    local = {
        "snapshot": ms(st.build_start, st.snap_end),
        "extraction": ms(st.snap_end, st.extract_end),
        "budget": ms(st.extract_end, st.build_end),
        "prompt": ms(st.prompt_start, st.prompt_end),
    }
    if server is None:
        return {
            **common,
            "local_ms": ms(t0, st.prompt_end),
            "model_and_network_ms": ms(st.prompt_end, t_token),
            "phases_ms": {**local, "other": ms(t0, st.build_start) + ms(st.build_end, st.prompt_start)},
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
        "client_send_ms": ms(st.prompt_end, req.arrived_at),
        "client_receive_ms": ms(req.first_chunk_at, t_token),
        "phases_ms": {
            **local,
            "client_http": ms(st.prompt_end, req.arrived_at) + ms(req.first_chunk_at, t_token),
            "other": ms(t0, st.build_start) + ms(st.build_end, st.prompt_start),
        },
        "agent_first_token_ms": done.timings.first_token_ms,
        "agent_extraction_ms": done.timings.extraction_ms,
        "agent_budget_ms": done.timings.budget_ms,
        "request_bytes": len(json.dumps(req.body or {})),
    }


# ---------------------------------------------------------------- statistics


def pct(xs: Sequence[float], q: float) -> float:
    """The q-quantile, linearly interpolated (NaN for no data)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats(xs: Sequence[float]) -> dict[str, float]:
    return {
        "p50": pct(xs, 0.5), "p90": pct(xs, 0.9), "mean": statistics.fmean(xs) if xs else float("nan"),
        "min": min(xs) if xs else float("nan"), "max": max(xs) if xs else float("nan"), "n": len(xs),
    }


def summarise(name: str, description: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    phases = list(samples[0]["phases_ms"]) if samples else []
    out: dict[str, Any] = {
        "description": description,
        "ttft_ms": [s["ttft_ms"] for s in samples],
        "ttft": stats([s["ttft_ms"] for s in samples]),
        "phases_p50_ms": {p: pct([s["phases_ms"][p] for s in samples], 0.5) for p in phases},
        "phases_mean_ms": {p: statistics.fmean(s["phases_ms"][p] for s in samples) for p in phases},
        "python_cpu": stats([s["python_cpu_ms"] for s in samples]),
    }
    if samples and "overhead_ms" in samples[0]:
        overhead = [s["overhead_ms"] for s in samples]
        out.update(server_ttft_ms=[s["server_ttft_ms"] for s in samples], overhead_ms=overhead, overhead=stats(overhead))
        if name in GOALS_MS:
            out["goal_p50_ms"] = GOALS_MS[name]
            out["goal_met"] = out["overhead"]["p50"] <= GOALS_MS[name]
    else:
        out.update(local=stats([s["local_ms"] for s in samples]),
                   model_and_network=stats([s["model_and_network_ms"] for s in samples]))
    out["samples"] = samples
    return out


# ---------------------------------------------------------------- the scenarios


@dataclass
class _Bench:
    """What every scenario needs: the open tabs, the model, and the probes."""

    tabs: list[Tab | TabFailure]
    titles: list[str]
    urls: list[str]
    model: Any
    new_model: Callable[[], Any]
    server: GeminiServer | None
    probe: _PromptProbe
    pool: ExtractionPool
    reads: Iterator[int] = field(default_factory=itertools.count)

    async def unseen(self, tabs: list[Tab | TabFailure]) -> None:
        """Have `tabs` read as tabs the agent has not seen yet: an attribute set
        in each page (outside the timing) means the next snapshot moves the whole
        HTML (an unchanged page's does not) and its content is new."""
        n = next(self.reads)
        await asyncio.gather(*(
            t.page.evaluate(f"document.documentElement.setAttribute('data-bench-read', '{n}')")  # type: ignore[union-attr]
            for t in tabs if isinstance(t, Tab)
        ))

    def agent(self, tabs: list[Tab | TabFailure], model: Any = None) -> tuple[Any, _TimedBuilder]:
        from ..agent import ChatAgent

        builder = _TimedBuilder(self.pool)
        return ChatAgent(model or self.model, tabs, builder=builder), builder

    async def ask(self, agent: Any, builder: _TimedBuilder, question: str) -> dict[str, Any]:
        return await ask_timed(agent, builder, self.server, self.probe, question)

    def page(self, i: int) -> tuple[Tab | TabFailure, str, str]:
        k = i % len(self.tabs)
        return self.tabs[k], _question(self.titles[k], i), self.urls[k]

    async def cold1(self, i: int) -> dict[str, Any]:
        tab, question, url = self.page(i)
        await self.unseen([tab])
        return {**await self.ask(*self.agent([tab]), question), "page": url}

    async def warm1(self, i: int) -> dict[str, Any]:
        """A conversation per page; its first question (untimed) extracts the page."""
        tab, question, url = self.page(i)
        agent, builder = self.agent([tab])
        await self.ask(agent, builder, question)
        follow_up = _question(self.titles[i % len(self.tabs)], i + 1)
        return {**await self.ask(agent, builder, follow_up), "page": url}

    async def cold10(self, i: int) -> dict[str, Any]:
        _, question, _ = self.page(i)
        await self.unseen(self.tabs)
        return await self.ask(*self.agent(list(self.tabs)), question)

    async def prefetched10(self, i: int) -> dict[str, Any]:
        """`chat`'s first question: its ten tabs were read while it was typed."""
        _, question, _ = self.page(i)
        await self.unseen(self.tabs)
        agent, builder = self.agent(list(self.tabs))
        await builder.prefetch(self.tabs)
        return await self.ask(agent, builder, question)

    async def first(self, i: int, warm: bool) -> dict[str, Any]:
        """The first question of a session: a new client, cold page."""
        model = self.new_model()
        if warm:
            await warm_model(model)
        tab, question, url = self.page(i)
        await self.unseen([tab])
        return {**await self.ask(*self.agent([tab], model), question), "page": url}

    async def first_nowarm(self, i: int) -> dict[str, Any]:
        return await self.first(i, False)

    async def first_warm(self, i: int) -> dict[str, Any]:
        return await self.first(i, True)

    def scenarios(self) -> list[tuple[str, str, Callable[[int], Awaitable[dict[str, Any]]]]]:
        out: list[tuple[str, str, Callable[[int], Awaitable[dict[str, Any]]]]] = [
            ("warm_1tab", "1 tab already extracted; follow-up question", self.warm1),
            ("cold_1tab", "1 tab, not yet extracted; client warm", self.cold1),
            ("cold_10tab", "10 tabs, none extracted; client warm", self.cold10),
            ("prefetched_10tab", "10 tabs read ahead while the question was typed (chat)", self.prefetched10),
        ]
        if self.server is not None:  # against a real service these only add connection noise and cost
            out += [
                ("first_q_nowarm", "first question, new client, no warm-up; cold 1 tab", self.first_nowarm),
                ("first_q_warm", "first question, new client after warm_model; cold 1 tab", self.first_warm),
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
) -> dict[str, Any]:
    """Run every scenario `reps` times; see the module docstring. `pages`: local
    .html/.html.gz files (served on 127.0.0.1) or URLs; the first 10 are used.
    `model`: a real model by name instead of the local server. `browser` and
    `site`: the caller's, reused (the tabs opened here are closed again), else our own."""
    pages = list(pages) if pages else list(default_pages(data_dir=data_dir))
    started = time.perf_counter()
    load_at_start = list(os.getloadavg())
    async with AsyncExitStack() as stack:
        server = None
        if model is None:
            server = stack.enter_context(GeminiServer(
                responder=lambda _r: TextReply(text=ANSWER), ttft_s=server_ttft_ms / 1000, tokens_per_s=tokens_per_s
            ))
        site = site or stack.enter_context(PageServer())
        probe = stack.enter_context(_PromptProbe())
        br = browser or await stack.enter_async_context(launch_browser())
        urls = [p if isinstance(p, str) and p.startswith(("http://", "https://")) else site.file_url(Path(p)) for p in pages]
        urls = (urls * TEN_TABS)[:TEN_TABS]

        def new_model() -> Any:
            if server is None:
                return get_chat_model(model)
            return get_chat_model(MODEL_NAME, api_key="test", base_url=server.url)

        # Extraction runs where a Session runs it: in worker processes.
        pool = ExtractionPool()
        stack.callback(pool.shutdown, wait=False, cancel_futures=True)
        preload_ms = None
        if preload:
            t = time.perf_counter()
            await warm_pipeline(pool)
            preload_ms = (time.perf_counter() - t) * 1000
        tabs = await br.open_tabs(urls)
        try:
            bad = [t for t in tabs if isinstance(t, TabFailure)]
            if bad:
                raise RuntimeError(f"pages failed to open: {[b.message for b in bad]}")
            titles = [(await t.page.title()) or "" for t in tabs]  # type: ignore[union-attr]

            chat = new_model()
            before = len(server.requests) if server else 0
            t = time.perf_counter()
            await warm_model(chat)
            warmup: dict[str, Any] = {"ms": (time.perf_counter() - t) * 1000}
            if server is not None:  # does the local server answer what warm_model sends?
                sent = server.requests[before:]
                gets = [r for r in sent if r.method == "GET"]
                warmup["requests"] = [{"method": r.method, "path": r.path, "status": r.status} for r in sent]
                warmup["ok"] = bool(gets) and all(r.status == 200 for r in gets)
            log.info("warm_model: %s", warmup)

            bench = _Bench(tabs, titles, urls, chat, new_model, server, probe, pool)
            # An untimed question first, so the process-level one-offs (imports,
            # first use of the thread pool) do not land on whichever scenario runs first.
            await bench.ask(*bench.agent([tabs[-1]]), "What is this page about?")

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
            for tab in tabs:
                if isinstance(tab, Tab):
                    await tab.close()
        chromium = browser_version(br)

    return {
        "config": {
            "reps": reps,
            "server_ttft_ms": server_ttft_ms if model is None else None,
            "tokens_per_s": tokens_per_s if model is None else None,
            "pages": urls,
            "page_files": [str(p) for p in pages if isinstance(p, Path)],
            "preload": preload,
            "preload_ms": preload_ms,
            "model": model or MODEL_NAME,
            "service": "real" if model else "local server",
        },
        "machine": {**machine(), "loadavg_at_start": load_at_start, "browser": chromium},
        "warm_model": warmup,
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
                f"{len(cfg['pages'])} pages; warm_model GET ok: {result['warm_model'].get('ok')} "
                f"({result['warm_model']['ms']:.1f} ms)")
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
    ap = argparse.ArgumentParser(prog="python -m chatagent.bench.latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ttft-ms", type=float, default=300)
    ap.add_argument("--tokens-per-s", type=float, default=50)
    ap.add_argument("--model", help="time this real model (e.g. gemini-2.5-flash with GOOGLE_API_KEY) instead of the local server")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--pages", nargs="*", help="local .html/.html.gz files or URLs (default: 10 WCXB test pages)")
    ap.add_argument("--no-preload", action="store_true", help="skip warm_pipeline() before the questions")
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
