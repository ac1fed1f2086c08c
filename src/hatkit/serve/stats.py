"""Small statistics helpers of the latency benchmarks."""

from __future__ import annotations

from collections.abc import Sequence


def pct(xs: Sequence[float], q: float) -> float:
    """Percentile by linear interpolation (q in 0..100)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
