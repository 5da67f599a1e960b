"""Context benchmark: what the model gets to see, how much it costs, how fast.

    python -m chatagent.bench.context_bench [--data DIR] [--limit N] [--budget 2000] [--out FILE.json]

1. WTQ answer recall at a per-tab token budget: every page is served from a
   local HTTP server (gunzipped on the fly), loaded once in headless Chromium
   through `PlaywrightBrowser`, and all of its questions are asked against that
   snapshot, for chatagent (question-aware) and three baselines (trafilatura
   head-truncated, trafilatura whole, the rendered page text whole). The same
   is done on the raw HTML (`StaticTab`, no browser) to compare with issue 2.
2. Extraction quality through the browser: AEB and WCXB word F1 of chatagent's
   `Extractor` output (no budget), WCXB per page type and its snippet checks.
3. Extraction time per page, and `ContextBuilder.build` over 10 tabs at once.

Pages load a few at a time; all CPU work (extraction, budgeting, scoring) runs in
a process pool after the loads, so the timings are not inflated by the renderer.
Progress goes to stderr; the tables to stdout; everything to the JSON file.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, TypeVar
from urllib.parse import unquote, urlsplit

import trafilatura
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..browser.base import PageSnapshot, Tab, TabFailure
from ..browser.playwright import PlaywrightBrowser
from ..browser.static import StaticTab
from ..budget import fit_text
from ..context import ContextBuilder
from ..extraction import Extractor, extract_snapshot
from ..tokens import count_tokens
from .data import DEFAULT_DATA_DIR, WcxbPage, WtqQuestion, load_aeb, load_wcxb, load_wtq, read_html
from .scoring import NormalizedText, answer_in_context, snippet_check, word_prf

T = TypeVar("T")

DEFAULT_BUDGET = 2000
LOAD_CONCURRENCY = 4  # tabs loading at once: enough to hide latency, few enough for 2 cores
TEN_TABS = 10
TEN_TAB_REPEATS = 5
# Only the local server resolves: the saved pages' third-party assets fail at
# once instead of waiting on a network that is not there.
OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
WTQ_CONFIGS = (
    ("chatagent", "chatagent (question-aware)"),
    ("chatagent_nobudget", "chatagent, no budget"),
    ("trafilatura_head", "trafilatura, head-truncated"),
    ("trafilatura_full", "trafilatura, no budget"),
    ("full_text", "full page text, no budget"),
)


# ---------------------------------------------------------------- local page server


class PageServer:
    """Serves `<data>/<path>.gz` at `/<path>`, gunzipped, on 127.0.0.1 (asyncio, HTTP/1.0)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._server: asyncio.Server | None = None
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.removesuffix('.gz')}"

    async def __aenter__(self) -> "PageServer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _file(self, url_path: str) -> Path | None:
        rel = unquote(urlsplit(url_path).path).lstrip("/")
        for candidate in (self.root / f"{rel}.gz", self.root / rel):
            try:
                resolved = candidate.resolve()
            except OSError:
                continue
            if resolved.is_relative_to(self.root) and resolved.is_file():
                return resolved
        return None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readline()
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # headers: nothing in them matters here
            parts = request.decode("latin-1").split()
            path = self._file(parts[1]) if len(parts) >= 2 and parts[0] in ("GET", "HEAD") else None
            if path is None:
                status, body, ctype = "404 Not Found", b"not found", "text/plain"
            else:
                raw = await asyncio.to_thread(path.read_bytes)
                body = await asyncio.to_thread(gzip.decompress, raw) if path.suffix == ".gz" else raw
                status, ctype = "200 OK", "text/html; charset=utf-8"
            head = f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            writer.write(head.encode("latin-1") + (body if parts and parts[0] == "GET" else b""))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


# ---------------------------------------------------------------- loading pages


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


async def load_snapshots(
    browser: PlaywrightBrowser, urls: dict[str, str], progress: Progress, label: str
) -> dict[str, PageSnapshot]:
    """Open every page once (a few tabs at a time), snapshot it, close it."""
    task = progress.add_task(label, total=len(urls))
    gate = asyncio.Semaphore(LOAD_CONCURRENCY)
    out: dict[str, PageSnapshot] = {}

    async def one(key: str, url: str) -> None:
        async with gate:
            [tab] = await browser.open_tabs([url])
            try:
                if isinstance(tab, Tab):
                    try:
                        out[key] = await tab.snapshot()
                    except Exception as exc:  # a page that crashed the renderer: scored as empty
                        out[key] = PageSnapshot(tab_id=tab.tab_id, url=url, notes=[str(exc)])
                else:
                    out[key] = PageSnapshot(tab_id=tab.tab_id, url=url, notes=[tab.message])
            finally:
                if isinstance(tab, Tab):
                    await tab.close()
        progress.advance(task)

    await asyncio.gather(*(one(k, u) for k, u in urls.items()))
    return out


