"""HSA-RL rewards: the reward-role judge's verdict, and separate length penalties on the
reasoning before tool calls (`think_tool`) and before replies (`think_reply`).

The two reasoning kinds are penalised apart because they grow apart: tool-call reasoning is
long (it plans arguments), reply reasoning should be short (the answer is already in the tool
result). One coefficient for both would either cut planning or leave reply reasoning long.
Each penalty acts only on the excess over its own target, measured per reasoning block (one
block = one model call's reasoning of that kind, counted in generated tokens), so a trace whose
think_reply is long and think_tool short is penalised on think_reply only.

Every component is handed to TRL's GRPOTrainer as its own reward function, weighted by TRL's
`reward_weights` (set from the hatkit config): the per-component means appear in the logs as
`rewards/<name>/mean` and the group-normalised advantage is computed from their weighted sum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..agent.trace import Trace
from ..domain import Domain, get_domain
from ..harness import Harness

THINK_SEGMENTS = ("think_tool", "think_reply")


class Scorer(Protocol):
    """The task part of the reward: (trace, harness it ran under) -> named scores.

    The mapping holds "score" (what the reward uses) and may hold more (logged only)."""

    def __call__(self, trace: Trace, harness: Harness) -> Mapping[str, float]: ...


class JudgeScorer:
    """The reward-role programmatic judge: score = w_acc * accuracy + w_eff * effectiveness.

    Built with role="reward" so every verdict says it was a training reward; the evaluation
    judge of a pipeline must be a different judge harness (see hatkit.judge.roles)."""

    def __init__(self, accuracy_weight: float, effectiveness_weight: float,
                 judge_harness: str | Path | None = None, *, domain: Domain | str | None = None) -> None:
        dom = get_domain(domain)
        self.judge = dom.judge(judge_harness or dom.reward_judge_harness_dir, role="reward")
        self.accuracy_weight = accuracy_weight
        self.effectiveness_weight = effectiveness_weight

    def __call__(self, trace: Trace, harness: Harness) -> dict[str, float]:
        verdict = self.judge.judge(trace, harness)
        score = self.accuracy_weight * verdict.accuracy + self.effectiveness_weight * verdict.effectiveness
        return {"score": score, "accuracy": verdict.accuracy, "effectiveness": verdict.effectiveness}

    @property
    def judge_hash(self) -> str:
        return self.judge.judge_hash


def block_lengths(trace: Trace, segment: str) -> list[int]:
    """Generated tokens of `segment` per model call that wrote some. A reply a hook vetoed
    counts too: it is not trained on, but its length is still the model's habit.

    Only spans the model wrote count (a runtime fallback reply is not the model's). Without
    token ids (a text-only backend) the length is the whitespace word count."""
    per_turn: dict[int, int] = {}
    for span in trace.spans:
        if span.segment != segment or span.source != "model":
            continue
        n = len(span.token_ids) if span.token_ids is not None else len(span.text.split())
        per_turn[span.turn] = per_turn.get(span.turn, 0) + n
    return [n for n in per_turn.values() if n > 0]


def mean_excess(lengths: Sequence[int], target: int) -> float:
    """Mean over blocks of max(0, length - target); 0 when there is no block."""
    if not lengths:
        return 0.0
    return sum(max(0, n - target) for n in lengths) / len(lengths)


@dataclass(frozen=True)
class LengthPenalty:
    """coef * mean excess tokens over `target`, on one segment's blocks only."""

    segment: str
    coef: float
    target: int

    def __post_init__(self) -> None:
        if self.segment not in THINK_SEGMENTS:
            raise ValueError(f"length penalties apply to {THINK_SEGMENTS}, not {self.segment!r}")
        if self.coef < 0 or self.target < 0:
            raise ValueError(f"{self.segment} penalty: coef and target must be >= 0 "
                             f"(got {self.coef}, {self.target})")

    def excess(self, trace: Trace) -> float:
        return mean_excess(block_lengths(trace, self.segment), self.target)

    def __call__(self, trace: Trace) -> float:
        """The penalty (>= 0) this trace pays; the reward subtracts it."""
        return self.coef * self.excess(trace)


@dataclass(frozen=True)
class RewardSpec:
    """How one rollout's reward is made; `weights` are TRL's reward_weights, in FIELD order."""

    think_tool: LengthPenalty
    think_reply: LengthPenalty

    FIELDS = ("hat_score", "hat_think_tool_excess", "hat_think_reply_excess")
    NAMES = ("judge", "think_tool_length", "think_reply_length")

    @property
    def weights(self) -> list[float]:
        """score counts once; each length term is -excess, weighted by its own coefficient."""
        return [1.0, self.think_tool.coef, self.think_reply.coef]

    def fields(self, trace: Trace, scores: Mapping[str, float]) -> dict[str, float]:
        """The per-rollout values the reward functions read (handed through TRL's extra fields)."""
        return {"hat_score": float(scores["score"]),
                "hat_think_tool_excess": -self.think_tool.excess(trace),
                "hat_think_reply_excess": -self.think_reply.excess(trace)}

    def total(self, trace: Trace, scores: Mapping[str, float]) -> float:
        """The reward TRL computes from these fields and weights (for tests and logs)."""
        f = self.fields(trace, scores)
        return sum(w * f[k] for w, k in zip(self.weights, self.FIELDS, strict=True))

    def reward_funcs(self) -> list[Callable[..., list[float]]]:
        """One TRL reward function per component, named as they appear in TRL's logs. The
        first also logs the means of `hat_metrics` (judge dimensions, reasoning lengths)."""
        return [field_reward(k, n, log_metrics=(i == 0))
                for i, (k, n) in enumerate(zip(self.FIELDS, self.NAMES, strict=True))]


def field_reward(key: str, name: str, log_metrics: bool = False) -> Callable[..., list[float]]:
    """A TRL reward function returning the rollout's precomputed `key` (an extra field the
    rollout function returned; TRL passes extra fields to reward functions by name)."""

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        values = kwargs.get(key)
        if values is None:
            raise KeyError(f"reward '{name}': the rollout returned no '{key}' field")
        log = kwargs.get("log_metric")
        rows = kwargs.get("hat_metrics")
        if log_metrics and callable(log) and rows:
            for metric in sorted({m for row in rows for m in row}):
                vals = [float(row[metric]) for row in rows if metric in row]
                log(f"hat/{metric}", sum(vals) / len(vals))
        return [float(v) for v in values]

    reward.__name__ = name
    reward.__qualname__ = name
    return reward
