"""Small statistics shared by the lengths and latency suites."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between ranks (numpy's default);
    0.0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(prefix: str, values: Sequence[float]) -> dict[str, float]:
    """{prefix_mean, prefix_p50, prefix_p95}."""
    return {f"{prefix}_mean": sum(values) / len(values) if values else 0.0,
            f"{prefix}_p50": percentile(values, 50), f"{prefix}_p95": percentile(values, 95)}
