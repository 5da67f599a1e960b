"""How benchmark results are shown: the machine they came from, the progress bar
while they run, the summary table at the end and the Markdown report.

`result` is what `benchmarks.suite.measure` returns (or its results.json,
loaded back); the section helpers skip whatever part a run did not measure.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

SCENARIOS = ("warm_1tab", "cold_1tab", "cold_10tab")
BASELINES = ("chatagent", "full_text", "head_truncation")


# ---------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine() -> dict[str, Any]:
    """What the figures depend on; the load average because other work on the machine skews them."""
    mem = 0.0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": round(mem, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def describe_machine(m: dict[str, Any]) -> str:
    text = f"{m['cpus']} CPUs ({m.get('cpu_model') or 'unknown CPU'}), {m['memory_gib']:g} GiB, Python {m['python']}"
    if m.get("browser"):
        text += f", Chromium {m['browser']}"
    if m.get("loadavg_at_start"):
        text += f"; load average {m['loadavg_at_start'][0]:.1f} at start, {m['loadavg'][0]:.1f} at end"
    return text


# ---------------------------------------------------------------- progress


def write_json(path: Path, result: dict[str, Any]) -> None:
    """A bench's figures as JSON (`--out`), its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<30}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


# ---------------------------------------------------------------- tables (shared by the terminal and Markdown)


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def _f3(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _n(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def plural(n: float, word: str) -> str:
    return f"{n:,.0f} {word}" + ("" if n == 1 else "s")


def _tick(ok: bool | None) -> str:
    return "" if ok is None else ("✓" if ok else "✗")


def goal_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[g["what"], g["target"], g["measured"], _tick(g["met"])] for g in summary.get("goals", {}).values()]


def latency_rows(latency: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, s in latency["scenarios"].items():
        goal = f"≤ {s['goal_p50_ms']:g} {_tick(s['goal_met'])}" if "goal_p50_ms" in s else ""
        rows.append([name, _ms(s["ttft"]["p50"]), _ms(s["ttft"]["p90"]), _ms(s["overhead"]["p50"]),
                     _ms(s["overhead"]["p90"]), goal, _ms(s["python_cpu"]["p50"])])
    return rows


def phase_rows(latency: dict[str, Any], phases: Sequence[str]) -> list[list[str]]:
    return [[name] + [_ms(s["phases_p50_ms"].get(p)) for p in phases] for name, s in latency["scenarios"].items()]


def real_model_rows(real: dict[str, Any], phases: Sequence[str]) -> list[list[str]]:
    return [
        [name, _ms(s["ttft"]["p50"]), _ms(s["ttft"]["p90"]), _ms(s["local"]["p50"]), _ms(s["model_and_network"]["p50"])]
        + [_ms(s["phases_p50_ms"].get(p)) for p in phases]
        for name, s in real["scenarios"].items()
    ]


def wtq_rows(wtq: dict[str, Any], labels: Sequence[tuple[str, str]]) -> list[list[str]]:
    return [
        [label, _f3(c["recall"]), _f3(c["recall_strict"]), _n(c["tokens_median"]), _n(c["tokens_p90"])]
        for key, label in labels
        if (c := wtq["configs"].get(key))
    ]


def extraction_rows(extraction: dict[str, Any]) -> list[list[str]]:
    rows = []
    for key, name, published in (("aeb", "AEB", "0.958"), ("wcxb", "WCXB test", "0.833")):
        if not (d := extraction.get(key)):
            continue
        rows.append([f"{name}, all", str(d["pages"]), _f3(d["precision"]), _f3(d["recall"]), _f3(d["f1"]),
                     _f3(d.get("snippet_pass_rate")), published])
        for ptype, c in d.get("by_type", {}).items():
            rows.append([f"  {ptype}", str(c["pages"]), _f3(c["precision"]), _f3(c["recall"]), _f3(c["f1"]),
                         _f3(c.get("snippet_pass_rate")), ""])
    return rows


def hotpot_rows(h: dict[str, Any]) -> list[list[str]]:
    return [
        [label, _n(h["tokens_median"][key]), _n(h["tokens_p90"][key]), _f3(h["answer_recall"].get(key))]
        for key, label in (("chatagent", "chatagent"), ("full_text", "text of every tab"), ("gold_only", "gold tabs only"))
    ]


def pass1_rows(p: dict[str, Any]) -> list[list[str]]:
    rows = []
    for kind, c in p["by_kind"].items():
        rows.append([kind, str(c["questions"]), _f3(c["pass1_rate"]), _f3(c["correct_rate"]),
                     f"{c['tool_calls_mean']:.1f}", f"{c['model_calls_mean']:.1f}",
                     _n(c["input_tokens_median"]), _ms(c["total_ms_median"])])
    return rows


def _pass2_cost(c: dict[str, Any]) -> str:
    if not c["questions"]:
        return "No question went to pass 2."
    ratio = c["input_tokens_ratio_to_pass1"]
    return (
        f"Pass-2 cost ({plural(c['questions'], 'question')}): {c['tool_calls_mean']:.1f} tool calls and "
        f"{c['model_calls_mean']:.1f} model calls per question, {_n(c['input_tokens_median'])} input tokens (median"
        + (f", {ratio:.1f}× a pass-1 answer's" if ratio else "") + f"), {c['total_ms_median']:.0f} ms end to end (median)."
    )


def _pass2_tokens(t: dict[str, Any], cost: list[dict[str, Any]]) -> str:
    if not t["n"]:
        return "No question went to pass 2."
    stops = ", ".join(f"{q['stop_reason']} after {q['tool_calls']} tool calls ({len(q['pages'])} tabs)" for q in cost)
    return (
        f"Input tokens per pass-2 question ({plural(t['n'], 'question')}, with {plural(len(cost), 'question')} "
        f"no page answers): median {_n(t['median'])}, p90 {_n(t['p90'])}, max {_n(t['max'])}."
        + (f" The unanswerable ones stopped: {stops}." if cost else "")
    )


PASS1_HEAD = ["questions", "n", "pass-1 rate", "answer found", "tool calls", "model calls", "input tokens p50", "total ms p50"]
EXTRACTION_HEAD = ["dataset", "pages", "precision", "recall", "F1", "snippet pass", "published trafilatura F1 (raw HTML)"]
LATENCY_HEAD = ["scenario", "TTFT p50", "TTFT p90", "overhead p50", "overhead p90", "goal (p50)", "CPU p50"]
WTQ_HEAD = ["context", "recall", "strict recall", "tokens p50", "tokens p90"]
HOTPOT_HEAD = ["context", "tokens p50", "tokens p90", "answer recall (entity answers)"]


# ---------------------------------------------------------------- terminal


def summary_table(result: dict[str, Any]) -> Table:
    s = result["summary"]
    t = Table(title=f"chatagent bench ({'quick' if result['config']['quick'] else 'full'}): goals")
    for col in ("what", "goal", "measured", "met"):
        t.add_column(col, justify="left" if col in ("what", "goal") else "right")
    for row in goal_rows(s):
        t.add_row(*row)
    return t


def figures_table(result: dict[str, Any]) -> Table:
    s = result["summary"]
    t = Table(title="headline figures")
    t.add_column("figure")
    for k in ("chatagent", "full_text", "head_truncation"):
        t.add_column(k, justify="right")
    t.add_row("WTQ answer recall", *(_f3(s["answer_recall"].get(k)) for k in BASELINES))
    t.add_row("WTQ tokens/question (median)", *(_n(s["tokens_per_question_median"].get(k)) for k in BASELINES))
    t.add_row("TTFT p50 ms: warm / cold 1 / cold 10", " / ".join(_ms(s["ttft_ms_p50"].get(k)) for k in SCENARIOS), "", "")
    t.add_row("overhead p50 ms", " / ".join(_ms(s["overhead_ms_p50"].get(k)) for k in SCENARIOS), "", "")
    if r := s.get("realistic"):
        t.add_row("side-panel questions: answer in the context", _f3(r["chatagent"]["recall"]),
                  _f3(r["whole"]["recall"]), _f3(r["head"]["recall"]))
        t.add_row("side-panel questions: tokens per tab (median)", _n(r["chatagent"]["tokens_median"]),
                  _n(r["whole"]["tokens_median"]), _n(r["head"]["tokens_median"]))
        t.add_row("two tabs: both answers in the context", _f3(r["chatagent"]["comparisons_recall"]),
                  _f3(r["whole"]["comparisons_recall"]), _f3(r["head"]["comparisons_recall"]))
    if m := s.get("many_tabs"):
        for total, v in m["many"].items():
            t.add_row(f"{m['tabs']} tabs, {int(total):,} tokens in all: answer in its tab's context",
                      _f3(v["recall"]), "", "")
    t.add_row("extraction F1: AEB / WCXB", f"{_f3(s['extraction_f1'].get('aeb'))} / {_f3(s['extraction_f1'].get('wcxb'))}", "", "")
    if h := s.get("hotpot"):
        t.add_row("HotpotQA tokens/question (median)", _n(h["tokens_per_question_median"]["chatagent"]),
                  _n(h["tokens_per_question_median"]["full_text"]), "")
    t.add_row("pass-1 rate", _f3(s["pass1_rate"]), "", "")
    c = s["pass2_cost"]
    if c["questions"]:
        t.add_row("pass 2: tool calls / model calls / input tokens", f"{c['tool_calls_mean']:.1f} / "
                  f"{c['model_calls_mean']:.1f} / {_n(c['input_tokens_median'])}", "", "")
    if real := s.get("real_model"):
        t.add_row(f"TTFT p50 ms, {real['model']}", " / ".join(_ms(real["ttft_ms_p50"].get(k)) for k in SCENARIOS), "", "")
    return t


def offline_table(result: dict[str, Any]) -> Table:
    """The offline model's headline figures (`offline.headline`)."""
    o = result["summary"]["offline"]
    t = Table(title=f"offline answers (extractive), {o['wtq_questions']:,} WTQ questions")
    t.add_column("figure")
    t.add_column("measured", justify="right")
    kinds = o["wtq_answer_has_by_kind"]
    splits = o["wtq_answer_has_by_split"]
    t.add_row("WTQ: answer holds the answer / context holds it",
              f"{_f3(o['wtq_answer_has'])} / {_f3(o['wtq_context_has'])}")
    t.add_row("  by kind: " + " / ".join(kinds), " / ".join(_f3(v) for v in kinds.values()))
    t.add_row("  tune / held-out", " / ".join(_f3(v) for v in splits.values()))
    t.add_row("WTQ answer words (median)", _n(o["wtq_words_median"]))
    de = o["hotpot_deciding_evidence"]
    t.add_row(f"HotpotQA: deciding evidence from both gold tabs ({o['hotpot_both_gold']} questions), "
              "2 tabs / all tabs", " / ".join(_f3(v) for v in de.values()))
    t.add_row("two laptops: answered from both tabs in pass 1",
              f"{o['laptops_both_tabs_pass1']} of {o['laptops_questions']}")
    return t


def print_summary(result: dict[str, Any], console: Console) -> None:
    console.print(figures_table(result))
    if "offline" in result["summary"]:
        console.print(offline_table(result))
    console.print(summary_table(result))


# ---------------------------------------------------------------- Markdown


def report_run(
    run: Coroutine[Any, Any, dict[str, Any]], print_report: Callable[[dict[str, Any], Console], None],
    err: Console, out: Path | None, *, failures: tuple[type[Exception], ...], console: Console | None = None,
) -> int:
    """A benchmark's `main` once its arguments are read: `run` it, print its report (stdout) and
    wall time (stderr), write its figures to `out` as JSON; 1, said in words, on one of `failures`."""
    try:
        result = asyncio.run(run)
    except failures as exc:
        err.print(f"error: {exc}")
        return 1
    print_report(result, console or Console())
    err.print(f"total {result['wall_s']:.0f} s")
    if out:
        write_json(out, result)
    return 0


def print_with_goals(title: str, head: Sequence[str], rows: Sequence[Sequence[str]],
                     goals: dict[str, dict[str, Any]], console: Console) -> None:
    """A benchmark's table (first column left, the figures right), then each goal met or not."""
    t = Table(title=title)
    for i, col in enumerate(head):
        t.add_column(col, justify="left" if i == 0 else "right", no_wrap=i > 0)
    for row in rows:
        t.add_row(*row)
    console.print(t)
    for g in goals.values():
        console.print(f"{'✓' if g['met'] else '✗'} {g['what']}: {g['measured']} (goal {g['target']})")


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown_report(result: dict[str, Any], plots: dict[str, str]) -> str:
    """The report as Markdown: every table of the run, with the plots linked by file name."""
    from .latency import PHASES, REAL_PHASES
    from .context_bench import WTQ_CONFIGS

    cfg, s = result["config"], result["summary"]
    out = [
        f"# chatagent bench ({'quick' if cfg['quick'] else 'full'} run)",
        "",
        f"Machine: {describe_machine(result['machine'])}.  ",
        f"Wall time {result['wall_s']:.0f} s. Model for the pass-1 set: `{cfg['model']}`. "
        f"Token budget {cfg['budget']:,} per tab. Samples: {cfg['samples']}.",
        "",
        "## Goals",
        "",
        md_table(["what", "goal", "measured", "met"], goal_rows(s)),
    ]
    if lat := result.get("latency"):
        c = lat["config"]
        out += [
            "", "## Latency: question → first answer token", "",
            f"Real Gemini client against the local Gemini-compatible server (model TTFT {c['server_ttft_ms']:g} ms, "
            f"{c['tokens_per_s']:g} tokens/s), {plural(c['reps'], 'repetition')} per scenario, "
            f"{plural(len(c['pages']), 'page')}. "
            "Overhead = measured TTFT − the server's own TTFT for that request (ms).", "",
            md_table(LATENCY_HEAD, latency_rows(lat)), "",
            "Overhead by phase (per-phase medians, ms):", "",
            md_table(["scenario", *PHASES], phase_rows(lat, PHASES)),
        ]
        if "ttft" in plots:
            out += ["", f"![TTFT per scenario]({plots['ttft']})", f"![Overhead by phase]({plots['overhead']})"]
    if real := result.get("real_model"):
        out += [
            "", f"### Against the real service: `{real['config']['model']}`", "",
            "The service's own TTFT is not observable, so the time is split into what happens here "
            "before the request (`local`) and the rest (`model + network`), ms:", "",
            md_table(["scenario", "TTFT p50", "TTFT p90", "local p50", "model + network p50", *REAL_PHASES],
                      real_model_rows(real, REAL_PHASES)),
        ]
        if "ttft_real" in plots:
            out += ["", f"![TTFT against the real service]({plots['ttft_real']})"]
    if wtq := result.get("wtq"):
        out += [
            "", f"## Token cost and answer recall: WikiTableQuestions ({plural(wtq['questions'], 'question')}, "
            f"{plural(wtq['pages'], 'page')})", "",
            "Tokens of the page text sent per question, and the share of questions whose answer is in it "
            "(normalised substring; strict = whole tokens). Same snapshot, tokenizer and matcher for every row. "
            f"The prompt around the text (system prompt, delimiters) adds about {s['prompt_overhead_tokens']} "
            "tokens per question whatever the text.", "",
            md_table(WTQ_HEAD, wtq_rows(wtq, WTQ_CONFIGS)),
        ]
        if "tokens_recall" in plots:
            out += ["", f"![Tokens vs recall]({plots['tokens_recall']})"]
    if r := result.get("realistic"):
        from .realistic import markdown_section as realistic_section

        out += ["", f"## Pages of every kind: side-panel questions ({plural(r['single']['questions'], 'question')}, "
                f"{plural(r['comparisons']['questions'], 'comparison')})", "", realistic_section(r).rstrip()]
    if (w := result.get("whole_page")) and "skipped" not in w:
        from .whole_page import markdown_section as whole_page_section

        out += ["", f"## Whole-page requests ({plural(w['pages'], 'long page')})", "", whole_page_section(w).rstrip()]
    if m := result.get("many_tabs"):
        from .many_tabs import markdown_section as many_tabs_section

        out += ["", f"## Many tabs ({plural(m['questions'], 'question')}, {m['tabs']} tabs each)", "",
                many_tabs_section(m).rstrip()]
    if ex := result.get("extraction"):
        out += [
            "", "## Extraction quality (word F1, through headless Chromium, for information)", "",
            md_table(EXTRACTION_HEAD, extraction_rows(ex)),
        ]
    if h := result.get("hotpot"):
        out += [
            "", f"## Multi-tab: HotpotQA comparison questions ({plural(h['questions'], 'question')}, "
            f"{h['tabs_median']:.0f} tabs each: the gold pages + distractors)", "",
            md_table(HOTPOT_HEAD, hotpot_rows(h)), "",
            f"The data holds both gold paragraphs for {h['gold_tabs']['2']} of these questions, one for "
            f"{h['gold_tabs']['1']} and none for {h['gold_tabs']['0']}; `gold tabs only` is what it has. "
            f"Gold paragraphs' words kept in chatagent's context: {h['gold_word_recall']:.3f}. "
            f"`ContextBuilder.build` over all tabs, cold: median {h['build_ms']['median']:.0f} ms, "
            f"p90 {h['build_ms']['p90']:.0f} ms. {h['yes_no']} yes/no answers are left out of the recall.",
        ]
    if p := result.get("pass1"):
        out += [
            "", f"## Pass-1 rate ({plural(p['questions'], 'fixture question')}, model `{p['model']}`)", "",
            f"Pass-1 rate {p['pass1_rate']:.3f}: text questions answered in pass 1 {p['text_in_pass1']:.3f}, "
            f"questions that need the browser sent to pass 2 {p['browser_escalated']:.3f}.", "",
            md_table(PASS1_HEAD, pass1_rows(p)), "",
            _pass2_cost(p["pass2_cost"]), "",
            _pass2_tokens(p["pass2_input_tokens"], p["cost_questions"]), "",
            md_table(["question", "needs", "pass", "tool calls", "model calls", "input tokens", "answer found"],
                      [[q["question"], q["needs"], str(q["pass"]), str(q["tool_calls"]), str(q["model_calls"]),
                        _n(q["input_tokens"]), _tick(q["correct"])] for q in p["questions_detail"]]),
        ]
    if o := result.get("offline"):
        from .offline import markdown_section

        out += ["", "## Offline answers: the `extractive` model (`python -m benchmarks.offline`)", "",
                markdown_section(o).rstrip()]
    if e := result.get("e2e"):
        from .e2e import markdown_section as e2e_section

        out += ["", "## End to end: `chatagent ask` against a minimal script (`python -m benchmarks.e2e`)", "",
                e2e_section(e).rstrip()]
    if m := result.get("mcp"):
        from .mcp_bench import report as mcp_report

        out += ["", "## `chatagent mcp`: read_pages against Playwright MCP's page snapshot", "", mcp_report(m)]
    if sc := result.get("scale"):
        from .scale import report as scale_report

        out += ["", "## `chatagent mcp` replicas behind HAProxy, under load (`python -m benchmarks.scale`)", "",
                scale_report(sc)]
    if local := result.get("local_model"):
        from .local_model import report as local_report

        out += ["", "## A real local model: time to first token by the page text sent", "", local_report(local)]
    return "\n".join(out) + "\n"


def rich_table(title: str, head: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A report's table for the terminal: its first column left, the figures right."""
    t = Table(title=title)
    for i, col in enumerate(head):
        t.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    return t
