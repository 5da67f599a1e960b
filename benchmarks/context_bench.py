"""Context benchmark: what the model gets to see, how much it costs, how fast.

    python -m benchmarks.context_bench [--data DIR] [--limit N] [--budget 2000] [--out FILE.json] [--hotpot]

1. WTQ answer recall at a per-tab token budget: every page is served from a
   local HTTP server (gunzipped on the fly), loaded once in headless Chromium
   through `PlaywrightBrowser`, and all of its questions are asked against that
   snapshot, for chatagent (question-aware) and the baselines (chatagent's own
   extraction head-truncated, trafilatura head-truncated, trafilatura whole,
   the rendered page text whole). The same
   is done on the raw HTML (`StaticTab`, no browser) to compare with issue 2.
2. Extraction quality through the browser: AEB and WCXB word F1 of chatagent's
   `Extractor` output (no budget), WCXB per page type and its snippet checks.
3. Extraction time per page, and `ContextBuilder.build` over 10 tabs at once.
4. With `--hotpot`, multi-tab cost on HotpotQA comparison questions: every
   paragraph rendered as its own page and opened as a tab (the two gold pages
   plus the distractors), the context built for the question over all of them,
   against sending the text of every tab whole.

Pages load a few at a time; all CPU work (extraction, budgeting, scoring) runs in
a process pool after the loads, so the timings are not inflated by the renderer.
Progress goes to stderr; the tables to stdout; everything to the JSON file.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import trafilatura
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from chatagent.browser.base import PageSnapshot, Tab
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.browser.static import StaticTab
from chatagent.budget import fit_text
from chatagent.context import ContextBuilder
from chatagent.extraction import Extractor, extract_snapshot
from chatagent.tokens import count_tokens

from .data import (
    DEFAULT_DATA_DIR, AebPage, HotpotQuestion, WcxbPage, WtqQuestion, load_aeb, load_hotpot, load_wcxb, load_wtq,
    read_html,
)
from .report import HOTPOT_HEAD, hotpot_rows, machine, progress_bar, write_json
from .scoring import NormalizedText, answer_in_context, snippet_check, word_prf
from .server import PageServer, browser_version, launch_browser
from .stats import median, quantile

T = TypeVar("T")

DEFAULT_BUDGET = 2000
LOAD_CONCURRENCY = 4  # tabs loading at once: enough to hide latency, few enough for 2 cores
TEN_TABS = 10
TEN_TAB_REPEATS = 5
WTQ_CONFIGS = (
    ("chatagent", "chatagent (question-aware)"),
    ("chatagent_nobudget", "chatagent, no budget"),
    ("chatagent_head", "chatagent extraction, head-truncated"),
    ("trafilatura_head", "trafilatura, head-truncated"),
    ("trafilatura_full", "trafilatura, no budget"),
    ("full_text", "full page text, no budget"),
)


def process_pool() -> ProcessPoolExecutor:
    """One worker per core. Spawned, not forked: the parent has Playwright's, the
    servers' and asyncio's threads running, and a fork copies their locks mid-use."""
    return ProcessPoolExecutor(max_workers=max(os.cpu_count() or 1, 1), mp_context=multiprocessing.get_context("spawn"))


# ---------------------------------------------------------------- loading pages


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


async def static_snapshots(data_dir: Path, paths: Sequence[str], site: PageServer) -> dict[str, PageSnapshot]:
    """Raw-HTML snapshots (no renderer): what the issue's baselines were measured on."""

    async def one(path: str) -> tuple[str, PageSnapshot]:
        html = await asyncio.to_thread(read_html, data_dir / path)
        return path, await StaticTab("1", site.file_url(data_dir / path), html).snapshot()

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
    body = asyncio.run(whole.build([], None, snapshots=[snapshot])).tabs[0].text
    traf = _baseline_trafilatura(snapshot.html)
    texts = {
        "chatagent_nobudget": body,
        # Our own extraction cut at the start: what question-aware selection adds over cutting.
        "chatagent_head": fit_text(body, budget).text,
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
    return median(xs, default=0.0)


def _p90(xs: Sequence[float]) -> float:
    return quantile(xs, 0.9, default=0.0)


def _methods(results: list[dict[str, Any]]) -> dict[str, int]:
    """Pages per extraction method: how often each supplement kicked in."""
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        counts[r["method"]] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _fmt_methods(methods: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in methods.items())


def _recall(rows: list[dict[str, Any]], key: str, split: str) -> float:
    vals = [r[key][0] for r in rows if r["split"] == split]
    return sum(vals) / max(len(vals), 1)


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
            "tokens_mean": statistics.fmean(v[2] for v in vals) if vals else 0.0,
        }
    for split in ("tune", "held-out"):
        vals = [r["chatagent"] for r in rows if r["split"] == split]
        out["splits"][split] = {
            "questions": len(vals),
            "recall": sum(v[0] for v in vals) / max(len(vals), 1),
            "recall_strict": sum(v[1] for v in vals) / max(len(vals), 1),
            "tokens_median": _median([v[2] for v in vals]),
            # What any selection could reach on this half: the extracted text and the page's text, whole.
            "recall_no_budget": _recall(rows, "chatagent_nobudget", split),
            "recall_full_text": _recall(rows, "full_text", split),
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
        for col in ("split", "questions", "recall", "strict recall", "median tokens", "no budget", "page text"):
            s.add_column(col, justify="left" if col == "split" else "right")
        for split, c in w["splits"].items():
            s.add_row(
                split, str(c["questions"]), _f(c["recall"]), _f(c["recall_strict"]), _n(c["tokens_median"]),
                _f(c["recall_no_budget"]), _f(c["recall_full_text"]),
            )
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
    if h := result.get("hotpot"):
        ht = Table(title=f"HotpotQA multi-tab: {h['questions']} questions, {h['tabs_median']:.0f} tabs each")
        for col in HOTPOT_HEAD:
            ht.add_column(col, justify="left" if col == "context" else "right")
        for row in hotpot_rows(h):
            ht.add_row(*row)
        console.print(ht)
        g = h["gold_tabs"]
        console.print(
            f"gold paragraphs in the data: both {g['2']}, one {g['1']}, none {g['0']} questions; "
            f"gold paragraphs' words kept: {h['gold_word_recall']:.3f}; build over all tabs, cold: "
            f"median {h['build_ms']['median']:.0f} ms, p90 {h['build_ms']['p90']:.0f} ms"
        )


# ---------------------------------------------------------------- the datasets, end to end


def group_by_page(questions: Sequence[WtqQuestion]) -> dict[str, list[WtqQuestion]]:
    by_page: dict[str, list[WtqQuestion]] = defaultdict(list)
    for q in questions:
        by_page[q.page].append(q)
    return dict(by_page)


async def bench_wtq(
    data_dir: Path, questions: Sequence[WtqQuestion], budget: int, browser: PlaywrightBrowser, site: PageServer,
    pool: Executor, progress: Progress,
) -> dict[str, Any]:
    """WTQ answer recall and tokens for every configuration, through the browser."""
    by_page = group_by_page(questions)
    snaps = await load_snapshots(browser, {p: site.file_url(data_dir / p) for p in by_page}, progress, "load WTQ pages")
    pages = await run_pool(pool, wtq_page, [(snaps[p], qs, budget) for p, qs in by_page.items()], progress, "WTQ, score")
    return summarise_wtq(pages)


async def bench_extraction(
    data_dir: Path, aeb: Sequence[AebPage], wcxb: Sequence[WcxbPage], browser: PlaywrightBrowser, site: PageServer,
    pool: Executor, progress: Progress,
) -> dict[str, Any]:
    """AEB and WCXB word F1 of the browser snapshot's extraction (no budget)."""
    out: dict[str, Any] = {}
    if aeb:
        snaps = await load_snapshots(browser, {p.id: site.file_url(data_dir / p.path) for p in aeb}, progress, "load AEB pages")
        res = await run_pool(pool, article_page, [(snaps[p.id], p.article) for p in aeb], progress, "AEB, score")
        out["aeb"] = summarise_articles(res)
    if wcxb:
        snaps = await load_snapshots(browser, {p.id: site.file_url(data_dir / p.path) for p in wcxb}, progress, "load WCXB pages")
        res = await run_pool(pool, wcxb_page, [(snaps[p.id], p) for p in wcxb], progress, "WCXB, score")
        out["wcxb"] = summarise_wcxb(res)
    return out


# ---------------------------------------------------------------- HotpotQA: many tabs, one question


async def hotpot_question(
    q: HotpotQuestion, budget: int, browser: PlaywrightBrowser, site: PageServer
) -> dict[str, Any]:
    """Open every paragraph of the question as its own tab (the two gold pages and the
    distractors), build the context for the question as the agent would, and compare
    it with the text of every tab, sent whole."""
    urls = [site.page_url(f"hotpot/{q.id}/{i}.html", p.html) for i, p in enumerate(q.pages)]
    tabs = await browser.open_tabs(urls)
    try:
        t0 = time.perf_counter()
        ctx = await ContextBuilder(Extractor(), budget_per_tab=budget).build(tabs, q.question)
        build_ms = (time.perf_counter() - t0) * 1000
        full = [await t.snapshot() if isinstance(t, Tab) else None for t in tabs]
    finally:
        for t in tabs:
            if isinstance(t, Tab):
                await t.close()
    gold = [i for i, p in enumerate(q.pages) if p.title in q.gold_titles]
    full_texts = [s.visible_text if s else "" for s in full]
    ours = "\n\n".join(t.text for t in ctx.tabs)
    row: dict[str, Any] = {
        "id": q.id,
        "tabs": len(tabs),
        "readable_tabs": sum(t.ok for t in ctx.tabs),
        "build_ms": build_ms,
        "yes_no": q.is_yes_no,
        # The redistributed sample does not always carry the gold paragraphs in `context`.
        "gold_tabs": len(gold),
        "tokens": {
            "chatagent": ctx.tokens,
            "full_text": sum(count_tokens(t) for t in full_texts),
            "gold_only": sum(count_tokens(full_texts[i]) for i in gold),
        },
        # How much of the two gold paragraphs survives into what the model is sent.
        "gold_word_recall": statistics.fmean(word_prf(ctx.tabs[i].text, full_texts[i]).recall for i in gold) if gold else None,
    }
    if not q.is_yes_no:  # "yes"/"no" is never in the pages; an entity answer should be
        row["answer_in"] = {
            "chatagent": answer_in_context(q.answer, ours),
            "full_text": answer_in_context(q.answer, "\n\n".join(full_texts)),
            "gold_only": answer_in_context(q.answer, "\n\n".join(full_texts[i] for i in gold)),
        }
    return row


def summarise_hotpot(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("chatagent", "full_text", "gold_only")
    answered = [r["answer_in"] for r in rows if "answer_in" in r]
    gold = [r["gold_word_recall"] for r in rows if r["gold_word_recall"] is not None]
    return {
        "questions": len(rows),
        "yes_no": sum(r["yes_no"] for r in rows),
        "tabs_median": _median([r["tabs"] for r in rows]),
        "gold_tabs": {str(n): sum(r["gold_tabs"] == n for r in rows) for n in (2, 1, 0)},
        "tokens_median": {k: _median([r["tokens"][k] for r in rows]) for k in keys},
        "tokens_p90": {k: _p90([r["tokens"][k] for r in rows]) for k in keys},
        "answer_recall": {k: (sum(a[k] for a in answered) / len(answered)) if answered else None for k in keys},
        "gold_word_recall": statistics.fmean(gold) if gold else 0.0,
        "build_ms": {"median": _median([r["build_ms"] for r in rows]), "p90": _p90([r["build_ms"] for r in rows])},
        "rows": rows,
    }


async def bench_hotpot(
    questions: Sequence[HotpotQuestion], budget: int, browser: PlaywrightBrowser, site: PageServer, progress: Progress
) -> dict[str, Any]:
    """One question at a time, so each build's time is that of its own tabs alone."""
    task = progress.add_task("HotpotQA, multi-tab", total=len(questions))
    rows = []
    for q in questions:
        rows.append(await hotpot_question(q, budget, browser, site))
        progress.advance(task)
    return summarise_hotpot(rows)


# ---------------------------------------------------------------- main


async def run(
    data_dir: Path, limit: int | None, budget: int, raw_html: bool, console: Console, dump: Path | None = None,
    hotpot: bool = False,
) -> dict[str, Any]:
    questions = load_wtq(data_dir, limit)
    aeb = load_aeb(data_dir, limit)
    wcxb = load_wcxb(data_dir, limit)
    by_page = group_by_page(questions)
    result: dict[str, Any] = {
        "config": {"budget": budget, "limit": limit, "data_dir": str(data_dir), "load_concurrency": LOAD_CONCURRENCY},
        "machine": machine(),
    }
    t_start = time.perf_counter()
    with process_pool() as pool, progress_bar(console) as progress, PageServer() as site:
        async with launch_browser() as browser:
            result["browser"] = browser_version(browser)
            if dump is not None:  # for tuning offline without reloading the pages
                urls = {"wtq": {p: data_dir / p for p in by_page}, "aeb": {p.id: data_dir / p.path for p in aeb},
                        "wcxb": {p.id: data_dir / p.path for p in wcxb}}
                snaps = {k: await load_snapshots(browser, {i: site.file_url(f) for i, f in v.items()}, progress, f"dump {k}")
                         for k, v in urls.items()}
                snaps["static"] = await static_snapshots(data_dir, list(by_page), site) if raw_html else {}
                await asyncio.to_thread(_dump, dump, snaps)
            result["wtq_browser"] = await bench_wtq(data_dir, questions, budget, browser, site, pool, progress)
            result.update(await bench_extraction(data_dir, aeb, wcxb, browser, site, pool, progress))
            ten_urls = [site.file_url(data_dir / p) for p in list(by_page)[:TEN_TABS]]
            if len(ten_urls) < TEN_TABS:
                ten_urls += [site.file_url(data_dir / p.path) for p in aeb[: TEN_TABS - len(ten_urls)]]
            ten_q = [q.question for q in questions[:TEN_TAB_REPEATS + 1]] or ["What is this page about?"]
            result["ten_tabs"] = await time_ten_tabs(browser, ten_urls, ten_q, budget, progress)
            if hotpot:
                result["hotpot"] = await bench_hotpot(load_hotpot(data_dir, limit), budget, browser, site, progress)
        if raw_html:
            static = await static_snapshots(data_dir, list(by_page), site)
            pages = list(by_page)
            raw = await run_pool(pool, wtq_page, [(static[p], by_page[p], budget) for p in pages], progress, "WTQ, raw HTML")
            result["wtq_raw_html"] = summarise_wtq(raw)
    result["total_s"] = time.perf_counter() - t_start
    return result


def _dump(path: Path, snapshots: dict[str, Any]) -> None:
    import pickle

    with open(path, "wb") as f:
        pickle.dump(snapshots, f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.context_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--limit", type=int, default=None, help="pages per dataset (evenly spread sample; default: all)")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens per tab (default: 2000)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--no-raw-html", action="store_true", help="skip the raw-HTML (StaticTab) WTQ comparison")
    ap.add_argument("--hotpot", action="store_true", help="also the multi-tab HotpotQA comparison")
    ap.add_argument("--dump-snapshots", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.data / "wtq" / "questions.tsv").is_file():
        print(f"No evaluation data at {args.data} (expected wtq/, aeb/, wcxb-test/); pass --data DIR.", file=sys.stderr)
        return 2
    err = Console(stderr=True)
    result = asyncio.run(run(args.data, args.limit, args.budget, not args.no_raw_html, err, args.dump_snapshots, args.hotpot))
    print_report(result, Console())
    Console().print(f"total {result['total_s']:.0f} s")
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
