"""Paired comparison of two models on the same cases: exact McNemar test and a bootstrap CI.

Two models' success rates on 8 or 100 cases differ by chance far more than by one item's
worth; comparing them case by case (who solved what the other did not) uses the pairing
the suites give for free, because every model sees the same cases. The verdict is
"better"/"worse" only when the exact test says p < 0.05 AND the paired bootstrap 95% CI of the
difference excludes 0; otherwise "too close to call".

    compare(suite_json_base, suite_json_other).verdict   # is `other` better than `base`?

Per-episode values come from `details.episodes` (`case_id`, `success`) of live_qa, variant_qa
and faults, or `details.prompts` (`key`, all `strict`) of general_if. Cases are matched by id
(the k-th occurrence of an id with the k-th); different cases are refused with ValueError.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from math import comb
from typing import Any

BETTER, WORSE, CLOSE = "better", "worse", "too close to call"
ALPHA = 0.05
RESAMPLES = 2000
SEED = 0

Items = list[tuple[str, float]]
"""(case key, value) per episode, in suite order."""


@dataclass(frozen=True)
class Paired:
    """`other` against `base` on n matched cases; diff = other - base."""

    n: int
    base_rate: float
    other_rate: float
    diff: float
    lo: float
    hi: float
    other_only: int
    """Cases where other did better than base (for booleans: other succeeded, base failed)."""
    base_only: int
    p: float
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact binomial test of wins vs losses at 1/2 (ties dropped): McNemar's exact
    test when these are the discordant pairs."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail: float = sum(comb(n, k) for k in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap_ci(diffs: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """Percentile 95% CI of the mean paired difference, resampling cases (fixed seed)."""
    n = len(diffs)
    if n == 0:
        return 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[max(0, int(0.975 * resamples) - 1)]


def compare_values(base: Sequence[float], other: Sequence[float]) -> Paired:
    """Paired values (same order = same case); for 0/1 values this is McNemar's test."""
    if len(base) != len(other):
        raise ValueError(f"paired values differ in length ({len(base)} vs {len(other)})")
    if not base:
        raise ValueError("no cases to compare")
    diffs = [o - b for b, o in zip(base, other, strict=True)]
    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    p = sign_test_p(wins, losses)
    lo, hi = bootstrap_ci(diffs)
    verdict = CLOSE
    if p < ALPHA and lo > 0:
        verdict = BETTER
    elif p < ALPHA and hi < 0:
        verdict = WORSE
    n = len(diffs)
    return Paired(n, sum(base) / n, sum(other) / n, sum(diffs) / n, lo, hi, wins, losses, p, verdict)


def items(suite: Mapping[str, Any]) -> Items:
    """Per-episode success (1/0) by case id from a suite result's JSON; ValueError when it has
    no per-episode records."""
    details = suite.get("details") or {}
    name = suite.get("suite", "?")
    episodes, prompts = details.get("episodes"), details.get("prompts")
    if isinstance(episodes, list) and episodes and all("success" in e for e in episodes):
        return [(str(e.get("case_id", i)), float(bool(e["success"]))) for i, e in enumerate(episodes)]
    if isinstance(prompts, list) and prompts:  # general_if: a prompt passes when every instruction does
        return [(str(r.get("key", i)), float(bool(r.get("strict")) and all(r["strict"])))
                for i, r in enumerate(prompts)]
    raise ValueError(f"suite '{name}' has no per-episode success records to pair")


def _keyed(xs: Items) -> dict[tuple[str, int], float]:
    seen: dict[str, int] = {}
    out = {}
    for key, value in xs:
        seen[key] = seen.get(key, -1) + 1
        out[(key, seen[key])] = value
    return out


def align(base: Items, other: Items) -> tuple[list[float], list[float]]:
    """The two value lists in one case order; ValueError naming cases only one side has."""
    a, b = _keyed(base), _keyed(other)
    if a.keys() != b.keys():
        only_a = sorted(k for k, _ in a.keys() - b.keys())
        only_b = sorted(k for k, _ in b.keys() - a.keys())
        raise ValueError(f"not the same cases: {len(only_a)} only in the first (e.g. {only_a[:3]}), "
                         f"{len(only_b)} only in the second (e.g. {only_b[:3]}); compare results of "
                         "the same suite, n and seed")
    keys = list(a)
    return [a[k] for k in keys], [b[k] for k in keys]


def compare(base: Mapping[str, Any], other: Mapping[str, Any]) -> Paired:
    """Per-episode success of `other` against `base`: two result JSONs of the same suite."""
    if base.get("suite") != other.get("suite"):
        raise ValueError(f"different suites: '{base.get('suite')}' vs '{other.get('suite')}'")
    return compare_values(*align(items(base), items(other)))


def drops(live: Mapping[str, Any], variant: Mapping[str, Any]) -> Items:
    """Per case: live_qa success - variant_qa success of one model (its variant drop)."""
    a, b = align(items(live), items(variant))
    keys = [key for key, _ in _keyed(items(live))]
    return [(k, x - y) for k, x, y in zip(keys, a, b, strict=True)]
