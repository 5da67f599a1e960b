"""PDF benchmark: the same WikiTableQuestions pages read as HTML and printed to PDF.

    python -m benchmarks.pdf_bench [--data DIR] [--pages 100] [--budget 2000] [--out FILE.json]

1. `--pages` WTQ pages, evenly spread over the sorted page ids (`load_wtq`'s
   sample: the same pages on every run), with all of their questions.
2. Each page is served from 127.0.0.1 and opened through `PlaywrightBrowser`,
   its snapshot taken (the HTML side), then printed by Chromium (`page.pdf()`,
   A4, 1 cm margins as Chromium's print dialog sets them) into a temporary
   directory.
3. Each PDF is served from 127.0.0.1 as application/pdf and opened the way a
   user's PDF tab is (`open_tabs`, snapshot: the bytes fetched again).
4. In a process pool, after all the loads (as in `context_bench`): both
   snapshots through `context_bench.wtq_page`, the product's path (extraction,
   then `ContextBuilder.build` per question at the budget, scored with
   `answer_in_context`), and the PDFs' full text read by pypdfium2 (what
   `chatagent.pdf_child` does) and by pypdf, timed and scored.

Pages load one at a time, so each load's time is its own. Progress goes to
stderr; the tables to stdout; everything, per page and per question, to the JSON file.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pypdf
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from chatagent import pdf
from chatagent.browser.base import PageSnapshot, Tab
from chatagent.browser.playwright import PlaywrightBrowser, PlaywrightTab

from .context_bench import DEFAULT_BUDGET, group_by_page, process_pool, run_pool, summarise_wtq, wtq_page
from .data import DEFAULT_DATA_DIR, WtqQuestion, load_wtq
from .report import describe_machine, machine, progress_bar, write_json
from .scoring import NormalizedText, answer_in_context
from .server import PageServer, browser_version, launch_browser
from .stats import median, quantile

DEFAULT_PAGES = 100
GOAL_GAP = 0.05  # PDF recall at the budget must be within this of the HTML's
PAPER = "A4"
# Chromium's own default margins (its print dialog, DevTools' printToPDF): 1 cm. page.pdf() alone prints with none.
MARGIN = {side: "1cm" for side in ("top", "right", "bottom", "left")}
# wtq_page's configurations that mean something for a PDF (the others read the HTML).
CONFIGS = (("chatagent", "at the budget"), ("chatagent_nobudget", "whole text, no budget"))


# ---------------------------------------------------------------- serving and loading


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@contextmanager
def serve_dir(root: Path) -> Iterator[str]:
    """Serve `root` on 127.0.0.1 from a background thread; yields its base URL.
    The stdlib handler sends a .pdf as application/pdf, which is what makes a tab a PDF tab."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietFiles, directory=str(root)))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="bench-pdfs", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


async def open_and_snapshot(browser: PlaywrightBrowser, url: str) -> tuple[Tab | None, PageSnapshot, float]:
    """Open `url` as a tab and snapshot it, as chatagent does; the time of both.
    A page that fails gives an empty snapshot (scored as nothing found) and no tab."""
    t0 = time.perf_counter()
    [tab] = await browser.open_tabs([url])
    if not isinstance(tab, Tab):
        return None, PageSnapshot(tab_id=tab.tab_id, url=url, notes=[tab.message]), _ms(t0)
    try:
        snap = await tab.snapshot()
    except Exception as exc:  # a page that crashed the renderer or could not be fetched again
        snap = PageSnapshot(tab_id=tab.tab_id, url=url, notes=[str(exc)])
    return tab, snap, _ms(t0)


def pdf_name(page: str) -> str:
    """The printed page's file name: "wtq/pages/203-page__733.html.gz" → "203-page__733.pdf"."""
    return Path(page).name.removesuffix(".gz").removesuffix(".html") + ".pdf"