async def static_snapshots(data_dir: Path, paths: Sequence[str], server: PageServer) -> dict[str, PageSnapshot]:
    """Raw-HTML snapshots (no renderer): what the issue's baselines were measured on."""

    async def one(path: str) -> tuple[str, PageSnapshot]:
        html = await asyncio.to_thread(read_html, data_dir / path)
        return path, await StaticTab("1", server.url(path), html).snapshot()

    return dict(await asyncio.gather(*(one(p) for p in paths)))


async def run_pool(
    executor: Executor, fn: Callable[..., T], jobs: Sequence[tuple[Any, ...]], progress: Progress, label: str
) -> list[T]:
    """`fn(*job)` for every job in the process pool, in job order, with a progress bar."""
    loop = asyncio.get_running_loop()
    task = progress.add_task(label, total=len(jobs))

    async def one(job: tuple[Any, ...]) -> T:
        result = await loop.run_in_executor(executor, fn, *job)
        progress.advance(task)
        return result

    return list(await asyncio.gather(*(one(j) for j in jobs)))


# ---------------------------------------------------------------- per-page work (process pool)


def _timed_extract(snapshot: PageSnapshot) -> tuple[Any, float]:
    t0 = time.perf_counter()
    extracted = extract_snapshot(snapshot)
    return extracted, (time.perf_counter() - t0) * 1000


def _baseline_trafilatura(html: str) -> str:
    # Defaults, as in the baseline (plain text, tables included).
    try:
        return trafilatura.extract(html) or ""
    except Exception:  # parser errors on odd input count as nothing extracted
        return ""


def wtq_page(snapshot: PageSnapshot, questions: list[WtqQuestion], budget: int) -> dict[str, Any]:
    """Every configuration for every question of one page (runs in a worker process)."""
    t0 = time.perf_counter()
    extracted = extract_snapshot(snapshot)
    extract_ms = (time.perf_counter() - t0) * 1000
    builder = ContextBuilder(budget_per_tab=budget)

    async def contexts() -> list[Any]:
        # The product's own path: extraction is cached by content hash after the first question.
        return [await builder.build([], q.question, snapshots=[snapshot]) for q in questions]

    built = asyncio.run(contexts())
    whole = ContextBuilder(builder.extractor, budget_per_tab=10**9)  # shares the extraction cache
    traf = _baseline_trafilatura(snapshot.html)
    texts = {
        "chatagent_nobudget": asyncio.run(whole.build([], None, snapshots=[snapshot])).tabs[0].text,
        "trafilatura_head": fit_text(traf, budget).text,
        "trafilatura_full": traf,
        "full_text": snapshot.visible_text,
    }
    fixed = {k: (NormalizedText(v), count_tokens(v)) for k, v in texts.items()}
    rows = []
    for q, ctx in zip(questions, built):
        tab = ctx.tabs[0]
        ours = NormalizedText(tab.text)
        row: dict[str, Any] = {
            "id": q.id,
            "split": q.split,
            "budget_ms": ctx.budget_ms,
            "chatagent": [answer_in_context(q.answers, ours), answer_in_context(q.answers, ours, whole_words=True), tab.tokens],
        }
        for key, (norm, tokens) in fixed.items():
            row[key] = [answer_in_context(q.answers, norm), answer_in_context(q.answers, norm, whole_words=True), tokens]
        rows.append(row)
    return {"page": questions[0].page, "extract_ms": extract_ms, "method": extracted.method, "rows": rows}


def _score_article(snapshot: PageSnapshot, truth: str) -> tuple[str, dict[str, Any]]:
    extracted, ms = _timed_extract(snapshot)
    prf = word_prf(extracted.text, truth)
    return extracted.text, {
        "prf": prf.model_dump(), "extract_ms": ms, "method": extracted.method, "tokens": count_tokens(extracted.text)
    }


def article_page(snapshot: PageSnapshot, truth: str) -> dict[str, Any]:
    return _score_article(snapshot, truth)[1]


