"""Local-model benchmark: what the page text sent costs a real local model
before its first token.

    python -m benchmarks.local_model [--data DIR] [--pages 4] [--reps 2] [--budget 2000] [--set realistic|wtq]
                                     [--census] [--ten-tabs 4] [--out FILE.json]

Setup: llama.cpp's OpenAI-compatible server (`chatagent.testing.llama_server`,
the `local` extra) serving SmolLM2-135M-Instruct on 127.0.0.1, asked through
the real OpenAI client; pages served on 127.0.0.1 and rendered in one headless
Chromium. A local model reads its prompt before it says anything (prefill), so
its time to first token grows with the page text it is sent.

For one question on each of `--pages` pages of the realistic set and of
WikiTableQuestions (an even spread), the same prompt (`prompts.build_messages`)
carries one of three page texts:

- chatagent's context (`ContextBuilder`, `--budget` tokens per tab, question-aware);
- the whole rendered text (`innerText`);
- Playwright MCP's snapshot of the page (its ARIA snapshot, as `mcp_bench`).

A prompt longer than the model's context window is cut to fit (the page
text's head), and counted as cut. The three are sent back to back, `--reps`
rounds, interleaved (so load on the machine falls on each alike, and no
request finds the one before it in the server's prompt cache beyond the
shared system prompt). Reported: time to first token and total time (answers
capped at `MAX_ANSWER_TOKENS`), p50 per context and set; the answers, for
information only: a 135M model's are not judged.

Ten tabs in a small window (`--ten-tabs N`): N realistic questions, each over
its page and nine others, asked through chatagent's agent (the real request fit,
counted by the model's tokenizer) to a second server run with `--n_ctx 3072`:
answered, within the window, the answer in its tab's context, and times.

Timing a few pages says little of a whole set: `--census` also counts, with
the model's tokenizer and no answers, the prompt tokens of chatagent's context
and of the whole text on every page of each set. Prefill follows the prompt's
tokens, so their ratio is what the set's TTFT share would be.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from chatagent.browser.base import PageSnapshot
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.context import ContextBuilder, PageContext, TabContext
from chatagent.prompts import build_messages, message_text
from chatagent.testing import llama_server

from .context_bench import load_snapshots
from .data import DEFAULT_DATA_DIR, load_realistic, load_wtq, sample
from .mcp_bench import aria_snapshot
from .report import machine, plural, progress_bar
from .server import PageServer, bench_settings, browser_version, launch_browser
from .stats import finite, median

CONTEXTS = (("chatagent", "chatagent's context"), ("whole", "whole rendered text"),
            ("aria", "Playwright MCP snapshot"))
MAX_ANSWER_TOKENS = 32  # the answer's length is the same for every context: only reading the prompt differs
# Room for the prompt in the window: the answer, and the chat template's own tokens.
PROMPT_ROOM = llama_server.CONTEXT_TOKENS - MAX_ANSWER_TOKENS - 96
GOAL_SHARE = 1 / 3  # chatagent's TTFT p50 within this share of the whole page's, on the realistic set
DEFAULT_PAGES = 4
DEFAULT_REPS = 2
SMALL_WINDOW = 3072  # the window the ten-tab questions' server runs with (`--n_ctx`)
SMALL_WINDOW_QUESTIONS = 4


class Question:
    def __init__(self, set_name: str, page: str, question: str) -> None:
        self.set = set_name
        self.page = page
        self.question = question


SETS = ("realistic", "wtq")


def questions(data_dir: Path, pages: int | None, sets: Sequence[str] = SETS) -> list[Question]:
    """One question on each of `pages` pages per set (None: every page), spread evenly over each set."""
    out: list[Question] = []
    loaders = {"realistic": lambda: load_realistic(data_dir)[0], "wtq": lambda: load_wtq(data_dir)}
    for name in sets:
        items = loaders[name]()
        first: dict[str, Any] = {}
        for q in items:
            first.setdefault(q.page, q)
        out += [Question(name, p, first[p].question) for p in sample(sorted(first), pages)]
    return out


def _context(text: str, snap: PageSnapshot, question: str, budget: int) -> PageContext:
    tab = TabContext(tab_id="1", url=snap.url, title=snap.title, text=text, selected=True)
    return PageContext(tabs=[tab], budget_per_tab=budget, question=question)


async def prompts(q: Question, snap: PageSnapshot, aria: str | None, budget: int, server: llama_server.LlamaServer
                  ) -> dict[str, dict[str, Any]]:
    """The prompts for `q` (the three; without `aria`, not the snapshot's), each fitted to the
    model's window: messages, tokens, and whether it was cut."""
    built = await ContextBuilder(budget_per_tab=budget).build([], q.question, snapshots=[snap])
    contexts = {"chatagent": built, "whole": _context(snap.visible_text, snap, q.question, budget)}
    if aria is not None:
        contexts["aria"] = _context(aria, snap, q.question, budget)
    out = {}
    for key, ctx in contexts.items():
        messages = build_messages(ctx, q.question)
        tokens = whole = await asyncio.to_thread(server.tokens, "\n".join(message_text(m) for m in messages))
        for _ in range(8):  # the page text's head, shortened until the prompt fits
            if tokens <= PROMPT_ROOM:
                break
            tab = ctx.tabs[0]
            keep = int(len(tab.text) * (1 - (tokens - PROMPT_ROOM) / max(tab.tokens or tokens, 1)) * 0.97)
            ctx = ctx.model_copy(update={"tabs": [tab.model_copy(update={"text": tab.text[:max(keep, 0)], "tokens": 0})]})
            messages = build_messages(ctx, q.question)
            tokens = await asyncio.to_thread(server.tokens, "\n".join(message_text(m) for m in messages))
        out[key] = {"messages": messages, "tokens": tokens, "tokens_whole": whole, "cut": tokens < whole}
    return out


async def timed(chat: Any, messages: list[Any]) -> dict[str, Any]:
    """One streamed answer: time to its first token and to its end (ms), and the answer."""
    t0 = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    async for chunk in chat.astream(messages):
        text = chunk.text if isinstance(chunk.text, str) else str(chunk.content)
        if text and first is None:
            first = time.perf_counter()
        parts.append(text)
    end = time.perf_counter()
    return {"ttft_ms": ((first or end) - t0) * 1000, "total_ms": (end - t0) * 1000, "answer": "".join(parts).strip()}


async def census(data_dir: Path, budget: int, browser: PlaywrightBrowser, site: PageServer, progress: Progress,
                 server: llama_server.LlamaServer, sets: Sequence[str] = SETS) -> dict[str, Any]:
    """Every page of each set (its first question): the prompt tokens of chatagent's
    context and of the whole text, fitted to the window as the timed prompts are."""
    out: dict[str, Any] = {}
    for set_name in sets:
        qs = questions(data_dir, None, [set_name])
        snaps = await load_snapshots(browser, {q.page: site.file_url(data_dir / q.page) for q in qs}, progress,
                                     f"census of {set_name} pages")
        pairs = []
        for q in qs:
            prompt = await prompts(q, snaps[q.page], None, budget, server)
            pairs.append((prompt["chatagent"]["tokens"], prompt["whole"]["tokens"]))
        mine, whole = median(c for c, _ in pairs), median(w for _, w in pairs)
        out[set_name] = {"pages": len(pairs), "chatagent_tokens_p50": mine, "whole_tokens_p50": whole,
                         "share_of_p50s": mine / whole, "share_p50": median(c / w for c, w in pairs)}
    return out


async def run_local_model(
    data_dir: Path, pages: int, reps: int, budget: int, browser: PlaywrightBrowser, site: PageServer,
    progress: Progress, sets: Sequence[str] = SETS, with_census: bool = False,
    ten_tabs: int = SMALL_WINDOW_QUESTIONS,
) -> dict[str, Any]:
    """Every question's three prompts, `reps` rounds back to back, then `ten_tabs` questions over
    ten tabs in a small window (`small_window`); or why it cannot run here."""
    if (why := llama_server.available()) is not None:
        return {"skipped": why}
    from chatagent.models import load_model

    qs = questions(data_dir, pages, sets)
    task = progress.add_task("local model (llama.cpp, SmolLM2-135M)", total=len(qs) * (reps + 1))
    with llama_server.LlamaServer() as server:
        chat = load_model(server.model, bench_settings(model=server.model, openai_base_url=server.url)).chat
        # Reading a whole page can take a busy machine minutes before the first chunk: waited for, and timed.
        chat = chat.model_copy(update={"stream_chunk_timeout": None, "request_timeout": None})
        # The client sends the cap as `max_completion_tokens`, which llama-cpp-python's server
        # ignores (it generates until the model stops or the window is full): `max_tokens` too.
        chat = chat.bind(max_tokens=MAX_ANSWER_TOKENS, temperature=0, extra_body={"max_tokens": MAX_ANSWER_TOKENS})
        await timed(chat, build_messages(_context("Warm-up.", PageSnapshot(tab_id="1", url="about:blank"), "Hi?",
                                                  budget), "Hi?"))  # the model's first request loads its weights
        rows = []
        for q in qs:
            url = site.file_url(data_dir / q.page)
            [tab] = await browser.open_tabs([url])
            try:
                snap = await tab.snapshot()  # type: ignore[union-attr]
            finally:
                await tab.close()
            aria = await aria_snapshot(browser, url)
            prompt = await prompts(q, snap, aria, budget, server)
            progress.advance(task)
            runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for _ in range(reps):
                for key, _label in CONTEXTS:
                    runs[key].append(one := await timed(chat, prompt[key]["messages"]))
                    progress.console.print(f"{q.set} {q.page}: {key}, {prompt[key]['tokens']:,} tokens: first token "
                                           f"{one['ttft_ms'] / 1000:.1f} s, done {one['total_ms'] / 1000:.1f} s")
                progress.advance(task)
            rows.append({
                "set": q.set, "page": q.page, "question": q.question,
                **{key: {"tokens": prompt[key]["tokens"], "tokens_whole": prompt[key]["tokens_whole"],
                         "cut": prompt[key]["cut"], "ttft_ms": [r["ttft_ms"] for r in runs[key]],
                         "total_ms": [r["total_ms"] for r in runs[key]], "answer": runs[key][-1]["answer"]}
                   for key, _label in CONTEXTS},
            })
        counted = await census(data_dir, budget, browser, site, progress, server, sets) if with_census else None
    ten = await small_window(data_dir, ten_tabs, browser, site, progress) if ten_tabs else None
    return {"model": f"SmolLM2-135M-Instruct (Q4_1) on llama.cpp's server, {server.threads} threads",
            "context_window": llama_server.CONTEXT_TOKENS, "max_answer_tokens": MAX_ANSWER_TOKENS,
            "budget": budget, "reps": reps, "rows": rows, "summary": summarise(rows),
            **({"census": counted} if counted is not None else {}), **({"ten_tabs": ten} if ten else {})}


async def small_window(data_dir: Path, count: int, browser: PlaywrightBrowser, site: PageServer,
                       progress: Progress) -> dict[str, Any]:
    """Realistic questions, each over its page and nine others (`many_tabs.tabs_for`), asked
    through the agent of a llama.cpp server run with `--n_ctx SMALL_WINDOW` (which refuses a
    longer request; `context_window` tells chatagent, as llama-cpp-python's server does not):
    whether each is answered, its request within 90% of the window by the model's own count,
    the answer in its tab's context, and the time to first token and to the end."""
    from chatagent.agent import ChatAgent
    from chatagent.browser.static import StaticTab
    from chatagent.events import Done, ErrorEvent
    from chatagent.hooks import RunHooks
    from chatagent.models import load_model

    from .many_tabs import DEFAULT_TABS, tabs_for
    from .realistic import scorer

    hit = scorer(str(data_dir)).hit
    everyone, _ = load_realistic(data_dir)
    pages = sorted({q.page for q in everyone})
    chosen = [(q, *tabs_for(q, pages, DEFAULT_TABS)) for q in sample(everyone, count)]
    snaps = await load_snapshots(browser, {p: site.file_url(data_dir / p) for _, ps, _ in chosen for p in ps},
                                 progress, "load pages for ten tabs")
    task = progress.add_task(f"ten tabs, llama.cpp at {SMALL_WINDOW:,} tokens", total=len(chosen))
    rows = []
    with llama_server.LlamaServer(n_ctx=SMALL_WINDOW) as server:
        model = load_model(server.model, bench_settings(model=server.model, openai_base_url=server.url,
                                                        context_window=SMALL_WINDOW))
        for q, ps, at in chosen:
            seen: dict[str, Any] = {"sent": []}

            class Record(RunHooks):
                def context_built(self, context: PageContext) -> None:
                    seen["context"] = context

                def request_sent(self, pass_: int, turn: int, messages: list[Any]) -> None:
                    seen["sent"].append("\n".join(message_text(m) for m in messages))

            tabs = [StaticTab(str(i + 1), snaps[p].url, snaps[p].html, title=snaps[p].title,
                              visible_text=snaps[p].visible_text) for i, p in enumerate(ps)]
            events = [e async for e in ChatAgent(model, tabs, hooks=Record(), deadline_s=None).ask(q.question)]
            end = events[-1]
            own = [await asyncio.to_thread(server.tokens, text) for text in seen["sent"]]
            ctx = seen.get("context")
            rows.append({
                "id": q.id, "answered": isinstance(end, Done) and end.stop_reason == "answered",
                "error": end.code if isinstance(end, ErrorEvent) else None,
                "prompt_tokens": max(own, default=0), "within": bool(own) and max(own) <= 0.9 * SMALL_WINDOW,
                "reached": bool(ctx is not None and ctx.tabs[at].ok and hit(ctx.tabs[at].text, q.answers)),
                "ttft_ms": end.timings.first_token_ms if isinstance(end, Done) else None,
                "total_ms": end.timings.total_ms if isinstance(end, Done) else None,
            })
            progress.advance(task)
    done = [r for r in rows if r["answered"]]
    return {"window": SMALL_WINDOW, "tabs": DEFAULT_TABS, "questions": len(rows), "answered": len(done),
            "within": sum(r["within"] for r in rows), "reached": sum(r["reached"] for r in rows),
            "prompt_tokens_p50": median(r["prompt_tokens"] for r in rows),
            "ttft_ms_p50": median(r["ttft_ms"] for r in done), "total_ms_p50": median(r["total_ms"] for r in done),
            "rows": rows}


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for set_name in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == set_name]
        s: dict[str, Any] = {"questions": len(mine)}
        for key, _label in CONTEXTS:
            s[key] = {
                "ttft_ms_p50": median(t for r in mine for t in r[key]["ttft_ms"]),
                "total_ms_p50": median(t for r in mine for t in r[key]["total_ms"]),
                "tokens_p50": median(r[key]["tokens"] for r in mine),
                "cut": sum(r[key]["cut"] for r in mine),
            }
        s["share_of_whole"] = s["chatagent"]["ttft_ms_p50"] / s["whole"]["ttft_ms_p50"]
        out[set_name] = s
    return out