async def load_html_and_print(
    browser: PlaywrightBrowser, urls: dict[str, str], out_dir: Path, progress: Progress
) -> tuple[dict[str, PageSnapshot], dict[str, dict[str, float]]]:
    """Each HTML page's snapshot, and the page printed to `out_dir`; the time of both per page."""
    task = progress.add_task("HTML: open, snapshot, print", total=len(urls))
    snaps: dict[str, PageSnapshot] = {}
    times: dict[str, dict[str, float]] = {}
    for page, url in urls.items():
        tab, snaps[page], open_ms = await open_and_snapshot(browser, url)
        times[page] = {"html_open_ms": open_ms}
        if tab is not None:  # a page that did not open has no PDF: its URL answers 404, scored as nothing found
            try:
                if isinstance(tab, PlaywrightTab):  # always, from a PlaywrightBrowser
                    t0 = time.perf_counter()
                    data = await tab.page.pdf(format=PAPER, margin=MARGIN)
                    times[page]["print_ms"] = _ms(t0)
                    (out_dir / pdf_name(page)).write_bytes(data)
            finally:
                await tab.close()
        progress.advance(task)
    return snaps, times


async def load_pdfs(
    browser: PlaywrightBrowser, urls: dict[str, str], progress: Progress
) -> tuple[dict[str, PageSnapshot], dict[str, float]]:
    """Each PDF opened as a tab and snapshotted (its bytes fetched); the time per PDF."""
    task = progress.add_task("PDF: open, snapshot", total=len(urls))
    snaps: dict[str, PageSnapshot] = {}
    times: dict[str, float] = {}
    for page, url in urls.items():
        tab, snaps[page], times[page] = await open_and_snapshot(browser, url)
        if tab is not None:
            await tab.close()
        progress.advance(task)
    return snaps, times


# ---------------------------------------------------------------- the two PDF libraries (process pool)


def _pdfium_pages(data: bytes) -> list[str]:
    doc = pdf.open_doc(data)
    try:
        return [pdf.page_text(doc, i) for i in range(len(doc))]
    finally:
        doc.close()


def _pypdf_pages(data: bytes) -> list[str]:
    return [p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages]


LIBRARIES: tuple[tuple[str, Callable[[bytes], list[str]]], ...] = (
    ("pypdfium2", _pdfium_pages),
    ("pypdf", _pypdf_pages),
)


def compare_libraries(data: bytes, questions: list[WtqQuestion]) -> dict[str, Any]:
    """One PDF's full text by each library: time, size, and which questions' answers it holds."""
    out: dict[str, Any] = {}
    for name, read in LIBRARIES:
        t0 = time.perf_counter()
        pages = read(data) if data else []
        ms = _ms(t0)
        text = "\n".join(pages)
        norm = NormalizedText(text)
        out[name] = {
            "ms": ms,
            "pages": len(pages),
            "chars": len(text),
            "hits": [[answer_in_context(q.answers, norm), answer_in_context(q.answers, norm, whole_words=True)]
                     for q in questions],
        }
    return out


# ---------------------------------------------------------------- aggregation


def _median(xs: Sequence[float]) -> float:
    return median(xs, default=0.0)


def _p90(xs: Sequence[float]) -> float:
    return quantile(xs, 0.9, default=0.0)


def _timing(xs: Sequence[float]) -> dict[str, float]:
    return {"median": _median(xs), "p90": _p90(xs), "total": sum(xs)}


def _kept(summary: dict[str, Any]) -> dict[str, Any]:
    """`summarise_wtq`'s figures without the configurations that read only the HTML."""
    return {**summary, "configs": {k: summary["configs"][k] for k, _ in CONFIGS}}


