"""Diagnose: cluster the failures of a dev run by question category and error type.

A cluster is what a proposer answers with one edit, so it carries the count, the most
common concrete detail (e.g. `unknown_tool:get_promos`) and a few example trace ids a human
(or an LLM proposer) can open.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .evaluate import EvalResult


@dataclass(frozen=True)
class Cluster:
    key: str
    """'<category>/<error_type>'."""
    category: str
    error_type: str
    count: int
    details: dict[str, int] = field(default_factory=dict)
    """Concrete causes and how often each occurred (most common first)."""
    examples: list[str] = field(default_factory=list)
    """Up to five failing trace ids."""
    evidence: list[str] = field(default_factory=list)
    """Failing evidence lines from the first examples."""

    @property
    def top_detail(self) -> str:
        return next(iter(self.details), "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Diagnosis:
    harness_hash: str
    n: int
    pass_rate: float
    by_category: dict[str, float]
    clusters: list[Cluster]
    """Largest first."""

    @property
    def n_failures(self) -> int:
        return sum(c.count for c in self.clusters)

    def to_dict(self) -> dict[str, Any]:
        return {"harness_hash": self.harness_hash, "n": self.n, "pass_rate": self.pass_rate,
                "by_category": self.by_category, "clusters": [c.to_dict() for c in self.clusters]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Diagnosis:
        return cls(d["harness_hash"], int(d["n"]), float(d["pass_rate"]), dict(d["by_category"]),
                   [Cluster(**c) for c in d["clusters"]])


def diagnose(result: EvalResult) -> Diagnosis:
    groups: dict[tuple[str, str], list[Any]] = {}
    for e in result.failures():
        groups.setdefault((e.category, e.error_type), []).append(e)
    clusters = []
    for (cat, kind), eps in groups.items():
        details = Counter(e.detail for e in eps)
        clusters.append(Cluster(
            key=f"{cat}/{kind}", category=cat, error_type=kind, count=len(eps),
            details=dict(details.most_common()), examples=[e.trace_id for e in eps[:5]],
            evidence=[line for e in eps[:2] for line in e.evidence[:2]]))
    clusters.sort(key=lambda c: (-c.count, c.key))
    return Diagnosis(result.harness_hash, result.n, round(result.pass_rate, 4),
                     {k: round(v, 4) for k, v in result.by_category().items()}, clusters)
