"""Latency benchmark: time from a question to its first streamed token.

    python -m chatagent.bench.latency [--reps N] [--ttft-ms 300] [--tokens-per-s 50] [--out FILE.json] [--plots DIR]

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
- `first_q_nowarm` / `first_q_warm`: the first question of a session: a new
  model client (no connection yet), cold 1 tab, without / with `warm_model`
  run beforehand (as `Session.open` does while the tabs load).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import platform
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..browser.base import PageSnapshot, Tab, TabFailure
from ..browser.playwright import PlaywrightBrowser
from ..context import ContextBuilder, PageContext
from ..events import Done, ErrorEvent, Token
from ..extraction import Extracted, Extractor
from ..models import get_chat_model
from ..session import warm_model, warm_pipeline
from ..testing.gemini_server import GeminiServer, RecordedRequest, TextReply

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "pages"
WCXB_HTML = Path("../shared/data/wcxb-test/html")
TEN_TABS = 10
MODEL_NAME = "gemini-2.5-flash"
ANSWER = "The page says so clearly in its main section [Tab 1]."
# Only the local servers resolve: saved pages' third-party assets fail at once.
OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
GOALS_MS = {"warm_1tab": 20.0, "cold_1tab": 100.0, "cold_10tab": 300.0}
PHASES = ("snapshot", "extraction", "budget", "prompt", "client_http", "other")
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

Progress = Callable[[str], None] | None


# ---------------------------------------------------------------- pages


def default_pages(n: int = TEN_TABS) -> list[Path]:
    """`n` WCXB test pages spread evenly over the set (same ones every run), else the fixtures."""
    found = sorted(WCXB_HTML.glob("*.html.gz"), key=lambda p: (len(p.name), p.name)) if WCXB_HTML.is_dir() else []
    if len(found) >= n:
        step = len(found) / n
        return [found[int(i * step)] for i in range(n)]
    return [FIXTURES / name for name in FIXTURE_PAGES[:n]]


class PageServer:
    """Serves the given files (gunzipped if .gz) at /<i>/<name> on 127.0.0.1, one thread per connection."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = [Path(f) for f in files]
        files_ = self.files

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                m = re.match(r"^/(\d+)/", unquote(self.path))
                if not m or int(m[1]) >= len(files_):
                    body, status, ctype = b"not found", 404, "text/plain"
                else:
                    path = files_[int(m[1])]
                    body = path.read_bytes()
                    if path.suffix == ".gz":
                        body = gzip.decompress(body)
                    status, ctype = 200, "text/html; charset=utf-8"
                    if path.suffix == ".html" and b"charset=iso-8859-1" in body[:2000].lower():
                        ctype = "text/html; charset=iso-8859-1"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, i: int) -> str:
        name = self.files[i].name.removesuffix(".gz")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/{i}/{name}"

    def __enter__(self) -> "PageServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


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
    def __init__(self, stamps: Callable[[], _Stamps]) -> None:
        super().__init__()
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

    def __init__(self) -> None:
        self.current = _Stamps()
        super().__init__(extractor=_TimedExtractor(lambda: self.current))

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
    agent: Any, builder: _TimedBuilder, server: GeminiServer, probe: _PromptProbe, question: str
) -> dict[str, Any]:
    """Ask one question; return its TTFT, server TTFT, overhead and phases (ms)."""
    probe.builder = builder
    builder.current = st = _Stamps()
    before = len(server.requests)
    t_token: float | None = None
    cpu_ms = 0.0
    done: Done | None = None
    c0 = time.process_time()
    t0 = time.perf_counter()
    async for event in agent.ask(question):
        if t_token is None and isinstance(event, Token):
            t_token = time.perf_counter()
            cpu_ms = (time.process_time() - c0) * 1000
        if isinstance(event, ErrorEvent):
            raise RuntimeError(f"the agent failed: {event.code}: {event.message}")
        if isinstance(event, Done):
            done = event
    gens = [r for r in server.requests[before:] if r.is_generate]
    if t_token is None or not gens or done is None:
        raise RuntimeError("no token or no generate request recorded")
    req: RecordedRequest = gens[0]
    assert req.first_chunk_at is not None and st.build_start and st.snap_end and st.extract_end and st.build_end
    assert st.prompt_start and st.prompt_end
    ms = lambda a, b: (b - a) * 1000  # noqa: E731
    ttft = ms(t0, t_token)
    server_ttft = ms(req.arrived_at, req.first_chunk_at)
    phases = {
        "snapshot": ms(st.build_start, st.snap_end),
        "extraction": ms(st.snap_end, st.extract_end),
        "budget": ms(st.extract_end, st.build_end),
        "prompt": ms(st.prompt_start, st.prompt_end),
        "client_http": ms(st.prompt_end, req.arrived_at) + ms(req.first_chunk_at, t_token),
        "other": ms(t0, st.build_start) + ms(st.build_end, st.prompt_start),
    }
    return {
        "ttft_ms": ttft,
        "server_ttft_ms": server_ttft,
        "overhead_ms": ttft - server_ttft,
        # CPU time of this process (all its threads) from ask() to the token: the
        # part of the overhead that other load on the machine can only stretch.
        # It includes the server thread's own work; Chromium and the Playwright driver are other processes.
        "python_cpu_ms": cpu_ms,
        "pre_request_ms": ms(t0, req.arrived_at),
        "post_chunk_ms": ms(req.first_chunk_at, t_token),
        "client_send_ms": ms(st.prompt_end, req.arrived_at),
        "client_receive_ms": ms(req.first_chunk_at, t_token),
        "phases_ms": phases,
        "agent_first_token_ms": done.timings.first_token_ms,
        "agent_extraction_ms": done.timings.extraction_ms,
        "agent_budget_ms": done.timings.budget_ms,
        "tabs": st.tabs,
        "cache_hits": st.cache_hits,
        "context_tokens": st.context_tokens,
        "request_bytes": len(json.dumps(req.body or {})),
        "question": question,
    }