def question_rows(
    html: list[dict[str, Any]], pdfs: list[dict[str, Any]], libs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each question's [found, found strictly, tokens] per configuration, HTML and PDF side by
    side, and [found, found strictly] in each library's full text."""
    out = []
    for h, p, lib in zip(html, pdfs, libs):
        for i, (hr, pr) in enumerate(zip(h["rows"], p["rows"])):
            out.append({"id": hr["id"], "page": h["page"], "split": hr["split"],
                        **{f"{side}_{k}": r[k] for side, r in (("html", hr), ("pdf", pr)) for k, _ in CONFIGS},
                        **{name: lib[name]["hits"][i] for name, _ in LIBRARIES}})
    return out


def losses(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Questions whose answer HTML keeps at the budget and PDF does not, by where it went:
    not in the PDF's text at all (printing or extraction) or there but not selected."""
    lost = [r for r in rows if r["html_chatagent"][0] and not r["pdf_chatagent"][0]]
    return {
        "html_only": len(lost),
        "pdf_only": sum(r["pdf_chatagent"][0] and not r["html_chatagent"][0] for r in rows),
        "lost_not_in_pdf_text": [r["id"] for r in lost if not r["pdf_chatagent_nobudget"][0]],
        "lost_not_selected": [r["id"] for r in lost if r["pdf_chatagent_nobudget"][0]],
    }


def summarise_libraries(results: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for name, _ in LIBRARIES:
        rs = [r[name] for r in results]
        hits = [h for r in rs for h in r["hits"]]
        out[name] = {
            "ms_per_page": _median([r["ms"] / r["pages"] for r in rs if r["pages"]]),
            "total_s": sum(r["ms"] for r in rs) / 1000,
            "pages": sum(r["pages"] for r in rs),
            "chars": sum(r["chars"] for r in rs),
            "recall": sum(h[0] for h in hits) / max(len(hits), 1),
            "recall_strict": sum(h[1] for h in hits) / max(len(hits), 1),
        }
    return out


def summarise(
    by_page: dict[str, list[WtqQuestion]], html: list[dict[str, Any]], pdfs: list[dict[str, Any]],
    libs: list[dict[str, Any]], times: dict[str, dict[str, float]], sizes: dict[str, int],
) -> dict[str, Any]:
    rows = question_rows(html, pdfs, libs)
    return {
        "pages": len(by_page),
        "questions": len(rows),
        "html": _kept(summarise_wtq(html)),
        "pdf": _kept(summarise_wtq(pdfs)),
        "losses": losses(rows),
        "libraries": summarise_libraries(libs),
        "time_ms": {k: _timing([t[k] for t in times.values() if k in t]) for k in ("html_open_ms", "print_ms", "pdf_open_ms")},
        "pdf_bytes_median": _median(list(sizes.values())),
        "pdf_pages_median": _median([r["pypdfium2"]["pages"] for r in libs]),
        "per_page": [
            {"page": p, **times[p], "pdf_bytes": sizes.get(p, 0), "html_extract_ms": h["extract_ms"],
             "pdf_extract_ms": d["extract_ms"], "libraries": {k: {kk: v for kk, v in lib[k].items() if kk != "hits"}
                                                              for k, _ in LIBRARIES}}
            for p, h, d, lib in zip(by_page, html, pdfs, libs)
        ],
        "rows": rows,
    }


# ---------------------------------------------------------------- report


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _table(title: str, head: Sequence[str]) -> Table:
    t = Table(title=title)
    for i, col in enumerate(head):
        t.add_column(col, justify="left" if i == 0 else "right")
    return t


def print_report(result: dict[str, Any], console: Console) -> None:
    s, budget = result["summary"], result["config"]["budget"]
    html, pdfs = s["html"], s["pdf"]
    t = _table(f"WTQ answer recall, HTML vs PDF: {s['questions']:,} questions, {s['pages']} pages",
               ("context", "questions", "HTML", "PDF", "PDF − HTML", "HTML strict", "PDF strict"))
    for key, label in CONFIGS:
        h, p = html["configs"][key], pdfs["configs"][key]
        label = f"{budget:,} tokens" if key == "chatagent" else label
        t.add_row(label, _n(s["questions"]), _f(h["recall"]), _f(p["recall"]), f"{p['recall'] - h['recall']:+.3f}",
                  _f(h["recall_strict"]), _f(p["recall_strict"]))
        if key == "chatagent":
            for split in ("tune", "held-out"):
                hs, ps = html["splits"][split], pdfs["splits"][split]
                t.add_row(f"  {split}", _n(hs["questions"]), _f(hs["recall"]), _f(ps["recall"]),
                          f"{ps['recall'] - hs['recall']:+.3f}", _f(hs["recall_strict"]), _f(ps["recall_strict"]))
    console.print(t)
    gap = html["configs"]["chatagent"]["recall"] - pdfs["configs"]["chatagent"]["recall"]
    lost = s["losses"]
    console.print(
        f"goal (PDF within {GOAL_GAP} of HTML at {budget:,} tokens): {'met' if gap <= GOAL_GAP else 'NOT met'}, "
        f"gap {gap:+.3f}. Answers kept by HTML only: {lost['html_only']} (not in the PDF's text "
        f"{len(lost['lost_not_in_pdf_text'])}, in it but not selected {len(lost['lost_not_selected'])}); "
        f"by PDF only: {lost['pdf_only']}"
    )
    k = _table("Tokens sent per question", ("context", "HTML median", "HTML p90", "PDF median", "PDF p90"))
    for key, label in CONFIGS:
        h, p = html["configs"][key], pdfs["configs"][key]
        k.add_row(label, _n(h["tokens_median"]), _n(h["tokens_p90"]), _n(p["tokens_median"]), _n(p["tokens_p90"]))
    console.print(k)
    tm = _table("Time per page", ("step", "median ms", "p90 ms", "total s"))
    for key, label in (("html_open_ms", "HTML: open_tabs + snapshot"), ("print_ms", f"print to PDF (page.pdf(), {PAPER})"),
                       ("pdf_open_ms", "PDF: open_tabs + snapshot (bytes fetched)")):
        x = s["time_ms"][key]
        tm.add_row(label, _f(x["median"], 0), _f(x["p90"], 0), _f(x["total"] / 1000, 1))
    for side, label in (("html", "HTML: extraction"), ("pdf", "PDF: extraction (pypdfium2 + passages)")):
        x = s[side]["extract_ms"]
        tm.add_row(label, _f(x["median"], 1), _f(x["p90"], 1), "")
    for side, label in (("html", "HTML: budgeting per question"), ("pdf", "PDF: budgeting per question")):
        x = s[side]["budget_ms"]
        tm.add_row(label, _f(x["median"], 1), _f(x["p90"], 1), "")
    console.print(tm)
    console.print(f"PDFs: median {s['pdf_bytes_median'] / 1000:,.0f} kB, {s['pdf_pages_median']:g} pages")
    lt = _table(f"PDF libraries, full text of the {s['pages']} PDFs",
                ("library", "median ms/page", "total s", "pages", "characters", "answer recall", "strict"))
    for name, x in s["libraries"].items():
        lt.add_row(name, _f(x["ms_per_page"], 2), _f(x["total_s"], 2), _n(x["pages"]), _n(x["chars"]),
                   _f(x["recall"]), _f(x["recall_strict"]))
    console.print(lt)
    console.print(f"machine: {describe_machine({**result['machine'], 'browser': result['browser']})}; total {result['total_s']:.0f} s")


# ---------------------------------------------------------------- main


async def run(data_dir: Path, pages: int, budget: int, console: Console) -> dict[str, Any]:
    by_page = group_by_page(load_wtq(data_dir, pages))
    start_machine = machine()
    result: dict[str, Any] = {
        "config": {"budget": budget, "pages": pages, "data_dir": str(data_dir), "paper": PAPER, "margin": MARGIN["top"]},
    }
    t_start = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="pdf-bench-") as tmp, process_pool() as pool,
        progress_bar(console) as progress, PageServer() as site, serve_dir(Path(tmp)) as pdf_base,
    ):
        async with launch_browser() as browser:
            result["browser"] = browser_version(browser)
            urls = {p: site.file_url(data_dir / p) for p in by_page}
            html_snaps, times = await load_html_and_print(browser, urls, Path(tmp), progress)
            pdf_urls = {p: f"{pdf_base}/{quote(pdf_name(p))}" for p in by_page}
            pdf_snaps, pdf_times = await load_pdfs(browser, pdf_urls, progress)
        for p, ms in pdf_times.items():
            times[p]["pdf_open_ms"] = ms
        jobs = list(by_page.items())
        html = await run_pool(pool, wtq_page, [(html_snaps[p], qs, budget) for p, qs in jobs], progress, "HTML, score")
        pdfs = await run_pool(pool, wtq_page, [(pdf_snaps[p], qs, budget) for p, qs in jobs], progress, "PDF, score")
        libs = await run_pool(pool, compare_libraries, [(pdf_snaps[p].pdf, qs) for p, qs in jobs], progress,
                              "PDF libraries")
    sizes = {p: len(s.pdf) for p, s in pdf_snaps.items()}
    result["summary"] = summarise(by_page, html, pdfs, libs, times, sizes)
    result["machine"] = {**machine(), "loadavg_at_start": start_machine["loadavg"]}
    result["total_s"] = time.perf_counter() - t_start
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.pdf_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="WTQ pages (evenly spread sample; default: 100)")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens per tab (default: 2000)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if not (args.data / "wtq" / "questions.tsv").is_file():
        print(f"No WTQ data at {args.data}/wtq; pass --data DIR.", file=sys.stderr)
        return 2
    result = asyncio.run(run(args.data, args.pages, args.budget, Console(stderr=True)))
    print_report(result, Console())
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
