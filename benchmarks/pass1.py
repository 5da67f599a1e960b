"""Pass-1 rate: how often the answer comes from the page text alone, and what pass 2 costs.

A fixed set of questions about the fixture pages (`fixtures/pages/README.md`):
most are answerable from the extracted text; some need the browser, because the
fact appears only after scrolling (`lazy.html`) or only in an image
(`image_only.html`). Every question gets fresh tabs and a fresh `Runtime` (as
one `chatagent ask` would), asked through the real agent loop, so pass 2
really scrolls and screenshots.

Reported per question: the pass it ended in, tool calls, model calls (counted
with the run hook `request_sent`, so any model works; a retried request counts
again), tokens in and out, wall time (the runtime's model client is made
before it starts), and whether the expected answer is in the reply (lenient
matching). A perfect agent answers every `text` question in pass 1 and sends
every other one to pass 2.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from rich.progress import Progress

from chatagent.browser.base import Browser, Tab
from chatagent.events import Done, ErrorEvent, ToolCall
from chatagent.hooks import RunHooks
from chatagent.runtime import Runtime
from chatagent.settings import Settings

from .data import sample
from .scoring import answer_in_context
from .server import PageServer
from .stats import median, summary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"


@dataclass(frozen=True)
class Question:
    pages: tuple[str, ...]  # fixture file names, opened as tabs in this order
    question: str
    expected: tuple[str, ...]  # every one must be in the answer
    needs: str  # "text", "scroll" or "screenshot"


QUESTIONS: tuple[Question, ...] = (
    Question(("product.html",), "How much does the Aurora X14 Pro cost?", ("$1,349.00",), "text"),
    Question(("product.html",), "What is the battery capacity of the laptop?", ("72 Wh",), "text"),
    Question(("article.html",), "What was the original budget of the tram line?", ("268",), "text"),
    Question(("article.html",), "Who is the deputy mayor?", ("Tomasz Keller",), "text"),
    Question(("article.html",), "How many stops does the Harbour Line have?", ("19",), "text"),
    Question(("table.html",), "Who won the marathon, and in what time?", ("Henrik Solvang", "2:09:47"), "text"),
    Question(("table.html",), "How many runners finished?", ("41",), "text"),
    Question(("listing.html",), "How much is the Glacier Trek Pro?", ("$299.00",), "text"),
    Question(("js_rendered.html",), "When does the Tides of Glass exhibition close?", ("14 June 2025",), "text"),
    Question(("long.html",), "Where is the emergency generator for the east pier kept?", ("41-C",), "text"),
    Question(("latin1.html",), "How much is the crème brûlée?", ("5,40",), "text"),
    Question(("instructions.html",), "At what temperature should the cake bake?", ("175",), "text"),
    Question(("two_a.html", "two_b.html"), "Which city has more tram lines, Port Averly or Lindqvist Harbor?",
             ("Port Averly", "6"), "text"),
    Question(("two_a.html", "two_b.html"), "When were Port Averly and Lindqvist Harbor founded?", ("1648", "1791"), "text"),
    Question(("lazy.html",), "What is the warehouse code?", ("ZX-4471",), "scroll"),
    Question(("lazy.html",), "Which city is the returns warehouse in?", ("Tilburg",), "scroll"),
    Question(("lazy.html",), "Within how many business days are refunds issued?", ("5 business days",), "scroll"),
    Question(("image_only.html",), "Which gate is shown on the departure board image?", ("B12",), "screenshot"),
    Question(("image_only.html",), "What boarding time is shown in the picture?", ("14:35",), "screenshot"),
)


KINDS = ("text", "scroll", "screenshot")

# Questions no page answers, over long pages and many tabs: pass 2 searches
# until a bound stops it. They measure what a vague question can cost (the
# input-token budget, MAX_TURNS, the tool budget) and count in no rate.
COST_QUESTIONS: tuple[Question, ...] = (
    Question(("long.html",), "What did the harbour master have for breakfast?", (), "cost"),
    Question(("huge_dom.html",), "What did the harbour master have for breakfast?", (), "cost"),
    Question(("article.html", "product.html", "table.html", "listing.html", "long.html", "lazy.html",
              "two_a.html", "two_b.html"), "What did the harbour master have for breakfast?", (), "cost"),
)


def question_set(limit: int | None = None) -> list[Question]:
    """The set, or at most `limit` questions of each kind, spread over it."""
    return [q for kind in KINDS for q in sample([q for q in QUESTIONS if q.needs == kind], limit)]


class _ModelCalls(RunHooks):
    """Counts requests to the model: pass 1 is one, each pass-2 turn another."""

    def __init__(self) -> None:
        self.calls = 0

    def request_sent(self, pass_: int, turn: int, messages: list[BaseMessage]) -> None:
        self.calls += 1


async def ask_one(q: Question, settings: Settings, browser: Browser, site: PageServer) -> dict[str, Any]:
    counter = _ModelCalls()
    tabs = await browser.open_tabs([site.file_url(FIXTURES / p) for p in q.pages])
    try:
        async with Runtime(settings) as runtime:
            runtime.models.get()  # the client, made before the clock starts
            t0 = time.perf_counter()
            try:
                events = [e async for e in runtime.conversation(tabs, hooks=counter).ask(q.question)]
            finally:
                total_ms = (time.perf_counter() - t0) * 1000
    finally:
        for t in tabs:
            if isinstance(t, Tab):
                await t.close()
    last = events[-1]
    done = last if isinstance(last, Done) else None
    answer = done.answer if done else ""
    return {
        "question": q.question,
        "pages": list(q.pages),
        "needs": q.needs,
        "pass": done.pass_ if done else None,
        "error": f"{last.code}: {last.message}" if isinstance(last, ErrorEvent) else None,
        "tools": [e.name for e in events if isinstance(e, ToolCall)],
        "tool_calls": done.tool_calls if done else 0,
        "stop_reason": done.stop_reason if done else None,
        "model_calls": counter.calls,
        "input_tokens": done.usage.input_tokens if done else 0,
        "output_tokens": done.usage.output_tokens if done else 0,
        "total_ms": total_ms,
        "first_token_ms": done.timings.first_token_ms if done else None,
        "correct": done is not None and bool(q.expected) and answer_in_context(list(q.expected), answer),
        "answer": answer,
    }


def _rate(xs: Sequence[bool]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _kind(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "pass1_rate": _rate([r["pass"] == 1 for r in rows]),
        "correct_rate": _rate([r["correct"] for r in rows]),
        "tool_calls_mean": statistics.fmean(r["tool_calls"] for r in rows) if rows else 0.0,
        "model_calls_mean": statistics.fmean(r["model_calls"] for r in rows) if rows else 0.0,
        "input_tokens_median": median((r["input_tokens"] for r in rows), default=0),
        "output_tokens_median": median((r["output_tokens"] for r in rows), default=0),
        "total_ms_median": median((r["total_ms"] for r in rows), default=0.0),
    }


def summarise_pass1(rows: list[dict[str, Any]], model: str, cost_rows: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    text = [r for r in rows if r["needs"] == "text"]
    needs_browser = [r for r in rows if r["needs"] != "text"]
    p1 = [r for r in rows if r["pass"] == 1]
    p2 = [r for r in rows if r["pass"] == 2]
    by_kind = {k: _kind([r for r in rows if r["needs"] == k]) for k in KINDS}
    by_pass = {"pass 1": _kind(p1), "pass 2": _kind(p2)}
    return {
        "model": model,
        "questions": len(rows),
        "pass1_rate": _rate([r["pass"] == 1 for r in rows]),
        "text_in_pass1": _rate([r["pass"] == 1 for r in text]),
        "browser_escalated": _rate([r["pass"] == 2 for r in needs_browser]),
        "correct_rate": _rate([r["correct"] for r in rows]),
        "errors": sum(r["error"] is not None for r in rows),
        "by_kind": {**{k: v for k, v in by_kind.items() if v["questions"]}, **{k: v for k, v in by_pass.items() if v["questions"]}},
        # What going to pass 2 costs, against answering in pass 1 (medians over each group).
        "pass2_cost": {
            "questions": len(p2),
            "tool_calls_total": sum(r["tool_calls"] for r in p2),
            "tool_calls_mean": by_pass["pass 2"]["tool_calls_mean"],
            "model_calls_mean": by_pass["pass 2"]["model_calls_mean"],
            "input_tokens_median": by_pass["pass 2"]["input_tokens_median"],
            "input_tokens_ratio_to_pass1": (by_pass["pass 2"]["input_tokens_median"] / by_pass["pass 1"]["input_tokens_median"])
            if p1 and p2 and by_pass["pass 1"]["input_tokens_median"] else None,
            "total_ms_median": by_pass["pass 2"]["total_ms_median"],
        },
        # Input tokens of every question that went to pass 2, the unanswerable ones included.
        "pass2_input_tokens": _spread([r["input_tokens"] for r in [*p2, *cost_rows] if r["pass"] == 2]),
        "cost_questions": [
            {k: r[k] for k in ("question", "pages", "input_tokens", "tool_calls", "model_calls", "stop_reason")}
            for r in cost_rows
        ],
        "questions_detail": [*rows, *cost_rows],
    }


def _spread(xs: list[int]) -> dict[str, float]:
    s = summary(xs)
    return {"n": len(xs), "median": s["p50"], "p90": s["p90"], "max": s["max"]}


async def run_pass1(
    settings: Settings, browser: Browser, site: PageServer, progress: Progress, limit: int | None = None,
) -> dict[str, Any]:
    """The set with `settings.model` (see `server.bench_settings`), over tabs of `browser`."""
    questions = question_set(limit)
    costly = list(sample(list(COST_QUESTIONS), limit))
    task = progress.add_task(f"pass-1 set, {settings.model}", total=len(questions) + len(costly))
    rows, cost_rows = [], []
    for q in questions:
        rows.append(await ask_one(q, settings, browser, site))
        progress.advance(task)
    for q in costly:
        cost_rows.append(await ask_one(q, settings, browser, site))
        progress.advance(task)
    return summarise_pass1(rows, settings.model, cost_rows)
