"""Quote fidelity: are the passages an offline answer cites the page's own words?

    python -m benchmarks.citations [--limit N] [--data DIR] [--jobs N] [--out FILE.json]

The realistic side-panel questions and two-tab comparisons
(`../shared/data/realistic`), asked as `benchmarks.offline` asks them (the
`extractive` model, every page served locally and loaded in headless
Chromium, a new conversation per question). Of every passage citation in the
answers (`Citation.block`):

- **verbatim**: its quote occurs in its tab's rendered text (`innerText`),
  whitespace normalised: what a reader finds where the link opens (target 1.00);
- **link**: its link opens its tab's page at a text fragment (`#:~:text=`);
- per question, whether it cites a passage at all, and whether its cited
  quotes hold an accepted answer (the set's scorer, `realistic/check.py`: one
  answer from each page for a comparison), beside whether the answer does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from chatagent.browser.base import Tab, TabFailure
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.events import Citation
from chatagent.runtime import Runtime

from .data import DEFAULT_DATA_DIR, RealisticComparison, RealisticQuestion, load_realistic
from .offline import JOBS, MODEL, _close, _each, _rate, answer_body, ask
from .realistic import scorer
from .report import machine, progress_bar
from .server import PageServer, bench_settings, browser_version, launch_browser
from .stats import finite


def _spaced(text: str) -> str:
    return " ".join(text.split())


async def page_texts(tabs: Sequence[Tab | TabFailure]) -> dict[str, str]:
    """Each tab's rendered text, whitespace normalised, by the label a conversation gives it ("1", "2", …)."""
    out = {}
    for i, tab in enumerate(tabs, 1):
        try:
            out[str(i)] = _spaced((await tab.snapshot()).visible_text) if isinstance(tab, Tab) else ""
        except Exception:  # noqa: BLE001 - a page that cannot be read again has no text to hold a quote
            out[str(i)] = ""
    return out


def cited(citations: Sequence[Citation], texts: dict[str, str]) -> dict[str, Any]:
    """One answer's passage citations, checked against its tabs' rendered texts."""
    passages = [c for c in citations if c.block]
    return {
        "quotes": [c.quote for c in passages],
        "verbatim": [_spaced(c.quote) in texts.get(c.tab_id, "") for c in passages],
        "linked": [":~:text=" in c.url for c in passages],
    }


async def run_quotes(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, data_dir: Path,
    questions: Sequence[RealisticQuestion], comparisons: Sequence[RealisticComparison], progress: Progress,
    jobs: int = JOBS,
) -> list[dict[str, Any]]:
    check = scorer(str(data_dir))
    task = progress.add_task("citations, realistic", total=len(questions) + len(comparisons))
    rows: dict[str, dict[str, Any]] = {}

    async def one(qid: str, kind: str, pages: list[str], question: str, hit: Any) -> None:
        tabs = await browser.open_tabs([site.file_url(data_dir / p) for p in pages])
        try:
            asked = await ask(runtime, tabs, question)
            row = {"id": qid, "kind": kind, "question": question, "answer": asked.answer,
                   **cited(asked.citations, await page_texts(tabs))}
            row["answer_has"] = bool(hit(answer_body(asked.scored)))
            row["quotes_have"] = bool(row["quotes"]) and bool(hit(" \n".join(row["quotes"])))
            rows[qid] = row
            progress.advance(task)
        finally:
            await _close(tabs)

    await _each(list(questions), lambda q: one(q.id, q.kind, [q.page], q.question,
                                                lambda text, q=q: check.hit(text, q.answers)), jobs)
    await _each(list(comparisons), lambda c: one(c.id, "comparison", list(c.pages), c.question,
                                                  lambda text, c=c: check.hit_comparison(text, c.answers_per_page)), jobs)
    return [rows[q.id] for q in questions] + [rows[c.id] for c in comparisons]


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def group(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        verbatim = [v for r in rs for v in r["verbatim"]]
        return {
            "questions": len(rs),
            "citing_passages": _rate(bool(r["quotes"]) for r in rs),
            "quotes": len(verbatim),
            "verbatim": _rate(verbatim),
            "linked": _rate(v for r in rs for v in r["linked"]),
            "quotes_have": _rate(r["quotes_have"] for r in rs),
            "answer_has": _rate(r["answer_has"] for r in rs),
        }

    return {"questions": group([r for r in rows if r["kind"] != "comparison"]),
            "comparisons": group([r for r in rows if r["kind"] == "comparison"]),
            "all": group(rows)}


HEAD = ["questions", "n", "citing a passage", "quotes", "verbatim on the page", "linked",
        "cited quotes hold an answer", "answer holds an answer"]


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.3f}"

    names = {"questions": "single page", "comparisons": "two-tab comparisons", "all": "all"}
    return [[names[k], str(g["questions"]), f(g["citing_passages"]), str(g["quotes"]), f(g["verbatim"]), f(g["linked"]),
             f(g["quotes_have"]), f(g["answer_has"])] for k, g in summary.items()]


async def bench_citations(
    data_dir: Path, questions: Sequence[RealisticQuestion], comparisons: Sequence[RealisticComparison],
    browser: PlaywrightBrowser, site: PageServer, progress: Progress,
) -> dict[str, Any]:
    """`chatagent bench`'s part: the figures over the questions given, on its browser and page server."""
    async with Runtime(bench_settings(model=MODEL)) as runtime:
        rows = await run_quotes(runtime, browser, site, data_dir, questions, comparisons, progress)
    return {"summary": summarise(rows), "rows": rows}


async def run(data_dir: Path, limit: int | None, jobs: int, console: Console) -> dict[str, Any]:
    questions, comparisons = load_realistic(data_dir, limit)
    with progress_bar(console) as progress, PageServer() as site:
        async with launch_browser() as browser, Runtime(bench_settings(model=MODEL)) as runtime:
            rows = await run_quotes(runtime, browser, site, data_dir, questions, comparisons, progress, jobs)
            version = browser_version(browser)
    return {"config": {"model": MODEL, "data_dir": str(data_dir), "limit": limit, "browser": version},
            "summary": summarise(rows), "rows": rows, "machine": machine()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.citations", description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, metavar="N", help="N questions and N comparisons (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--jobs", type=int, default=JOBS, metavar="N", help=f"questions asked at once (default {JOBS})")
    ap.add_argument("--out", type=Path, default=Path("bench-results/citations.json"),
                    help="write every figure, answer and quote as JSON here (default: bench-results/citations.json)")
    args = ap.parse_args(argv)
    if not (args.data / "realistic" / "questions.jsonl").is_file():
        ap.error(f"no realistic questions under {args.data}; pass --data DIR")
    result = asyncio.run(run(args.data, args.limit, args.jobs, Console(stderr=True)))
    table = Table("", *HEAD[1:], title="Quote fidelity, offline answers to the realistic questions")
    for row in table_rows(result["summary"]):
        table.add_row(*row)
    Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(finite(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
