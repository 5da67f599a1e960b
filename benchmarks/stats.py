"""The one percentile definition every benchmark reports with.

`quantile(xs, q)` is linear interpolation between the closest ranks: with the
`n` values sorted, position `(n - 1) * q` (counting from 0), interpolated
between its neighbours. This is `statistics.quantiles(method="inclusive")`,
numpy's default (`"linear"`) and R's type 7; its 0.5 quantile is exactly
`statistics.median` (the middle value, or the mean of the two middle ones).
p90 of a handful of reps therefore lies between the two largest values rather
than on one of them.

Every median, p50 and p90 in `chatagent bench`, its parts and their reports
comes from here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any


def quantile(xs: Iterable[float], q: float, *, default: float = math.nan) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of `xs`, as defined above; `default` for no data."""
    s = sorted(xs)
    if not s:
        return default
    k = (len(s) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(s) - 1)
    return float(s[lo] + (s[hi] - s[lo]) * (k - lo))


def median(xs: Iterable[float], *, default: float = math.nan) -> float:
    return quantile(xs, 0.5, default=default)


def summary(xs: Iterable[float]) -> dict[str, float]:
    """p50, p90, mean, min, max and n (NaN for the figures of no data)."""
    s = sorted(xs)
    nan = math.nan
    return {
        "p50": quantile(s, 0.5), "p90": quantile(s, 0.9), "mean": statistics.fmean(s) if s else nan,
        "min": s[0] if s else nan, "max": s[-1] if s else nan, "n": len(s),
    }


def finite(value: Any) -> Any:
    """`value` with NaN and infinity (not JSON) replaced by null, at any depth."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
