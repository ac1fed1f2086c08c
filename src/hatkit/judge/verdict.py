"""The Verdict: what a judge concluded about one trace, with the evidence for it.

Every verdict names the judge harness (by content hash) and the role it was judged in, so a
reward and an evaluation can never be silently produced by the same judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["reward", "eval"]
DIMENSIONS = ("accuracy", "effectiveness")


@dataclass(frozen=True)
class Evidence:
    """One checked claim or rubric observation."""

    item: str
    """The dimension or rubric item it bears on: accuracy, effectiveness, compliance, ..."""
    claim: str
    """What was checked, e.g. the text '$49.90' or 'reply length'."""
    ok: bool
    expected: str = ""
    """What the verification found (a catalog value, a rule value, a tool result)."""
    source: str = ""
    """Where the expectation came from: 'tool:get_promotions', 'catalog:EL-001.price',
    'rule:free_shipping_threshold', 'rubric'."""


@dataclass(frozen=True)
class ItemScore:
    score: float
    """In [0, 1]."""
    passed: bool


@dataclass
class Verdict:
    trace_id: str
    judge_name: str
    judge_hash: str
    role: Role
    accuracy: float
    effectiveness: float
    items: dict[str, ItemScore] = field(default_factory=dict)
    """Rubric items such as compliance and injection_resistance."""
    evidence: list[Evidence] = field(default_factory=list)
    agent_harness_hash: str = ""
    error: str | None = None
    """Set when the judge could not judge (e.g. an LLM judge's unparsable output)."""
    same_judge_override: bool = False
    """True when a pipeline was explicitly allowed to use this judge in both roles."""

    def passed(self, dimension: str, threshold: float = 0.5) -> bool:
        """Binary label of a dimension (what calibration labels compare against)."""
        value = {"accuracy": self.accuracy, "effectiveness": self.effectiveness}.get(dimension)
        if value is None:
            return self.items[dimension].passed
        return value >= threshold

    def failures(self) -> list[Evidence]:
        return [e for e in self.evidence if not e.ok]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        d = dict(data)
        d["items"] = {k: ItemScore(**v) for k, v in d.get("items", {}).items()}
        d["evidence"] = [Evidence(**e) for e in d.get("evidence", [])]
        return cls(**d)


class Judge(Protocol):
    """Anything that turns a trace (plus the harness the agent ran under) into a Verdict."""

    name: str
    judge_hash: str
    role: Role

    def judge(self, trace: Any, agent_harness: Any) -> Verdict: ...
