"""`chatagent bench`: every benchmark in one process and one run, and the goals they check.

1. Latency (`latency`): question → first answer token through the real Gemini
   client against the local Gemini-compatible server (fixed model TTFT), warm
   1 tab / cold 1 tab / cold 10 tabs, overhead broken down by phase; with
   `--model` (not `extractive`), also against that model's real service.
2. Token cost and answer recall on WikiTableQuestions (`context_bench`):
   chatagent against the whole page text and head truncation to the same budget.
3. Whether the answer reaches the model on pages of every kind (`realistic`):
   side-panel questions over forums, products, listings, service pages, docs
   and articles, and two-tab comparisons, against the whole rendered text.
   Whole-page requests (`whole_page`): whether the context of "tldr" and the
   like stands for the whole of a long page, the offline model's summary, and
   the decision's errors both ways. Many tabs (`many_tabs`): each of those
   questions over its page and nine others, 4,000 and 8,000 tokens in all.
4. Extraction word F1 on AEB and WCXB (per page type, for information), and
   multi-tab cost on HotpotQA (`context_bench`).
5. Pass-1 rate and pass-2 cost on the fixture question set (`pass1`).
6. Offline answers (`offline`): how often the `extractive` model's answer holds
   the answer on WTQ, quotes both gold tabs' evidence on HotpotQA comparisons,
   and answers the two-laptop questions from both tabs; and whether the
   passages its answers to the realistic questions cite are the pages' own
   words (`citations`).
7. End to end (`e2e`): whole-process time to the first token of `chatagent ask`,
   cold and with a warm daemon, against a minimal Playwright + LangChain script,
   interleaved, 1 and 10 tabs.
8. A real local model (`local_model`, with the `local` extra): time to first
   token and total time through llama.cpp's server with SmolLM2-135M, for
   chatagent's context, the whole rendered text and Playwright MCP's snapshot
   of the same realistic and WTQ pages; skipped, saying why, without the extra
   and in a sample run (`--limit`).

Writes `results.json` (with a `summary`), `report.md` and PNG plots to `--out`;
a progress bar on stderr while it runs, the summary tables on stdout at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from chatagent.context import PageContext, TabContext
from chatagent.errors import ChatAgentError
from chatagent.models import load_model
from chatagent.prompts import build_messages
from chatagent.tokens import count_tokens

from .citations import bench_citations
from .context_bench import DEFAULT_BUDGET, bench_extraction, bench_hotpot, bench_wtq, process_pool
from .data import DEFAULT_DATA_DIR, load_aeb, load_hotpot, load_realistic, load_wcxb, load_wtq, sample
from .e2e import GAP_S, run_e2e
from .latency import GOALS_MS, fixture_pages, run_latency
from .local_model import DEFAULT_PAGES as LOCAL_PAGES, DEFAULT_REPS as LOCAL_REPS, goal as local_goal, run_local_model
from .local_model import SMALL_WINDOW_QUESTIONS as LOCAL_TEN_TABS
from .many_tabs import DEFAULT_TABS as MANY_TABS, DEFAULT_TOTALS as MANY_TOTALS, bench_many_tabs
from .many_tabs import goals as many_tabs_goals, headline as many_tabs_headline
from .mcp_bench import run_mcp_bench
from .offline import OfflinePlan, headline as offline_headline, run_offline
from .pass1 import run_pass1
from .realistic import bench_realistic, goals as realistic_goals
from .whole_page import bench_whole_page, goals as whole_page_goals, headline as whole_page_headline, listed_pages
from .report import SCENARIOS, machine, markdown_report, plural, print_summary, progress_bar
from .scale import deployment_layout, run_scale
from .server import PageServer, bench_settings, browser_version, launch_browser
from .stats import finite

SERVER_TTFT_MS = 300.0
TOKENS_PER_S = 50.0
TOKEN_SHARE_GOAL = 0.5  # of the whole page text's tokens
RECALL_SLACK = 0.02  # below the whole page text's recall
# The "head truncation" baseline is what the original design sent: trafilatura's text, cut at the budget.
WTQ_KEYS = {"chatagent": "chatagent", "full_text": "full_text", "head_truncation": "trafilatura_head"}


class BenchError(ChatAgentError):
    code = "bench_error"


@dataclass(frozen=True)
class Plan:
    """How much of everything to run. Sample sizes are items per dataset (None: all):
    WTQ pages (with all their questions), AEB and WCXB pages, HotpotQA questions,
    pass-1 questions per kind (text / needs the browser), and realistic questions
    (single-page ones, and as many comparisons at most); `e2e_pairs`: the
    end-to-end pairs per tab count, `e2e_tabs` the tab counts."""

    quick: bool
    reps: int
    wtq_pages: int | None
    aeb_pages: int | None
    wcxb_pages: int | None
    hotpot_questions: int | None
    pass1_questions: int | None
    realistic_questions: int | None
    budget: int
    data_dir: Path
    model: str | None
    offline: OfflinePlan
    e2e_pairs: int
    e2e_tabs: tuple[int, ...] = (1, 10)
    latency_fixtures: bool = False  # latency over the small fixture pages, not WCXB pages
    whole_page_pages: int | None = None  # the whole-page set's long pages (None: all)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Plan":
        quick = bool(getattr(args, "quick", False))
        limit = getattr(args, "limit", None)
        # --quick: sized to finish in under 4 minutes on 2 busy cores, spread over each whole set.
        sizes = (20, 15, 28, 10, None, 50) if quick else (None,) * 6
        if limit is not None:
            sizes = (limit,) * 6
        reps = getattr(args, "reps", None)
        reps = (5 if quick else 15) if reps is None else reps
        if reps < 1 or (limit is not None and limit < 1):
            raise BenchError("--reps and --limit must be at least 1.")
        return cls(quick, reps, *sizes, budget=getattr(args, "budget", None) or DEFAULT_BUDGET,
                   data_dir=Path(getattr(args, "data", None) or DEFAULT_DATA_DIR), model=args.model,
                   offline=OfflinePlan.make(quick, limit),
                   # Two fresh processes per pair and tab count: seconds each, so few when quick.
                   e2e_pairs=1 if limit is not None else 2 if quick else 12,
                   # A sample (--limit) is a look at every section: one tab is enough for this one,
                   # and the fixture pages for latency.
                   e2e_tabs=(1,) if limit is not None else (1, 10), latency_fixtures=limit is not None,
                   whole_page_pages=limit if limit is not None else 20 if quick else None)


def _check_data(data_dir: Path) -> None:
    needed = ["wtq/questions.tsv", "aeb/ground-truth.json", "wcxb-test/ground-truth", "hotpot/comparison.jsonl",
              "realistic/questions.jsonl", "realistic/check.py"]
    missing = [n for n in needed if not (data_dir / n).exists()]
    if missing:
        raise BenchError(f"No evaluation data at {data_dir} (missing {', '.join(missing)}); pass --data DIR.")


async def measure(plan: Plan, console: Console) -> dict[str, Any]:
    """Run every part; return the raw results (no summary yet)."""
    _check_data(plan.data_dir)
    pass1_settings = bench_settings(model=plan.model or "extractive")
    load_model(pass1_settings.model, pass1_settings)  # fails now, not after minutes, on a missing API key
    questions = load_wtq(plan.data_dir, plan.wtq_pages)
    aeb = load_aeb(plan.data_dir, plan.aeb_pages)
    wcxb = load_wcxb(plan.data_dir, plan.wcxb_pages)
    hotpot = load_hotpot(plan.data_dir, plan.hotpot_questions)
    realistic, comparisons = load_realistic(plan.data_dir, plan.realistic_questions)
    real = plan.model not in (None, "extractive")

    started = time.perf_counter()
    at_start = machine()
    result: dict[str, Any] = {"machine": {**at_start, "loadavg_at_start": at_start["loadavg"]}}
    with progress_bar(console) as progress, PageServer() as site:
        overall = progress.add_task("chatagent bench", total=14 if real else 13)
        async with launch_browser() as browser:
            result["machine"]["browser"] = browser_version(browser)
            # Latency first, while nothing else of ours is running.
            # A sample (--limit) is a look at every section, its figures not compared: it
            # leaves out the untimed warm-ups and the end-to-end section's pause between runs.
            sample_run = plan.latency_fixtures
            result["latency"] = await run_latency(
                plan.reps, SERVER_TTFT_MS, TOKENS_PER_S, fixture_pages() if plan.latency_fixtures else None,
                progress=progress, browser=browser, site=site, data_dir=plan.data_dir, warm_up=not sample_run,
            )
            progress.advance(overall)
            if real:
                result["real_model"] = await run_latency(
                    plan.reps, progress=progress, model=plan.model, browser=browser, site=site, data_dir=plan.data_dir,
                    warm_up=not sample_run,
                )
                progress.advance(overall)
            # Its own page and model servers and processes; the bench's browser stays idle meanwhile.
            result["e2e"] = await run_e2e(plan.e2e_pairs, SERVER_TTFT_MS, plan.e2e_tabs, data_dir=plan.data_dir,
                                          progress=progress, warm_up=not sample_run, gap_s=0.0 if sample_run else GAP_S)
            progress.advance(overall)
            with process_pool() as pool:
                result["wtq"] = await bench_wtq(plan.data_dir, questions, plan.budget, browser, site, pool, progress)
                progress.advance(overall)
                result["realistic"] = await bench_realistic(plan.data_dir, realistic, comparisons, plan.budget,
                                                            browser, site, pool, progress)
                progress.advance(overall)
                # The set's long pages; and the realistic questions again, for whether any is taken as one.
                result["whole_page"] = (
                    await bench_whole_page(plan.data_dir, sample(listed_pages(plan.data_dir), plan.whole_page_pages),
                                           plan.budget, browser, site, pool, progress, realistic)
                    if (plan.data_dir / "whole-page" / "coverage.py").is_file()
                    else {"skipped": f"no whole-page set at {plan.data_dir / 'whole-page'}"})
                progress.advance(overall)
                result["many_tabs"] = await bench_many_tabs(plan.data_dir, realistic, MANY_TOTALS, MANY_TABS,
                                                            browser, site, pool, progress)
                progress.advance(overall)
                result["extraction"] = await bench_extraction(plan.data_dir, aeb, wcxb, browser, site, pool, progress)
                progress.advance(overall)
            result["hotpot"] = await bench_hotpot(hotpot, plan.budget, browser, site, progress)
            progress.advance(overall)
            result["pass1"] = await run_pass1(pass1_settings, browser, site, progress, plan.pass1_questions)
            progress.advance(overall)
            result["offline"] = await run_offline(plan.offline, plan.data_dir, browser, site, progress)
            progress.advance(overall)
            result["citations"] = await bench_citations(plan.data_dir, realistic, comparisons, browser, site, progress)
            progress.advance(overall)
            # Minutes of a real model reading pages: not in a sample run, which looks at every other section.
            result["local_model"] = (
                {"skipped": "a sample run (--limit) leaves it out: `python -m benchmarks.local_model` runs it alone"}
                if plan.latency_fixtures else await run_local_model(
                    plan.data_dir, LOCAL_PAGES // 2 if plan.quick else LOCAL_PAGES, LOCAL_REPS, plan.budget,
                    browser, site, progress, ten_tabs=LOCAL_TEN_TABS // 2 if plan.quick else LOCAL_TEN_TABS))
            progress.advance(overall)
        # Its own Chromium (with a debugging port, for the MCP server to attach to) and page server.
        mcp_pages = plan.wtq_pages if plan.wtq_pages is not None and plan.wtq_pages < 8 else (8 if plan.quick else 20)
        result["mcp"] = await run_mcp_bench(plan.data_dir, mcp_pages, plan.reps, plan.budget)
        progress.advance(overall)
        # Its own browser server, replicas and HAProxy (skipped, saying why, without HAProxy). Not in a
        # sample (--limit): starting five processes on a busy machine takes longer than the rest of it
        # (tests/test_replicas.py runs the replicas through HAProxy).
        if plan.latency_fixtures:
            result["scale"] = {"skipped": "a sample (--limit) leaves it out: `python -m benchmarks.scale` runs it"}
        else:
            result["scale"] = await run_scale(plan.data_dir, *((16, 2, 12) if plan.quick else (32, 3, 24)),
                                              browser_cpus=deployment_layout())
        progress.advance(overall)
    result["machine"]["loadavg"] = machine()["loadavg"]
    result["wall_s"] = time.perf_counter() - started
    return result


# ---------------------------------------------------------------- summary and goals


def prompt_overhead_tokens() -> int:
    """Tokens of the prompt around one tab's text (system prompt, delimiters, tab header):
    the same for every way of choosing the text, so the comparisons leave it out."""
    tab = TabContext(tab_id="1", url="http://127.0.0.1/page.html", title="A page title", selected=True)
    ctx = PageContext(tabs=[tab], budget_per_tab=DEFAULT_BUDGET)
    return sum(count_tokens(str(m.content)) for m in build_messages(ctx, ""))


def _goal(what: str, target: str, measured: str, met: bool, value: float) -> dict[str, Any]:
    return {"what": what, "target": target, "measured": measured, "met": met, "value": value}


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    lat = result["latency"]["scenarios"]
    wtq = result["wtq"]["configs"]
    ex = result["extraction"]
    h = result["hotpot"]
    p = result["pass1"]
    tokens = {k: wtq[v]["tokens_median"] for k, v in WTQ_KEYS.items()}
    recall = {k: wtq[v]["recall"] for k, v in WTQ_KEYS.items()}
    summary: dict[str, Any] = {
        "overhead_ms_p50": {k: lat[k]["overhead"]["p50"] for k in SCENARIOS},
        "overhead_ms_p90": {k: lat[k]["overhead"]["p90"] for k in SCENARIOS},
        "ttft_ms_p50": {k: lat[k]["ttft"]["p50"] for k in SCENARIOS},
        "ttft_ms_p90": {k: lat[k]["ttft"]["p90"] for k in SCENARIOS},
        "server_ttft_ms": result["latency"]["config"]["server_ttft_ms"],
        "overhead_phases_ms_p50": {k: lat[k]["phases_p50_ms"] for k in SCENARIOS},
        "tokens_per_question_median": tokens,
        "tokens_per_question_mean": {k: wtq[v]["tokens_mean"] for k, v in WTQ_KEYS.items()},
        "prompt_overhead_tokens": prompt_overhead_tokens(),
        "answer_recall": recall,
        "wtq_questions": result["wtq"]["questions"],
        "extraction_f1": {"aeb": ex["aeb"]["f1"], "wcxb": ex["wcxb"]["f1"]},
        "extraction_f1_wcxb_by_type": {t: c["f1"] for t, c in ex["wcxb"]["by_type"].items()},
        "hotpot": {
            "questions": h["questions"],
            "tabs_median": h["tabs_median"],
            "tokens_per_question_median": h["tokens_median"],
            "answer_recall": h["answer_recall"],
            "build_ms_p50": h["build_ms"]["median"],
        },
        "pass1_rate": p["pass1_rate"],
        "pass1": {k: p[k] for k in ("model", "questions", "text_in_pass1", "browser_escalated", "correct_rate")},
        "pass2_cost": p["pass2_cost"],
        "pass2_input_tokens": p["pass2_input_tokens"],
    }
    if offline := result.get("offline"):
        summary["offline"] = offline_headline(offline)
    if cited := result.get("citations"):
        summary["citations"] = cited["summary"]["all"]
    if r := result.get("realistic"):
        summary["realistic"] = {
            "questions": r["single"]["questions"], "comparisons": r["comparisons"]["questions"],
            **{k: {"recall": r["single"][k]["recall"], "tokens_median": r["single"][k]["tokens_median"],
                   "comparisons_recall": r["comparisons"][k]["recall"]} for k in ("chatagent", "whole", "head")},
            "by_type": {t: v["chatagent"]["recall"] for t, v in r["by_type"].items()},
        }
    if (w := result.get("whole_page")) and "skipped" not in w:
        summary["whole_page"] = whole_page_headline(w)
    elif w:
        summary["whole_page"] = {"skipped": w["skipped"]}
    if m := result.get("many_tabs"):
        summary["many_tabs"] = many_tabs_headline(m)
    if local := result.get("local_model"):
        summary["local_model"] = local.get("summary") or {"skipped": local.get("skipped")}
    if real := result.get("real_model"):
        summary["real_model"] = {
            "model": real["config"]["model"],
            "ttft_ms_p50": {k: s["ttft"]["p50"] for k, s in real["scenarios"].items()},
            "local_ms_p50": {k: s["local"]["p50"] for k, s in real["scenarios"].items()},
        }
    goals: dict[str, Any] = {}
    labels = {"warm_1tab": "warm, 1 tab", "cold_1tab": "cold, 1 tab", "cold_10tab": "cold, 10 tabs"}
    for k in SCENARIOS:
        v = summary["overhead_ms_p50"][k]
        goals[f"overhead_{k}"] = _goal(f"overhead p50, {labels[k]}", f"≤ {GOALS_MS[k]:g} ms", f"{v:.1f} ms",
                                       v <= GOALS_MS[k], v)
    share = tokens["chatagent"] / tokens["full_text"] if tokens["full_text"] else math.inf
    goals["tokens_vs_full_text"] = _goal(
        "WTQ tokens per question (median), share of the whole page text", f"≤ {TOKEN_SHARE_GOAL:.0%}",
        f"{share:.0%} ({tokens['chatagent']:,.0f} of {tokens['full_text']:,.0f})", share <= TOKEN_SHARE_GOAL, share,
    )
    gap = recall["full_text"] - recall["chatagent"]
    goals["recall_vs_full_text"] = _goal(
        "WTQ answer recall, below the whole page text's", f"≤ {RECALL_SLACK:.2f}",
        f"{gap:+.3f} ({recall['chatagent']:.3f} vs {recall['full_text']:.3f})", gap <= RECALL_SLACK, gap,
    )
    if r := result.get("realistic"):
        goals.update(realistic_goals(r))
    if (w := result.get("whole_page")) and "skipped" not in w:
        goals.update(whole_page_goals(w))
    if m := result.get("many_tabs"):
        goals.update(many_tabs_goals(m))
    if (g := local_goal(result.get("local_model", {}))) is not None:
        goals["local_model_ttft"] = g
    for n, row in result.get("e2e", {}).get("rows", {}).items():
        r = row["ratio"]["p50"]
        goals[f"e2e_cold_{n}tab"] = _goal(
            f"whole-process first token, `chatagent ask` / minimal script, cold, {plural(int(n), 'tab')} "
            "(median per-pair ratio)", f"≤ {row['goal_ratio']:g}", f"{r:.2f}", bool(row["goal_met"]), r,
        )
        if warm := row.get("daemon"):
            extra = warm["overhead"]["p50"]
            goals[f"e2e_warm_{n}tab"] = _goal(
                f"whole-process first token of `chatagent ask` with a warm daemon, {plural(int(n), 'tab')}: "
                "above the model's own TTFT (median)", f"≤ {warm['goal_overhead_ms']:g} ms", f"{extra:,.0f} ms",
                bool(warm["goal_met"]), extra,
            )
    if (scale := result.get("scale")) and "goals" in scale:
        clients = scale["config"]["clients"]
        for k, g in scale["goals"].items():
            goals[f"scale: {k}"] = _goal(f"MCP replicas behind HAProxy, {clients} clients, {k}", g["target"],
                                         g["measured"], g["met"], float(g["met"]))
    summary["goals"] = goals
    return summary


# ---------------------------------------------------------------- outputs




def write_outputs(result: dict[str, Any], out: Path) -> dict[str, Path]:
    from .plots import plot_overhead, plot_tokens_recall, plot_ttft
    from .context_bench import WTQ_CONFIGS

    out.mkdir(parents=True, exist_ok=True)
    files = {
        "ttft": plot_ttft(result["latency"], out / "ttft.png"),
        "overhead": plot_overhead(result["latency"], out / "overhead.png"),
        "tokens_recall": plot_tokens_recall(result["wtq"], out / "tokens_recall.png", dict(WTQ_CONFIGS),
                                            highlight=tuple(WTQ_KEYS.values())),
    }
    if real := result.get("real_model"):
        files["ttft_real"] = plot_ttft(real, out / "ttft_real.png")
    (out / "report.md").write_text(markdown_report(result, {k: p.name for k, p in files.items()}), encoding="utf-8")
    files["report"] = out / "report.md"
    (out / "results.json").write_text(json.dumps(finite(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    files["results"] = out / "results.json"
    return files


async def run_bench(args: argparse.Namespace) -> int:
    plan = Plan.from_args(args)
    err = Console(stderr=True, highlight=False)
    if not getattr(args, "verbose", 0):
        # Benchmark pages include empty and odd ones on purpose; trafilatura's
        # warnings about them would only break up the progress bar.
        logging.getLogger("trafilatura").setLevel(logging.ERROR)
    raw = await measure(plan, err)
    config = {**asdict(plan), "data_dir": str(plan.data_dir), "model": plan.model or "extractive",
              "samples": _describe_samples(plan), "server_ttft_ms": SERVER_TTFT_MS, "tokens_per_s": TOKENS_PER_S}
    result = {"config": config, **raw}
    result["summary"] = summarise(result)
    files = write_outputs(result, Path(args.out))
    print_summary(result, Console(highlight=False))
    err.print(Text(f"{result['wall_s']:.0f} s; wrote " + ", ".join(str(p) for p in files.values()), style="dim"))
    return 0


def _describe_samples(plan: Plan) -> str:
    def n(x: int | None, what: str) -> str:
        return f"{'all' if x is None else x} {what}"

    return ", ".join([
        f"latency {plan.reps} reps" + (" over the fixture pages" if plan.latency_fixtures else ""),
        n(plan.wtq_pages, "WTQ pages"), n(plan.aeb_pages, "AEB pages"), n(plan.wcxb_pages, "WCXB pages"),
        n(plan.hotpot_questions, "HotpotQA questions"), n(plan.realistic_questions, "realistic questions"),
        n(plan.whole_page_pages, "whole-page pages"),
        f"{'all' if plan.pass1_questions is None else f'up to {plan.pass1_questions}'} pass-1 questions per kind",
        f"offline answers: {plan.offline.describe()}",
        f"end to end {plan.e2e_pairs} pairs per tab count ({', '.join(map(str, plan.e2e_tabs))} tabs)",
    ])
