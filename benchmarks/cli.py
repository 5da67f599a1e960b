"""`chatagent bench`: registered with the chatagent CLI through the
`chatagent.commands` entry point, so the runtime package never imports the
benchmarks (they import it)."""

from __future__ import annotations

import argparse
from typing import Any

from chatagent.ask_args import budget as budget_arg
from chatagent.cli import model_arg
from chatagent.limits import DEFAULT_TAB_BUDGET


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="measure latency, token cost and answer quality on the evaluation data",
        description="Time to first token against the model's own, tokens per question and answer recall "
        "against the full-text and head-truncation baselines, extraction F1, multi-tab cost and the pass-1 rate.",
    )
    p.add_argument("--quick", action="store_true", help="a smaller sample that finishes in a few minutes")
    p.add_argument("--model", metavar="M", type=model_arg,
                   help="also time this model for real, e.g. gemini-2.5-flash with GOOGLE_API_KEY")
    p.add_argument("--out", metavar="DIR", default="bench-results",
                   help="where results.json, report.md and the plots go (default: bench-results)")
    p.add_argument("--reps", type=int, metavar="N", help="latency repetitions per scenario (default: 5 quick, 15 full)")
    p.add_argument("--data", metavar="DIR", default="../shared/data",
                   help="the evaluation data (default: ../shared/data)")
    p.add_argument("--budget", type=budget_arg, metavar="TOKENS", help=f"tokens per tab (default {DEFAULT_TAB_BUDGET})")
    # Items per dataset and pass-1 questions per kind: a tiny end-to-end run for the tests.
    p.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_bench)


async def cmd_bench(args: argparse.Namespace) -> int:
    from .suite import run_bench  # heavy imports (matplotlib, the data loaders): only when asked

    return await run_bench(args)
