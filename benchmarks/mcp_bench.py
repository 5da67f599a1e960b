"""MCP benchmark: what an agent pays to read a page through `chatagent mcp`,
against the page representation Playwright MCP returns, and what the protocol
itself costs.

    python -m benchmarks.mcp_bench [--pages 20] [--reps 15] [--budget 2000] [--out FILE.json]

Setup: WikiTableQuestions pages served on 127.0.0.1 and opened in one headless
Chromium (third-party hosts unresolvable, as in every benchmark here) with a
remote-debugging port. The real server (`python -m chatagent mcp --cdp …`, the
SDK's client over stdio) and an in-process `Runtime` both attach to that
Chromium, so both read the same pages in the same browser.

- **Tokens and recall** per page and question: `read_pages(url, question,
  budget)` against Playwright MCP's snapshot of the same page (Playwright's
  ARIA snapshot, `page.locator("body").aria_snapshot()`), whole and cut to the
  same budget (its head, as a client truncating it would). Recall: the share
  of questions whose answer is in the text (the same matcher as `chatagent bench`).
- **Round-trip overhead**: `read_pages` through the MCP server minus the same
  call on the runtime directly (`mcp_server.PageTools`), interleaved, p50 over
  `reps`: warm (a tab already open, by its `list_tabs` id, unchanged: its
  extraction is reused) and cold (a page no cache has seen, `?fresh=N`, opened
  for the call: opening the tab dominates, so its overhead is within noise).
- **Schema size**: the tokens of the tool list the server returns, which every
  client sends with every request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from chatagent.tokens import count_tokens, truncate_to_tokens

from .data import DEFAULT_DATA_DIR, load_wtq, sample
from .scoring import answer_in_context
from .server import OFFLINE_ARGS, PageServer, bench_settings, debuggable_chromium, fresh_url
from .stats import median

ROOT = Path(__file__).resolve().parents[1]


def schema_tokens(tools: list[Any]) -> dict[str, int]:
    """Tokens (cl100k) of the tools as `tools/list` returns them: with and without output schemas."""
    full = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    inputs = [{k: v for k, v in t.items() if k != "outputSchema"} for t in full]
    return {"tools": len(full), "tokens": count_tokens(json.dumps(full)), "tokens_without_output_schemas": count_tokens(json.dumps(inputs))}


@contextlib.asynccontextmanager
async def _mcp_client(cdp: str) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chatagent", "mcp", "--cdp", cdp], cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def aria_snapshot(browser: Any, url: str) -> str:
    """Playwright MCP's page representation: the ARIA snapshot of the body
    (`browser`: a `PlaywrightBrowser`)."""
    page = await browser.context.new_page()
    try:
        await page.goto(url, wait_until="load")
        return str(await page.locator("body").aria_snapshot())
    finally:
        await page.close()


async def run_mcp_bench(data_dir: Path, pages: int, reps: int, budget: int) -> dict[str, Any]:
    from chatagent.mcp_server import PageTools
    from chatagent.runtime import Runtime

    by_page: dict[str, list[Any]] = defaultdict(list)
    for q in load_wtq(data_dir):
        by_page[q.page].append(q)
    chosen = sample(sorted(by_page), pages)
    rows: list[dict[str, Any]] = []
    with PageServer() as site:
        urls = {p: site.file_url(data_dir / p) for p in chosen}
        async with debuggable_chromium(OFFLINE_ARGS) as cdp, Runtime(bench_settings(cdp=cdp)) as runtime, \
                _mcp_client(cdp) as client:
            direct = PageTools(runtime)
            schemas = schema_tokens((await client.list_tools()).tools)
            for p in chosen:
                aria = await aria_snapshot(await runtime.browser(), urls[p])
                aria_cut = truncate_to_tokens(aria, budget)
                for q in by_page[p]:
                    res = await client.call_tool("read_pages", {"urls": [urls[p]], "question": q.question,
                                                                "budget_per_tab": budget})
                    page = res.structured_content["pages"][0]
                    rows.append({
                        "page": p, "question": q.question,
                        "read_pages": {"tokens": page["tokens"], "found": answer_in_context(q.answers, page["text"])},
                        "aria": {"tokens": count_tokens(aria), "found": answer_in_context(q.answers, aria)},
                        "aria_cut": {"tokens": count_tokens(aria_cut), "found": answer_in_context(q.answers, aria_cut)},
                    })

            async def timed(call: Any) -> float:
                t0 = time.perf_counter()
                await call
                return (time.perf_counter() - t0) * 1000

            # Warm: tabs the user already has open (listed, so no tab is opened per call), unchanged.
            browser = await runtime.browser()
            for p in chosen[:3]:
                await (await browser.context.new_page()).goto(urls[p], wait_until="load")
            ids = {"mcp": {t["url"]: t["id"] for t in (await client.call_tool("list_tabs", {})).structured_content["tabs"]},
                   "runtime": {t.url: t.id for t in (await direct.list_tabs()).tabs}}
            overhead: dict[str, dict[str, float]] = {}
            for kind in ("warm", "cold"):
                via_mcp, via_runtime = [], []
                for i in range(reps):
                    base = urls[chosen[i % min(3, len(chosen))]]
                    for label, out in (("mcp", via_mcp), ("runtime", via_runtime)):
                        # Cold: a page no cache has seen, opened for the call (and closed after it).
                        url = fresh_url(base, 10_000 + 2 * i + (label == "mcp")) if kind == "cold" else ids[label][base]
                        args = {"urls": [url], "question": "How many?", "budget_per_tab": budget}
                        call = client.call_tool("read_pages", args) if label == "mcp" else \
                            direct.read_pages([url], "How many?", budget)
                        out.append(await timed(call))
                overhead[kind] = {"mcp_ms_p50": median(via_mcp), "runtime_ms_p50": median(via_runtime),
                                  "overhead_ms_p50": median(via_mcp) - median(via_runtime), "reps": reps}
    return {"budget": budget, "pages": len(chosen), "questions": len(rows), "schemas": schemas,
            "summary": _summarise(rows), "overhead": overhead, "rows": rows}


def _summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for key in ("read_pages", "aria", "aria_cut"):
        out[key] = {
            "recall": sum(r[key]["found"] for r in rows) / max(len(rows), 1),
            "tokens_p50": median([r[key]["tokens"] for r in rows]),
        }
    return out


def report(result: dict[str, Any]) -> str:
    s, o, sc = result["summary"], result["overhead"], result["schemas"]
    lines = [
        f"WTQ: {result['questions']} questions on {result['pages']} pages, budget {result['budget']:,} tokens per page",
        "",
        "| page text | answer recall | tokens p50 |",
        "|---|---|---|",
        f"| chatagent `read_pages` (question-aware) | {s['read_pages']['recall']:.3f} | {s['read_pages']['tokens_p50']:,.0f} |",
        f"| Playwright MCP snapshot (ARIA), whole | {s['aria']['recall']:.3f} | {s['aria']['tokens_p50']:,.0f} |",
        f"| Playwright MCP snapshot, cut to the budget | {s['aria_cut']['recall']:.3f} | {s['aria_cut']['tokens_p50']:,.0f} |",
        "",
        "| read_pages | via MCP (stdio) p50 | runtime directly p50 | overhead p50 |",
        "|---|---|---|---|",
        *(f"| {k} | {v['mcp_ms_p50']:.1f} ms | {v['runtime_ms_p50']:.1f} ms | {v['overhead_ms_p50']:.1f} ms |"
          for k, v in o.items()),
        "",
        f"Tool schemas: {sc['tools']} tools, {sc['tokens']:,} tokens ({sc['tokens_without_output_schemas']:,} "
        "without the output schemas).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mcp_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    result = asyncio.run(run_mcp_bench(args.data, args.pages, args.reps, args.budget))
    print(report(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
