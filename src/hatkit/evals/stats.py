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


def mean_interval(values: Sequence[float], resamples: int = 2000,
                  seed: int = 0) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean with a percentile-bootstrap 95% interval (fixed seed); the
    think-length claims need an interval, not a bare mean."""
    from .paired import bootstrap_ci

    if not values:
        return 0.0, 0.0, 0.0
    lo, hi = bootstrap_ci(values, resamples, seed)
    return sum(values) / len(values), lo, hi


def mean_difference(before: Sequence[float], after: Sequence[float], resamples: int = 2000,
                    seed: int = 0) -> tuple[float, float, float]:
    """(mean(after) - mean(before), lo, hi) with a two-sample percentile-bootstrap 95% interval.
    Unpaired: the two models make different numbers of calls on the same cases, so calls cannot
    be matched one to one."""
    import random

    if not before or not after:
        raise ValueError("no values to compare")
    rng = random.Random(seed)
    a, b = list(before), list(after)

    def resampled(xs: list[float]) -> float:
        return sum(xs[rng.randrange(len(xs))] for _ in xs) / len(xs)

    diffs = sorted(resampled(b) - resampled(a) for _ in range(resamples))
    return (sum(b) / len(b) - sum(a) / len(a), diffs[int(0.025 * resamples)],
            diffs[max(0, int(0.975 * resamples) - 1)])
