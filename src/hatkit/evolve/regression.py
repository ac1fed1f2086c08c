"""Regression check: a candidate must not drop any category of the fixed regression set by
more than a threshold, even when its total rises (long-tail fixes that break another
category are the failure mode the published system reports)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RegressionReport:
    passed: bool
    threshold: float
    total_delta: float
    category_deltas: dict[str, float]
    drops: dict[str, float] = field(default_factory=dict)
    """Categories that fell by more than the threshold, with their deltas."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def category_deltas(base: Mapping[str, float], cand: Mapping[str, float]) -> dict[str, float]:
    """Per-category pass-rate change (categories missing on one side count as 0)."""
    return {k: round(cand.get(k, 0.0) - base.get(k, 0.0), 4) for k in sorted(base.keys() | cand.keys())}


def check_regression(base: Mapping[str, Any], cand: Mapping[str, Any], threshold: float,
                     ) -> RegressionReport:
    """Compare two `EvalResult.summary()`s of the same question set; `threshold` is a
    pass-rate drop (0.05 = five points) beyond which a category counts as regressed."""
    deltas = category_deltas(base["by_category"], cand["by_category"])
    drops = {k: d for k, d in deltas.items() if d < -threshold}
    return RegressionReport(not drops, threshold, round(cand["pass_rate"] - base["pass_rate"], 4),
                            deltas, drops)