# ---------------------------------------------------------------- statistics


def _pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _stats(xs: Sequence[float]) -> dict[str, float]:
    return {
        "p50": _pct(xs, 0.5), "p90": _pct(xs, 0.9), "mean": statistics.fmean(xs) if xs else float("nan"),
        "min": min(xs) if xs else float("nan"), "max": max(xs) if xs else float("nan"), "n": len(xs),
    }


def summarise(name: str, description: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    overhead = [s["overhead_ms"] for s in samples]
    out: dict[str, Any] = {
        "description": description,
        "ttft_ms": [s["ttft_ms"] for s in samples],
        "server_ttft_ms": [s["server_ttft_ms"] for s in samples],
        "overhead_ms": overhead,
        "ttft": _stats([s["ttft_ms"] for s in samples]),
        "overhead": _stats(overhead),
        "phases_p50_ms": {p: _pct([s["phases_ms"][p] for s in samples], 0.5) for p in PHASES},
        "phases_mean_ms": {p: statistics.fmean(s["phases_ms"][p] for s in samples) for p in PHASES},
        "python_cpu": _stats([s["python_cpu_ms"] for s in samples]),
        "samples": samples,
    }
    if name in GOALS_MS:
        out["goal_p50_ms"] = GOALS_MS[name]
        out["goal_met"] = out["overhead"]["p50"] <= GOALS_MS[name]
    return out


# ---------------------------------------------------------------- the run


def _machine() -> dict[str, Any]:
    mem = ""
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {
        "cpus": os.cpu_count(), "memory": mem, "python": platform.python_version(), "platform": platform.platform(),
        "loadavg": list(os.getloadavg()),  # other work on the machine skews the figures
    }


async def run_latency(
    reps: int,
    server_ttft_ms: float = 300,
    tokens_per_s: float = 50,
    pages: list[Path | str] | None = None,
    progress: Progress = None,
    *,
    preload: bool = True,
) -> dict[str, Any]:
    """Run every scenario `reps` times; see the module docstring. `pages`: local
    .html/.html.gz files (served on 127.0.0.1) or URLs; the first 10 are used."""
    say = progress or (lambda _msg: None)
    pages = list(pages) if pages else list(default_pages())
    files = [Path(p) for p in pages if not (isinstance(p, str) and p.startswith(("http://", "https://")))]
    started = time.perf_counter()
    load_at_start = list(os.getloadavg())
    from ..agent import ChatAgent

    with (
        GeminiServer(
            responder=lambda _r: TextReply(text=ANSWER), ttft_s=server_ttft_ms / 1000, tokens_per_s=tokens_per_s
        ) as server,
        PageServer(files) as site,
        _PromptProbe() as probe,
    ):
        file_urls = iter(site.url(i) for i in range(len(files)))
        urls = [p if isinstance(p, str) and p.startswith(("http://", "https://")) else next(file_urls) for p in pages]
        urls = (urls * TEN_TABS)[: max(TEN_TABS, len(urls))][:TEN_TABS]

        def new_model() -> Any:
            return get_chat_model(MODEL_NAME, api_key="test", base_url=server.url)

        say("launching Chromium, opening pages")
        browser = await PlaywrightBrowser.launch(extra_args=OFFLINE_ARGS)
        try:
            preload_ms = None
            if preload:
                t = time.perf_counter()
                await warm_pipeline()
                preload_ms = (time.perf_counter() - t) * 1000
            tabs = await browser.open_tabs(urls)
            bad = [t for t in tabs if isinstance(t, TabFailure)]
            if bad:
                raise RuntimeError(f"pages failed to open: {[b.message for b in bad]}")
            titles = [(await t.page.title()) or "" for t in tabs]  # type: ignore[union-attr]
            n_pages = len(tabs)

            # The warm-up GET: does the local server answer what warm_model sends?
            model = new_model()
            before = len(server.requests)
            t = time.perf_counter()
            await warm_model(model)
            warm_ms = (time.perf_counter() - t) * 1000
            gets = [r for r in server.requests[before:] if r.method == "GET"]
            warmup = {
                "requests": [{"method": r.method, "path": r.path, "status": r.status} for r in server.requests[before:]],
                "ok": bool(gets) and all(r.status == 200 for r in gets),
                "ms": warm_ms,
            }
            say(f"warm_model: {warmup['requests']} in {warm_ms:.1f} ms")

            results: dict[str, Any] = {}

            # First questions of a session: fresh client each time, cold page.
            async def first(i: int, warm: bool) -> dict[str, Any]:
                m = new_model()
                if warm:
                    await warm_model(m)
                builder = _TimedBuilder()
                tab = tabs[i % n_pages]
                agent = ChatAgent(m, [tab], builder=builder)
                s = await ask_timed(agent, builder, server, probe, _question(titles[i % n_pages], i))
                return {**s, "page": urls[i % n_pages]}

            # An untimed question first, so the process-level one-offs (imports,
            # first use of the thread pool) do not land on whichever scenario runs first.
            b0 = _TimedBuilder()
            await ask_timed(ChatAgent(model, [tabs[-1]], builder=b0), b0, server, probe, "What is this page about?")

            async def first_nowarm(i: int) -> dict[str, Any]:
                return await first(i, False)

            async def first_warm(i: int) -> dict[str, Any]:
                return await first(i, True)

            async def cold1(i: int) -> dict[str, Any]:
                builder = _TimedBuilder()
                tab = tabs[i % n_pages]
                agent = ChatAgent(model, [tab], builder=builder)
                s = await ask_timed(agent, builder, server, probe, _question(titles[i % n_pages], i))
                return {**s, "page": urls[i % n_pages]}

            # Warm: a conversation per page; its first question (untimed) extracts the page.
            async def warm1(i: int) -> dict[str, Any]:
                k = i % n_pages
                builder = _TimedBuilder()
                agent = ChatAgent(model, [tabs[k]], builder=builder)
                await ask_timed(agent, builder, server, probe, _question(titles[k], i))
                s = await ask_timed(agent, builder, server, probe, _question(titles[k], i + 1))
                return {**s, "page": urls[k]}

            async def cold10(i: int) -> dict[str, Any]:
                builder = _TimedBuilder()
                agent = ChatAgent(model, list(tabs), builder=builder)
                return await ask_timed(agent, builder, server, probe, _question(titles[i % n_pages], i))

            scenarios: list[tuple[str, str, Callable[[int], Any]]] = [
                ("warm_1tab", "1 tab already extracted; follow-up question", warm1),
                ("cold_1tab", "1 tab, not yet extracted; client warm", cold1),
                ("cold_10tab", "10 tabs, none extracted; client warm", cold10),
                ("first_q_nowarm", "first question, new client, no warm-up; cold 1 tab", first_nowarm),
                ("first_q_warm", "first question, new client after warm_model; cold 1 tab", first_warm),
            ]
            # Interleaved (rep by rep, order rotating), so drifting load on the
            # machine spreads over every scenario instead of biasing one.
            samples: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in scenarios}
            for i in range(reps):
                say(f"rep {i + 1}/{reps}")
                for j in range(len(scenarios)):
                    name, _, one = scenarios[(i + j) % len(scenarios)]
                    samples[name].append(await one(i))
            for name, description, _ in scenarios:
                results[name] = summarise(name, description, samples[name])
                o = results[name]["overhead"]
                say(f"{name:15s} overhead p50 {o['p50']:7.1f} ms  p90 {o['p90']:7.1f} ms")
        finally:
            await browser.close()

    return {
        "config": {
            "reps": reps,
            "server_ttft_ms": server_ttft_ms,
            "tokens_per_s": tokens_per_s,
            "pages": urls,
            "page_files": [str(f) for f in files],
            "preload": preload,
            "preload_ms": preload_ms,
            "model": MODEL_NAME,
        },
        "machine": {**_machine(), "loadavg_at_start": load_at_start},
        "warm_model": warmup,
        "scenarios": results,
        "goals_ms": GOALS_MS,
        "wall_s": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- CLI


def format_report(result: dict[str, Any]) -> str:
    cfg = result["config"]
    lines = [
        f"server TTFT {cfg['server_ttft_ms']:g} ms, {cfg['tokens_per_s']:g} tokens/s, reps {cfg['reps']}, "
        f"{len(cfg['pages'])} pages; warm_model GET ok: {result['warm_model']['ok']} "
        f"({result['warm_model']['ms']:.1f} ms)",
        "",
        f"{'scenario':16s} {'TTFT p50':>9s} {'p90':>7s} {'ovh p50':>8s} {'p90':>7s} {'goal':>6s} {'cpu p50':>8s}  "
        + " ".join(f"{p:>11s}" for p in PHASES),
    ]
    for name, s in result["scenarios"].items():
        goal = f"{s['goal_p50_ms']:g}{'✓' if s['goal_met'] else '✗'}" if "goal_p50_ms" in s else ""
        lines.append(
            f"{name:16s} {s['ttft']['p50']:9.1f} {s['ttft']['p90']:7.1f} {s['overhead']['p50']:8.1f} "
            f"{s['overhead']['p90']:7.1f} {goal:>6s} {s['python_cpu']['p50']:8.1f}  "
            + " ".join(f"{s['phases_p50_ms'][p]:11.1f}" for p in PHASES)
        )
    lines.append(
        "(ms; ovh = TTFT - server TTFT; cpu = this process's CPU time from ask() to the token; "
        "phases are per-phase medians, so they need not add up to the overhead median)"
    )
    m = result["machine"]
    lines.append(
        f"wall time {result['wall_s']:.1f} s; {m['cpus']} CPUs, {m['memory']}; load average "
        f"{m['loadavg_at_start'][0]:.1f} at start, {m['loadavg'][0]:.1f} at end"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatagent.bench.latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ttft-ms", type=float, default=300)
    ap.add_argument("--tokens-per-s", type=float, default=50)
    ap.add_argument("--pages", nargs="*", help="local .html/.html.gz files or URLs (default: 10 WCXB test pages)")
    ap.add_argument("--no-preload", action="store_true", help="skip warm_pipeline() before the questions")
    ap.add_argument("--out", type=Path, help="write the full results (raw distributions included) as JSON")
    ap.add_argument("--plots", type=Path, help="write ttft.png and overhead.png into this folder")
    args = ap.parse_args(argv)
    pages: list[Path | str] | None = [p if p.startswith(("http://", "https://")) else Path(p) for p in args.pages] if args.pages else None
    result = asyncio.run(
        run_latency(
            args.reps, args.ttft_ms, args.tokens_per_s, pages,
            progress=lambda m: print(m, file=sys.stderr, flush=True), preload=not args.no_preload,
        )
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(format_report(result))
    if args.plots:
        from .plots import plot_overhead, plot_ttft

        args.plots.mkdir(parents=True, exist_ok=True)
        plot_ttft(result, args.plots / "ttft.png")
        plot_overhead(result, args.plots / "overhead.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
