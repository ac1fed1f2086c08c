"""Run a question set under one harness with a frozen policy, judge it, and say which episodes
failed and why (the error type the diagnosis clusters on).

An episode passes when the eval-role judge passes it on accuracy, effectiveness and every
rubric item, and the agent caused no runtime error (unknown tool, bad arguments, a hook veto,
a fallback reply). Injected faults are the environment's, not the agent's: they fail an
episode only when the agent then does not recover (`failed_fault_recovery`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent import Agent, Trace
from ..agent.loop import drive
from ..harness import Harness
from ..judge.verdict import Judge, Verdict
from ..models.base import ChatModel
from ..sim.runner import ask_all
from ..sim.truth import Question

PolicyFactory = Callable[[Harness, Sequence[Question]], ChatModel]
"""(harness, the questions it will be asked) -> the frozen policy under test."""

AGENT_ERRORS = frozenset({"unknown_tool", "bad_arguments", "malformed_call", "tool_budget"})


@dataclass(frozen=True)
class EpisodeResult:
    trace_id: str
    question_id: str
    category: str
    passed: bool
    error_type: str = ""
    """One of ERROR_TYPES when failed."""
    detail: str = ""
    """What exactly: 'tool:get_promos', 'rule:free_shipping_threshold', 'hook:live_reply_length'."""
    evidence: tuple[str, ...] = ()
    """A few failing evidence lines, for the diagnosis and the LLM proposer."""


@dataclass
class EvalResult:
    harness_hash: str
    episodes: list[EpisodeResult] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.episodes)

    @property
    def pass_rate(self) -> float:
        return sum(e.passed for e in self.episodes) / self.n if self.n else 0.0

    @property
    def error_rate(self) -> float:
        return 1.0 - self.pass_rate if self.n else 0.0

    def by_category(self) -> dict[str, float]:
        """Pass rate per question category."""
        tot: Counter[str] = Counter(e.category for e in self.episodes)
        ok: Counter[str] = Counter(e.category for e in self.episodes if e.passed)
        return {c: ok[c] / tot[c] for c in sorted(tot)}

    def failures(self) -> list[EpisodeResult]:
        return [e for e in self.episodes if not e.passed]

    def summary(self) -> dict[str, Any]:
        return {"harness_hash": self.harness_hash, "n": self.n, "pass_rate": round(self.pass_rate, 4),
                "by_category": {k: round(v, 4) for k, v in self.by_category().items()}}


def run_questions(harness: Harness, questions: Sequence[Question], policy: PolicyFactory,
                  ) -> list[Trace]:
    """One trace per question (multi-turn questions play every turn), batched."""
    agent = Agent(harness, policy(harness, questions))
    eps = []
    for q in questions:
        ep = agent.episode(episode_id=f"{q.id}@{harness.short_hash}")
        ep.trace.meta.update(question_id=q.id, category=q.category, split=q.split,
                             locale=q.locale, template_id=q.template_id)
        eps.append(ep)
    drive(agent.model, [ask_all(ep, [t.text for t in q.turns]) for ep, q in zip(eps, questions,
                                                                               strict=True)],
          labels=[ep.trace.episode_id for ep in eps])
    return [ep.trace for ep in eps]


def evaluate(harness: Harness, questions: Sequence[Question], policy: PolicyFactory, judge: Judge,
             traces_out: Path | None = None) -> EvalResult:
    """Run, judge and classify; failing traces are written to `traces_out` (JSONL) if given."""
    traces = run_questions(harness, questions, policy)
    result = EvalResult(harness.content_hash)
    failing = []
    for q, t in zip(questions, traces, strict=True):
        r = classify(t, judge.judge(t, harness), harness, q)
        result.episodes.append(r)
        if not r.passed:
            failing.append(t)
    if traces_out is not None:
        from .edits import write_atomic

        write_atomic(traces_out, "".join(t.to_json() + "\n" for t in failing))
    return result


def _length_hooks(h: Harness) -> set[str]:
    return {n for n, r in h.hook_rules.items() if getattr(r, "kind", "") == "max_reply_length"}


def classify(trace: Trace, verdict: Verdict, harness: Harness, q: Question) -> EpisodeResult:
    """Pass/fail of one episode, and for a failure the first matching error type."""
    thr = getattr(verdict, "thresholds", None) or {"accuracy": 0.5, "effectiveness": 0.8}
    bad_ev = verdict.failures()
    lines = tuple(f"{e.item}: {e.claim[:60]!r} expected {e.expected[:80]!r} ({e.source})"
                  for e in bad_ev[:4])
    ev = trace.events
    agent_err = [e for e in ev if e.kind == "tool_error" and e.data.get("error_type") in AGENT_ERRORS]
    vetoes = [e for e in ev if e.kind in ("hook_veto", "hook_error")]
    faults = [e for e in ev if e.kind == "fault_injected"]
    truncs = [e for e in ev if e.kind == "hook_rewrite" and e.data.get("hook") in _length_hooks(harness)]
    judged_ok = (verdict.accuracy >= thr.get("accuracy", 0.5)
                 and verdict.effectiveness >= thr.get("effectiveness", 0.8)
                 and all(i.passed for i in verdict.items.values()) and verdict.error is None)
    fallback = any(e.kind in ("fallback", "model_error") for e in ev)
    base = dict(trace_id=trace.episode_id, question_id=q.id, category=q.category, evidence=lines)
    if judged_ok and not agent_err and not vetoes and not fallback:
        return EpisodeResult(passed=True, **base)  # type: ignore[arg-type]
    if agent_err:
        first = agent_err[0].data
        kind, detail = "wrong_or_missing_tool", f"{first.get('error_type')}:{first.get('tool')}"
    elif vetoes:
        kind, detail = "hook_violation", f"hook:{vetoes[0].data.get('hook', '')}"
    elif faults:
        kind, detail = "failed_fault_recovery", f"fault:{faults[0].data.get('fault', '')}"
    elif truncs:
        kind, detail = "too_long", f"hook:{truncs[0].data.get('hook', '')}"
    elif rule := next((e for e in bad_ev if e.item == "accuracy" and e.source.startswith("rule:")), None):
        kind, detail = "stale_rule_value", rule.source
    elif fact := next((e for e in bad_ev if e.item == "accuracy"), None):
        kind, detail = "invented_fact", fact.source
    else:
        kind, detail = "unanswered", next((f"{e.item}:{e.claim[:40]}" for e in bad_ev), "")
    return EpisodeResult(passed=False, error_type=kind, detail=detail, **base)  # type: ignore[arg-type]