def wcxb_page(snapshot: PageSnapshot, page: WcxbPage) -> dict[str, Any]:
    text, out = _score_article(snapshot, page.main_content)
    check = snippet_check(text, page.with_snippets, page.without_snippets)
    out.update(page_type=page.page_type, snippets=check.model_dump(), passed=check.passed)
    return out


# ---------------------------------------------------------------- aggregation


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else 0.0


def _p90(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return float(s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))])


def _methods(results: list[dict[str, Any]]) -> dict[str, int]:
    """Pages per extraction method: how often each supplement kicked in."""
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        counts[r["method"]] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _fmt_methods(methods: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in methods.items())


def summarise_wtq(pages: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r for p in pages for r in p["rows"]]
    out: dict[str, Any] = {"questions": len(rows), "pages": len(pages), "configs": {}, "splits": {}}
    for key, _ in WTQ_CONFIGS:
        vals = [r[key] for r in rows]
        out["configs"][key] = {
            "recall": sum(v[0] for v in vals) / max(len(vals), 1),
            "recall_strict": sum(v[1] for v in vals) / max(len(vals), 1),
            "tokens_median": _median([v[2] for v in vals]),
            "tokens_p90": _p90([v[2] for v in vals]),
        }
    for split in ("tune", "held-out"):
        vals = [r["chatagent"] for r in rows if r["split"] == split]
        out["splits"][split] = {
            "questions": len(vals),
            "recall": sum(v[0] for v in vals) / max(len(vals), 1),
            "recall_strict": sum(v[1] for v in vals) / max(len(vals), 1),
            "tokens_median": _median([v[2] for v in vals]),
        }
    budget_ms = [r["budget_ms"] for r in rows]
    out["budget_ms"] = {"median": _median(budget_ms), "p90": _p90(budget_ms), "max": max(budget_ms, default=0.0)}
    ex = [p["extract_ms"] for p in pages]
    out["extract_ms"] = {"median": _median(ex), "p90": _p90(ex)}
    out["methods"] = _methods(pages)
    return out


def summarise_articles(results: list[dict[str, Any]]) -> dict[str, Any]:
    n = max(len(results), 1)
    return {
        "pages": len(results),
        "precision": sum(r["prf"]["precision"] for r in results) / n,
        "recall": sum(r["prf"]["recall"] for r in results) / n,
        "f1": sum(r["prf"]["f1"] for r in results) / n,
        "methods": _methods(results),
        "extract_ms": {"median": _median([r["extract_ms"] for r in results]), "p90": _p90([r["extract_ms"] for r in results])},
    }


def summarise_wcxb(results: list[dict[str, Any]]) -> dict[str, Any]:
    out = summarise_articles(results)
    out["snippet_pass_rate"] = sum(r["passed"] for r in results) / max(len(results), 1)
    w = [r["snippets"] for r in results]
    out["with_found_rate"] = sum(s["with_found"] for s in w) / max(sum(s["with_total"] for s in w), 1)
    out["without_absent_rate"] = 1 - sum(s["without_found"] for s in w) / max(sum(s["without_total"] for s in w), 1)
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by[r["page_type"]].append(r)
    out["by_type"] = {
        t: {**summarise_articles(rs), "snippet_pass_rate": sum(r["passed"] for r in rs) / len(rs)}
        for t, rs in sorted(by.items(), key=lambda kv: -len(kv[1]))
    }
    return out


# ---------------------------------------------------------------- 10 tabs at once


async def time_ten_tabs(
    browser: PlaywrightBrowser, urls: list[str], questions: list[str], budget: int, progress: Progress
) -> dict[str, Any]:
    """Open TEN_TABS pages as tabs; time `ContextBuilder.build` over all of them.

    Cold: a fresh builder each time (snapshot + extraction + budgeting). Warm: the
    same builder asked a new question (extraction cached by content hash)."""
    task = progress.add_task("10 tabs at once", total=TEN_TAB_REPEATS)
    tabs = await browser.open_tabs(urls[:TEN_TABS])
    try:
        cold, warm, warm_budget, tokens = [], [], [], []
        for i in range(TEN_TAB_REPEATS):
            builder = ContextBuilder(Extractor(), budget_per_tab=budget)
            t0 = time.perf_counter()
            ctx = await builder.build(tabs, questions[i % len(questions)])
            cold.append((time.perf_counter() - t0) * 1000)
            tokens.append(ctx.tokens)
            t0 = time.perf_counter()
            ctx2 = await builder.build(tabs, questions[(i + 1) % len(questions)])
            warm.append((time.perf_counter() - t0) * 1000)
            warm_budget.append(ctx2.budget_ms)
            progress.advance(task)
        ok = sum(isinstance(t, Tab) for t in tabs)
    finally:
        for t in tabs:
            if isinstance(t, Tab):
                await t.close()
    return {
        "tabs": ok,
        "repeats": TEN_TAB_REPEATS,
        "cold_ms_median": _median(cold),
        "warm_ms_median": _median(warm),
        "warm_budget_ms_median": _median(warm_budget),
        "context_tokens_median": _median(tokens),
    }


