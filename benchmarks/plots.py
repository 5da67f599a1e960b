"""Plots of benchmark results (matplotlib, Agg backend: no display needed).

    from benchmarks.plots import plot_ttft, plot_overhead, plot_tokens_recall
    plot_ttft(latency, "ttft.png"); plot_overhead(latency, "overhead.png")
    plot_tokens_recall(wtq, "tokens_recall.png")

`latency` is what `run_latency` returns, `wtq` what `summarise_wtq` returns
(or their JSON, loaded back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

PHASE_COLOURS = {
    "snapshot": "#4e79a7",
    "extraction": "#f28e2b",
    "budget": "#e15759",
    "prompt": "#76b7b2",
    "client_http": "#59a14f",
    "other": "#bab0ac",
}


def _scenarios(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return list(results["scenarios"].items())


def plot_ttft(results: dict[str, Any], path: str | Path) -> Path:
    """TTFT per question, per scenario: box plot plus the individual points, with the server's TTFT as a line."""
    scen = _scenarios(results)
    names = [n for n, _ in scen]
    data = [s["ttft_ms"] for _, s in scen]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(names) + 2), 4.5))
    try:
        ax.boxplot(data, tick_labels=names, showfliers=False, widths=0.5)
    except TypeError:  # matplotlib < 3.9
        ax.boxplot(data, labels=names, showfliers=False, widths=0.5)
    for i, ys in enumerate(data, 1):
        xs = [i + 0.12 * ((j % 5) - 2) / 2 for j in range(len(ys))]
        ax.scatter(xs, ys, s=14, alpha=0.7, color="#4e79a7", zorder=3)
    server = results["config"].get("server_ttft_ms")
    reps = results["config"]["reps"]
    if server is None:  # a real service: its own TTFT is unknown
        ax.set_title(f"Question → first token, {results['config']['model']} ({reps} reps)", fontsize=9)
    else:
        ax.axhline(server, color="#e15759", linestyle="--", linewidth=1)
        ax.text(0.55, server, f" server TTFT {server:g} ms", color="#e15759", va="bottom", fontsize=8)
        for i, (name, s) in enumerate(scen, 1):
            goal = s.get("goal_p50_ms")
            if goal is not None:
                ax.hlines(server + goal, i - 0.3, i + 0.3, color="#59a14f", linewidth=1.5)
        ax.set_title(
            f"Question → first token (server TTFT {server:g} ms, {reps} reps; "
            "green: server TTFT + overhead goal)", fontsize=9
        )
    ax.set_ylabel("time to first token (ms)")
    ax.set_ylim(bottom=0)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
    return _save(fig, path)


def plot_overhead(results: dict[str, Any], path: str | Path) -> Path:
    """Stacked bar per scenario: the mean time of each phase of the overhead (TTFT − server TTFT),
    with the median overhead and the goal marked."""
    scen = _scenarios(results)
    names = [n for n, _ in scen]
    phases = list(PHASE_COLOURS)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(names) + 2), 4.5))
    bottoms = [0.0] * len(scen)
    for phase in phases:
        heights = [s["phases_mean_ms"].get(phase, 0.0) for _, s in scen]
        ax.bar(names, heights, bottom=bottoms, label=phase, color=PHASE_COLOURS[phase], width=0.6)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for i, (_, s) in enumerate(scen):
        ax.plot([i - 0.3, i + 0.3], [s["overhead"]["p50"]] * 2, color="black", linewidth=1.2)
        goal = s.get("goal_p50_ms")
        if goal is not None:
            ax.plot([i - 0.3, i + 0.3], [goal] * 2, color="#59a14f", linewidth=1.5, linestyle="--")
    ax.set_ylabel("overhead (ms)")
    ax.set_title("Overhead by phase (bars: means; black: median overhead; green dashed: goal)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
    return _save(fig, path)


def plot_tokens_recall(
    wtq: dict[str, Any], path: str | Path, labels: dict[str, str] | None = None, highlight: tuple[str, ...] = ()
) -> Path:
    """Median tokens sent per question against answer recall, one point per context
    configuration (the `highlight`ed ones larger), with the goal relative to the
    whole page text shaded: at most half its tokens, at most 0.02 less recall."""
    configs = wtq["configs"]
    labels = labels or {k: k for k in configs}
    colours = ["#e15759", "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#bab0ac"]
    markers = ["o", "s", "D", "^", "v", "P", "X", "*"]
    fig, ax = plt.subplots(figsize=(9.5, 4.8))
    for i, (key, c) in enumerate(configs.items()):
        ax.scatter(c["tokens_median"], c["recall"], s=90 if key in highlight else 40, zorder=3,
                   color=colours[i % len(colours)], marker=markers[i % len(markers)],
                   edgecolors="black" if key in highlight else "none", label=labels.get(key, key))
    xmax = max(c["tokens_median"] for c in configs.values()) * 1.1 or 1.0
    if full := configs.get("full_text"):
        x, y = full["tokens_median"] * 0.5, full["recall"] - 0.02
        bottom, top = ax.get_ylim()
        top = max(top, y + 0.01)
        ax.add_patch(Rectangle((0, y), x, top - y, color="#59a14f", alpha=0.12, zorder=1, label="goal"))
        ax.set_ylim(min(bottom, y - 0.01), top)
    ax.set_xlim(0, xmax)
    ax.set_xlabel("tokens of page text per question (median)")
    ax.set_ylabel("answer recall (answer in the context sent)")
    ax.set_title(f"WikiTableQuestions, {wtq['questions']:,} questions: tokens vs answer recall\n"
                 "goal: ≤ 50% of the whole page text's tokens, recall no more than 0.02 below it", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside: never over a point
    return _save(fig, path)


def _save(fig: Any, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