def goal(result: dict[str, Any]) -> dict[str, Any] | None:
    """chatagent's TTFT p50 on the realistic set, as a share of the whole page's (None: not measured)."""
    s = result.get("summary", {}).get("realistic")
    if not s:
        return None
    share = s["share_of_whole"]
    return {"what": "local model (SmolLM2-135M, llama.cpp): time to first token p50 with chatagent's context, "
                    "share of the whole rendered text's, realistic pages",
            "target": f"≤ {GOAL_SHARE:.2f}", "measured": f"{share:.2f} ({s['chatagent']['ttft_ms_p50']:,.0f} ms of "
            f"{s['whole']['ttft_ms_p50']:,.0f} ms)", "met": share <= GOAL_SHARE, "value": share}


def report(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"Local model: skipped ({result['skipped']})."
    lines = [f"{result['model']}; window {result['context_window']:,} tokens, answers capped at "
             f"{result['max_answer_tokens']} tokens; chatagent's budget {result['budget']:,} tokens per tab; "
             f"{result['reps']} rounds, back to back.", ""]
    if result["summary"]:  # none with --pages 0: the census alone
        lines += ["| set | page text | prompt tokens p50 | cut to the window | TTFT p50 | total p50 |",
                  "|---|---|---|---|---|---|"]
    for set_name, s in result["summary"].items():
        for key, label in CONTEXTS:
            v = s[key]
            lines.append(f"| {set_name} ({plural(s['questions'], 'page')}) | {label} | {v['tokens_p50']:,.0f} | "
                         f"{v['cut']} of {s['questions']} | {v['ttft_ms_p50'] / 1000:,.1f} s | "
                         f"{v['total_ms_p50'] / 1000:,.1f} s |")
    lines.append("")
    for set_name, s in result["summary"].items():
        lines.append(f"{set_name}: chatagent's TTFT p50 is {s['share_of_whole']:.2f} of the whole text's.")
    if t := result.get("ten_tabs"):
        lines += ["", f"Ten tabs in a small window: {plural(t['questions'], 'realistic question')}, each over its "
                  f"page and {t['tabs'] - 1} others, through chatagent's agent to llama.cpp run with "
                  f"`--n_ctx {t['window']:,}`: answered {t['answered']} of {t['questions']}, every request within "
                  f"90% of the window by the model's own count {t['within']} of {t['questions']}, the answer in "
                  f"its tab's context {t['reached']} of {t['questions']}; prompt tokens p50 "
                  f"{t['prompt_tokens_p50']:,.0f}, first token p50 {t['ttft_ms_p50'] / 1000:,.1f} s, "
                  f"total p50 {t['total_ms_p50'] / 1000:,.1f} s."]
    for set_name, c in result.get("census", {}).items():
        lines.append(f"{set_name}, every page ({c['pages']}): prompt tokens p50 {c['chatagent_tokens_p50']:,.0f} with "
                     f"chatagent's context, {c['whole_tokens_p50']:,.0f} with the whole text ({c['share_of_p50s']:.2f}; "
                     f"a page's share p50 {c['share_p50']:.2f}).")
    return "\n".join(lines)


async def run(data_dir: Path, pages: int, reps: int, budget: int, console: Console,
              sets: Sequence[str] = SETS, with_census: bool = False,
              ten_tabs: int = SMALL_WINDOW_QUESTIONS) -> dict[str, Any]:
    started = time.perf_counter()
    at_start = machine()
    with progress_bar(console) as progress, PageServer() as site:
        async with launch_browser() as browser:
            version = browser_version(browser)
            result = await run_local_model(data_dir, pages, reps, budget, browser, site, progress, sets, with_census,
                                           ten_tabs)
    result.update(browser=version, machine={**machine(), "loadavg_at_start": at_start["loadavg"]},
                  wall_s=time.perf_counter() - started,
                  config={"pages": pages, "reps": reps, "budget": budget, "sets": list(sets), "census": with_census,
                          "ten_tabs": ten_tabs})
    return result


def main(argv: list[str] | None = None) -> int:
    from chatagent.limits import DEFAULT_TAB_BUDGET

    ap = argparse.ArgumentParser(prog="python -m benchmarks.local_model", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--pages", type=int, default=DEFAULT_PAGES,
                    help=f"pages per set timed (default {DEFAULT_PAGES}; 0 with --census: the count alone)")
    ap.add_argument("--reps", type=int, default=DEFAULT_REPS, help=f"rounds (default {DEFAULT_REPS})")
    ap.add_argument("--budget", type=int, default=DEFAULT_TAB_BUDGET, help="chatagent's tokens per tab")
    ap.add_argument("--set", dest="sets", choices=SETS, action="append",
                    help="only this set (repeatable; default: both)")
    ap.add_argument("--census", action="store_true",
                    help="also count the prompt tokens (no answers) on every page of each set")
    ap.add_argument("--ten-tabs", type=int, default=SMALL_WINDOW_QUESTIONS, metavar="N",
                    help=f"questions over ten tabs in a {SMALL_WINDOW:,}-token window (default "
                         f"{SMALL_WINDOW_QUESTIONS}; 0: none)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    err = Console(stderr=True)
    result = asyncio.run(run(args.data, args.pages, args.reps, args.budget, err, args.sets or SETS, args.census,
                             args.ten_tabs))
    print(report(result))
    if (g := goal(result)) is not None:
        print(f"\nGoal: {g['what']}: {g['measured']} (target {g['target']}): {'met' if g['met'] else 'NOT met'}.")
    err.print(f"total {result['wall_s']:.0f} s")
    if args.out:
        args.out.write_text(json.dumps(finite(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