# ---------------------------------------------------------------- report


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def print_report(result: dict[str, Any], console: Console) -> None:
    budget = result["config"]["budget"]
    for key, label in (("wtq_browser", "headless Chromium"), ("wtq_raw_html", "raw HTML (StaticTab)")):
        w = result.get(key)
        if not w:
            continue
        t = Table(title=f"WTQ answer recall at {budget:,} tokens/tab, {label}: {w['questions']:,} questions, {w['pages']} pages")
        for col in ("context", "recall", "strict recall", "median tokens", "p90 tokens"):
            t.add_column(col, justify="left" if col == "context" else "right")
        for k, name in WTQ_CONFIGS:
            c = w["configs"][k]
            t.add_row(name, _f(c["recall"]), _f(c["recall_strict"]), _n(c["tokens_median"]), _n(c["tokens_p90"]))
        console.print(t)
        s = Table(title=f"chatagent by split ({label})")
        for col in ("split", "questions", "recall", "strict recall", "median tokens"):
            s.add_column(col, justify="left" if col == "split" else "right")
        for split, c in w["splits"].items():
            s.add_row(split, str(c["questions"]), _f(c["recall"]), _f(c["recall_strict"]), _n(c["tokens_median"]))
        console.print(s)
        console.print(
            f"budgeting per question: median {w['budget_ms']['median']:.1f} ms, p90 {w['budget_ms']['p90']:.1f} ms, "
            f"max {w['budget_ms']['max']:.0f} ms; pages by extraction method: {_fmt_methods(w['methods'])}"
        )
    q = Table(title="Extraction quality through headless Chromium (chatagent Extractor, no budget)")
    for col in ("dataset", "pages", "precision", "recall", "F1", "snippet pass", "published trafilatura F1"):
        q.add_column(col, justify="left" if col == "dataset" else "right")
    if a := result.get("aeb"):
        q.add_row("AEB", str(a["pages"]), _f(a["precision"]), _f(a["recall"]), _f(a["f1"]), "", "0.958 (raw HTML)")
    if w := result.get("wcxb"):
        q.add_row("WCXB test, all", str(w["pages"]), _f(w["precision"]), _f(w["recall"]), _f(w["f1"]),
                  _f(w["snippet_pass_rate"]), "0.833 (raw HTML)")
        for ptype, c in w["by_type"].items():
            q.add_row(f"  {ptype}", str(c["pages"]), _f(c["precision"]), _f(c["recall"]), _f(c["f1"]),
                      _f(c["snippet_pass_rate"]), "")
    console.print(q)
    if w := result.get("wcxb"):
        console.print(
            f"WCXB snippets: {w['with_found_rate']:.3f} of 'with' snippets present, "
            f"{w['without_absent_rate']:.3f} of 'without' snippets absent"
        )
    for key, name in (("aeb", "AEB"), ("wcxb", "WCXB")):
        if key in result:
            console.print(f"{name} pages by extraction method: {_fmt_methods(result[key]['methods'])}")
    tt = Table(title="Extraction time")
    for col in ("what", "median ms", "p90 ms"):
        tt.add_column(col, justify="left" if col == "what" else "right")
    for key, name in (("wtq_browser", "WTQ page"), ("aeb", "AEB page"), ("wcxb", "WCXB page")):
        if key in result:
            e = result[key]["extract_ms"]
            tt.add_row(f"extract one {name}", _f(e["median"], 1), _f(e["p90"], 1))
    if ten := result.get("ten_tabs"):
        tt.add_row(f"ContextBuilder.build, {ten['tabs']} tabs, cold", _f(ten["cold_ms_median"], 0), "")
        tt.add_row(f"ContextBuilder.build, {ten['tabs']} tabs, cached extraction", _f(ten["warm_ms_median"], 0), "")
        tt.add_row(f"  of which budgeting {ten['tabs']} tabs", _f(ten["warm_budget_ms_median"], 0), "")
    console.print(tt)


# ---------------------------------------------------------------- main


