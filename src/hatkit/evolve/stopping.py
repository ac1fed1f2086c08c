"""Early stopping: when to stop editing the harness.

Three rules, checked after each round (the first that fires is the reason): no improvement
for `patience` rounds; the marginal gain of the last round at or below `min_gain`; the
remaining errors a sparse long tail (every cluster smaller than `min_cluster`), where
further fixes mostly over-fit single cases and cause cross-category regressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .diagnose import Diagnosis


@dataclass(frozen=True)
class StopRules:
    patience: int = 2
    """Stop after this many consecutive rounds without a released edit."""
    min_gain: float = 0.0
    """A released edit must gain more than this (dev pass rate); a round gaining no more
    than this counts as no improvement."""
    min_cluster: int = 2
    """Stop when every remaining failure cluster has fewer errors than this."""
    max_rounds: int = 10
    """Hard cap on rounds."""


def should_stop(rules: StopRules, gains: Sequence[float | None], diagnosis: Diagnosis | None,
                ) -> str | None:
    """A reason to stop, or None. `gains[i]` is round i's released gain (None: none released)."""
    if diagnosis is not None:
        if diagnosis.n_failures == 0:
            return "no failures left on dev"
        if all(c.count < rules.min_cluster for c in diagnosis.clusters):
            return (f"sparse long tail: every failure cluster has fewer than {rules.min_cluster} "
                    f"errors ({len(diagnosis.clusters)} clusters, {diagnosis.n_failures} errors)")
    if len(gains) >= rules.max_rounds:
        return f"reached max_rounds={rules.max_rounds}"
    tail = list(gains[-rules.patience:]) if rules.patience > 0 else []
    if rules.patience > 0 and len(tail) == rules.patience and all(
            g is None or g <= rules.min_gain for g in tail):
        return f"no improvement for {rules.patience} round(s) (marginal gain <= {rules.min_gain})"
    return None
