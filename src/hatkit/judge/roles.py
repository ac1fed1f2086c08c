"""Reward and evaluation judges kept apart, and calibration items kept apart from test items.

A policy trained against a judge learns that judge's blind spots; scoring it with the same
judge then reports the blind spots as quality. So a `JudgePair` refuses two judges with the
same judge hash (the content hash of the judge harness) unless told otherwise, and then
marks every verdict and the report.

Roles are the pair's business, not the judge objects': `reward()` returns verdicts with
role "reward" and `evaluate()` with role "eval", whatever role the underlying judge was
constructed with (the verdict is re-stamped, the judge object is left as it is). This lets
one judge object be reused in either slot of different pairs, and makes the slot, which is
what a reader of the verdict cares about, the single source of truth.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .verdict import Judge, Role, Verdict


class JudgePair:
    """The training-reward judge and the final-evaluation judge of one pipeline."""

    def __init__(self, reward: Judge, eval: Judge, allow_same_judge: bool = False) -> None:
        for slot, judge in (("reward", reward), ("eval", eval)):
            if not getattr(judge, "judge_hash", ""):
                raise ValueError(f"the {slot} judge {getattr(judge, 'name', judge)!r} has no judge_hash")
        self.reward_judge = reward
        self.eval_judge = eval
        self.allow_same_judge = allow_same_judge
        self._check()

    @property
    def same_judge(self) -> bool:
        """True when both roles use the same judge harness (only possible with the override):
        a programmatic rubric and an LLM reading the same harness are one judge, although the
        programmatic one's own hash also covers its code."""
        return _rubric_of(self.reward_judge) == _rubric_of(self.eval_judge)

    def _check(self) -> None:
        if self.same_judge and not self.allow_same_judge:
            raise ValueError(
                f"the reward judge ({self.reward_judge.name}) and the evaluation judge "
                f"({self.eval_judge.name}) share judge harness {_rubric_of(self.reward_judge)}: a "
                "policy trained on a judge's reward must be evaluated by a different judge "
                "harness. Use another judge harness version for one role, or pass "
                "allow_same_judge=True to accept it (the report will say so).")

    def _stamp(self, verdict: Verdict, role: Role) -> Verdict:
        return replace(verdict, role=role, same_judge_override=self.same_judge)

    def reward(self, trace: Any, agent_harness: Any) -> Verdict:
        """The training reward for a trace (a verdict with role 'reward')."""
        self._check()  # judges are plain objects: re-check in case one was swapped
        return self._stamp(self.reward_judge.judge(trace, agent_harness), "reward")

    def evaluate(self, trace: Any, agent_harness: Any) -> Verdict:
        """The evaluation verdict for a trace (a verdict with role 'eval')."""
        self._check()
        return self._stamp(self.eval_judge.judge(trace, agent_harness), "eval")

    def report_note(self) -> str:
        """A sentence every report of this pipeline must carry; "" when the judges differ."""
        if not self.same_judge:
            return ""
        return (f"Warning: the same judge harness (hash {self.eval_judge.judge_hash}) produced "
                "both the training reward and these evaluation scores (allow_same_judge "
                "override), so the scores are not independent of training and may overstate "
                "quality.")


def check_disjoint(calibration_ids: Iterable[str], test_ids: Iterable[str]) -> None:
    """Refuse a calibration set that shares items with the test set."""
    overlap = sorted(set(calibration_ids) & set(test_ids))
    if overlap:
        shown = ", ".join(overlap[:20]) + (f" and {len(overlap) - 20} more" if len(overlap) > 20 else "")
        raise ValueError(f"{len(overlap)} item(s) are in both the calibration set and the test "
                         f"set: {shown}")


def _rubric_of(judge: Judge) -> str:
    """The judge harness a judge runs: its harness's content hash, else its judge hash."""
    harness = getattr(judge, "harness", None)
    return str(getattr(harness, "content_hash", None) or judge.judge_hash)