def _machine() -> dict[str, Any]:
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {"cpus": os.cpu_count(), "memory_gib": round(mem / 2**30, 1), "python": platform.python_version(),
            "platform": platform.platform()}


@asynccontextmanager
async def _browser() -> AsyncIterator[PlaywrightBrowser]:
    browser = await PlaywrightBrowser.launch(extra_args=OFFLINE_ARGS)
    try:
        yield browser
    finally:
        await browser.close()


async def run(
    data_dir: Path, limit: int | None, budget: int, raw_html: bool, console: Console, dump: Path | None = None
) -> dict[str, Any]:
    questions = load_wtq(data_dir, limit)
    aeb = load_aeb(data_dir, limit)
    wcxb = load_wcxb(data_dir, limit)
    by_page: dict[str, list[WtqQuestion]] = defaultdict(list)
    for q in questions:
        by_page[q.page].append(q)
    result: dict[str, Any] = {
        "config": {"budget": budget, "limit": limit, "data_dir": str(data_dir), "load_concurrency": LOAD_CONCURRENCY},
        "machine": _machine(),
    }
    t_start = time.perf_counter()
    workers = max(os.cpu_count() or 1, 1)
    with ProcessPoolExecutor(max_workers=workers) as pool, _progress(console) as progress:
        async with PageServer(data_dir) as server, _browser() as browser:
            result["browser"] = browser._browser.version  # noqa: SLF001 - report what rendered the pages
            wtq_snaps = await load_snapshots(browser, {p: server.url(p) for p in by_page}, progress, "load WTQ pages")
            aeb_snaps = await load_snapshots(browser, {p.id: server.url(p.path) for p in aeb}, progress, "load AEB pages")
            wcxb_snaps = await load_snapshots(browser, {p.id: server.url(p.path) for p in wcxb}, progress, "load WCXB pages")
            ten_urls = [server.url(p) for p in list(by_page)[:TEN_TABS]]
            if len(ten_urls) < TEN_TABS:
                ten_urls += [server.url(p.path) for p in aeb[: TEN_TABS - len(ten_urls)]]
            ten_q = [q.question for q in questions[:TEN_TAB_REPEATS + 1]] or ["What is this page about?"]
            result["ten_tabs"] = await time_ten_tabs(browser, ten_urls, ten_q, budget, progress)
            static = await static_snapshots(data_dir, list(by_page), server) if raw_html else {}
        if dump is not None:  # for tuning offline without reloading the pages
            await asyncio.to_thread(_dump, dump, {"wtq": wtq_snaps, "aeb": aeb_snaps, "wcxb": wcxb_snaps, "static": static})
        result["load_s"] = time.perf_counter() - t_start
        pages = list(by_page)
        wtq = await run_pool(pool, wtq_page, [(wtq_snaps[p], by_page[p], budget) for p in pages], progress, "WTQ, browser")
        result["wtq_browser"] = summarise_wtq(wtq)
        if raw_html:
            raw = await run_pool(pool, wtq_page, [(static[p], by_page[p], budget) for p in pages], progress, "WTQ, raw HTML")
            result["wtq_raw_html"] = summarise_wtq(raw)
        aeb_res = await run_pool(pool, article_page, [(aeb_snaps[p.id], p.article) for p in aeb], progress, "AEB, score")
        result["aeb"] = summarise_articles(aeb_res)
        wcxb_res = await run_pool(pool, wcxb_page, [(wcxb_snaps[p.id], p) for p in wcxb], progress, "WCXB, score")
        result["wcxb"] = summarise_wcxb(wcxb_res)
    result["total_s"] = time.perf_counter() - t_start
    return result


def _dump(path: Path, snapshots: dict[str, Any]) -> None:
    import pickle

    with open(path, "wb") as f:
        pickle.dump(snapshots, f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatagent.bench.context_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--limit", type=int, default=None, help="pages per dataset (evenly spread sample; default: all)")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens per tab (default: 2000)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--no-raw-html", action="store_true", help="skip the raw-HTML (StaticTab) WTQ comparison")
    ap.add_argument("--dump-snapshots", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.data / "wtq" / "questions.tsv").is_file():
        print(f"No evaluation data at {args.data} (expected wtq/, aeb/, wcxb-test/); pass --data DIR.", file=sys.stderr)
        return 2
    err = Console(stderr=True)
    result = asyncio.run(run(args.data, args.limit, args.budget, not args.no_raw_html, err, args.dump_snapshots))
    print_report(result, Console())
    Console().print(f"total {result['total_s']:.0f} s (page loading {result['load_s']:.0f} s)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
