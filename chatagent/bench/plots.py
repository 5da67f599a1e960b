"""Plots of `chatagent.bench.latency` results (matplotlib, Agg backend: no display needed).

    from chatagent.bench.plots import plot_ttft, plot_overhead
    plot_ttft(results, "ttft.png"); plot_overhead(results, "overhead.png")

`results` is what `run_latency` returns (or its JSON, loaded back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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
    server = results["config"]["server_ttft_ms"]
    ax.axhline(server, color="#e15759", linestyle="--", linewidth=1)
    ax.text(0.55, server, f" server TTFT {server:g} ms", color="#e15759", va="bottom", fontsize=8)
    for i, (name, s) in enumerate(scen, 1):
        goal = s.get("goal_p50_ms")
        if goal is not None:
            ax.hlines(server + goal, i - 0.3, i + 0.3, color="#59a14f", linewidth=1.5)
    ax.set_ylabel("time to first token (ms)")
    ax.set_title(
        f"Question → first token (server TTFT {server:g} ms, {results['config']['reps']} reps; "
        "green: server TTFT + overhead goal)", fontsize=9
    )
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


def _save(fig: Any, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
