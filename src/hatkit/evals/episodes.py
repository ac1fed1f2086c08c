"""Run evaluation cases through the agent loop (batched) and judge them with the eval judge.

Every suite that runs the agent goes through `run_cases`: episodes of one harness are
driven together (`hatkit.agent.loop.drive`), so a local backend decodes them in one batch
with the harness prefix cached. Each episode is bounded by `EvalSettings`: new tokens per
call are capped, and after `max_model_calls` calls for one viewer message the loop receives
an error output, so the episode ends with the harness fallback (event `eval_budget`). Each
viewer turn's wall time and reply go into `trace.meta` (`turn_s`, `replies`), which the
latency suite and the ground-truth checks read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..agent import Agent
from ..agent.loop import Episode, drive
from ..agent.tool_runner import ToolRunner
from ..agent.trace import Event, Trace
from ..domain import Domain
from ..harness import Harness
from ..judge.verdict import Judge, Verdict
from ..models.base import ChatModel, ModelOutput, ModelRequest
from ..models.errors import CallBudgetSpent
from ..sim.faults import FaultInjectingRunner
from .cases import EvalCase, ReplyCheck, check_replies
from .result import EvalSettings, write_jsonl_atomic
from .success import Outcome, answered, episode_success, expects_tools, rate_with_interval

Progress = Callable[[int, int], None]
Step = Generator[ModelRequest, ModelOutput, str]
OWN_STOPS = frozenset({CallBudgetSpent.kind})
"""model_error kinds an evaluation causes itself (its call budget): scored as the model's."""


class BackendFailed(RuntimeError):
    """An evaluation met more model-backend failures than `max_backend_errors` allows."""


def backend_errors(traces: Sequence[Trace]) -> list[str]:
    """'episode: kind: message' for every backend failure (not the evaluation's own stops)."""
    return [f"{t.episode_id}: {e.data.get('error_type', '?')}: {e.data.get('error', '')}"
            for t in traces for e in t.events_of("model_error")
            if e.data.get("error_type") not in OWN_STOPS]


def check_backend(errors: Sequence[str], settings: EvalSettings, suite: str) -> None:
    """Stop (BackendFailed, naming the first episodes) past the tolerated failures."""
    if len(errors) > settings.max_backend_errors:
        shown = "; ".join(errors[:3]) + (" ..." if len(errors) > 3 else "")
        raise BackendFailed(
            f"{suite}: {len(errors)} model call(s) failed in the backend (tolerated: "
            f"{settings.max_backend_errors}): {shown}. A failed call is not the model's answer, so "
            "the suite stops instead of scoring it; fix the backend (or raise max_backend_errors) "
            "and run again.")


@dataclass
class Episodes:
    """Traces of some cases with their verdicts and ground-truth checks, in case order."""

    cases: list[EvalCase]
    traces: list[Trace]
    verdicts: list[Verdict]
    checks: list[ReplyCheck]
    harnesses: list[Harness]
    """The harness each episode ran under."""
    domain: Domain
    """The domain the cases come from (its tool categories and escalation tool)."""
    thresholds: dict[str, float] = field(default_factory=dict)
    """The eval judge's pass thresholds (what `success` compares against)."""

    def extend(self, other: Episodes) -> None:
        self.cases += other.cases
        self.traces += other.traces
        self.verdicts += other.verdicts
        self.checks += other.checks
        self.harnesses += other.harnesses
        self.thresholds = self.thresholds or other.thresholds

    def outcomes(self) -> list[Outcome]:
        """Per-episode success (hatkit.evals.success), in case order."""
        th = self.thresholds or thresholds_of(eval_judge(self.domain))
        return [episode_success(c, t, v, k, h, self.domain, th) for c, t, v, k, h in
                zip(self.cases, self.traces, self.verdicts, self.checks, self.harnesses, strict=True)]

    def answers(self) -> list[bool | None]:
        """Per episode: answered after a tool result, or None when the case expects no tools."""
        return [answered(t, h) if expects_tools(c, self.domain) else None
                for c, t, h in zip(self.cases, self.traces, self.harnesses, strict=True)]

    def write(self, path: Path) -> Path:
        """The traces as JSONL (atomically); returns the path."""
        write_jsonl_atomic(path, [t.to_json() for t in self.traces])
        return path


def empty_episodes(domain: Domain) -> Episodes:
    return Episodes([], [], [], [], [], domain)


def eval_judge(domain: Domain, judge_dir: str | None = None) -> Judge:
    """The domain's eval-role programmatic judge (never the reward role), made once per process."""
    return _eval_judge(domain, judge_dir)


@lru_cache(maxsize=8)
def _eval_judge(domain: Domain, judge_dir: str | None) -> Judge:
    return domain.judge(judge_dir, role="eval")


def thresholds_of(judge: Judge) -> dict[str, float]:
    """A judge's pass thresholds per dimension ({} when it has none)."""
    return dict(getattr(judge, "thresholds", {}) or {})


def _bounded(step: Step, settings: EvalSettings, ep: Episode) -> Step:
    """Pass `step`'s requests on with max_new_tokens capped; after `max_model_calls` calls,
    answer with an error output instead of asking the model (the loop then falls back)."""
    calls = 0
    seen: dict[str, int] = {}
    try:
        request = next(step)
        while True:
            calls += 1
            if calls > settings.max_model_calls:
                budget = settings.max_model_calls
                ep.trace.events.append(Event("eval_budget", ep.turn, {"max_model_calls": budget}))
                out = ModelOutput.failed(CallBudgetSpent(
                    f"evaluation budget of {settings.max_model_calls} model calls per message spent"))
            else:
                cap = min(request.max_new_tokens, settings.max_new_tokens)
                out = yield replace(request, max_new_tokens=cap)
                call = _call_text(out.text)
                seen[call] = seen.get(call, 0) + 1 if call else 0
                if call and settings.max_repeated_calls and seen[call] >= settings.max_repeated_calls:
                    ep.trace.events.append(Event("eval_budget", ep.turn, {
                        "reason": "repeated_call", "times": seen[call], "call": call[:200]}))
                    out = ModelOutput.failed(CallBudgetSpent(
                        f"the same tool call written {seen[call]} times in one turn"))
            request = step.send(out)
    except StopIteration as done:
        return str(done.value)


def _call_text(text: str) -> str:
    """The tool-call part of a model output, whitespace-normalised ('' when it has none)."""
    start = text.find("<tool_call>")
    if start < 0:
        return ""
    return " ".join(text[start:].split())


def _episode_step(ep: Episode, texts: Sequence[str], settings: EvalSettings) -> Step:
    """All viewer turns of one episode; records per-turn wall time and reply in trace.meta."""
    turn_s: list[float] = []
    replies: list[str] = []
    reply = ""
    for text in texts:
        t0 = time.perf_counter()
        reply = yield from _bounded(ep.ask(text), settings, ep)
        turn_s.append(time.perf_counter() - t0)
        replies.append(reply)
    ep.trace.meta.update(turn_s=turn_s, replies=replies)
    return reply


def run_cases(model: ChatModel, harness: Harness, cases: Sequence[EvalCase], *, domain: Domain,
              settings: EvalSettings, suite: str, seed: int = 0, tool_runner: ToolRunner | None = None,
              progress: Progress | None = None, done_before: int = 0, total: int | None = None,
              extra_meta: dict[str, Any] | None = None) -> Episodes:
    """Run `cases` under `harness` in batches of `settings.batch_size`, then judge them.

    Progress is reported as (done_before + finished, total)."""
    agent = Agent(harness, model, tool_runner=tool_runner)
    judge = eval_judge(domain, settings.judge)
    total = total if total is not None else done_before + len(cases)
    out = empty_episodes(domain)
    out.thresholds = thresholds_of(judge)
    failed: list[str] = []
    for start in range(0, len(cases), settings.batch_size):
        chunk = cases[start:start + settings.batch_size]
        episodes = []
        for i, case in enumerate(chunk, start):
            key = f"{suite}:{seed}:{harness.content_hash[:12]}:{i}:{case.id}"
            ep = agent.episode(episode_id=key)
            if isinstance(tool_runner, FaultInjectingRunner):
                tool_runner.seed_episode(ep.state, key)
            ep.trace.meta.update(case.meta(), suite=suite, seed=seed, episode_key=key, **(extra_meta or {}))
            episodes.append(ep)
        drive(model, [_episode_step(ep, case.texts, settings)
                      for ep, case in zip(episodes, chunk, strict=True)],
              labels=[ep.trace.episode_id for ep in episodes])
        failed += backend_errors([ep.trace for ep in episodes])
        check_backend(failed, settings, suite)
        for ep, case in zip(episodes, chunk, strict=True):
            trace = ep.trace
            out.cases.append(case)
            out.traces.append(trace)
            out.verdicts.append(judge.judge(trace, harness))
            out.checks.append(check_replies(case, [str(r) for r in trace.meta.get("replies", [])]))
            out.harnesses.append(harness)
        if progress is not None:
            progress(done_before + len(out.traces), total)
    return out


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def answer_rate(eps: Episodes) -> float:
    """Share of the episodes expecting tools that end in a real reply after a tool result
    (0 when none expects tools)."""
    asked = [a for a in eps.answers() if a is not None]
    return sum(asked) / len(asked) if asked else 0.0


def success_metrics(eps: Episodes) -> dict[str, float]:
    """success with its 95% Wilson interval, then answer_rate (the headline, in that order)."""
    return {**rate_with_interval([o.success for o in eps.outcomes()]), "answer_rate": answer_rate(eps)}


def qa_metrics(eps: Episodes) -> dict[str, float]:
    """live_qa / variant_qa numbers: success first (hatkit.evals.success), then the judge's
    mean accuracy and effectiveness and their mean `score` as details."""
    acc = mean([v.accuracy for v in eps.verdicts])
    eff = mean([v.effectiveness for v in eps.verdicts])
    return {**success_metrics(eps), "accuracy": acc, "effectiveness": eff, "score": (acc + eff) / 2}


def episode_records(eps: Episodes) -> list[dict[str, Any]]:
    """One small JSON record per episode for SuiteResult.details (`success`, `failure` and
    `case_id` are what a paired comparison of two models reads)."""
    rows = []
    for case, trace, verdict, check, outcome, ans in zip(eps.cases, eps.traces, eps.verdicts, eps.checks,
                                                         eps.outcomes(), eps.answers(), strict=True):
        rows.append({
            "episode_id": trace.episode_id, "case_id": case.id, "category": case.category,
            "success": outcome.success, "failure": outcome.failure, "answered": ans,
            "harness": trace.harness_name, "accuracy": verdict.accuracy,
            "effectiveness": verdict.effectiveness,
            "items": {k: v.score for k, v in verdict.items.items()},
            "facts_recall": check.facts_recall, "facts_missed": check.facts_missed,
            "must_not_hits": check.must_not_hits,
            "fallback": bool(trace.events_of("fallback")), "faults": len(trace.events_of("fault_injected")),
            "reply": trace.final_reply[:300],
        })
    return rows


def by_category(eps: Episodes) -> dict[str, dict[str, float]]:
    """Per category: n, success with its interval (lo, hi), mean accuracy and effectiveness."""
    groups: dict[str, list[tuple[Verdict, bool]]] = {}
    for case, v, o in zip(eps.cases, eps.verdicts, eps.outcomes(), strict=True):
        groups.setdefault(case.category or "unknown", []).append((v, o.success))
    out = {}
    for cat, rows in sorted(groups.items()):
        rate = rate_with_interval([ok for _, ok in rows])
        out[cat] = {"n": float(len(rows)), "success": rate["success"], "lo": rate["success_lo"],
                    "hi": rate["success_hi"], "accuracy": mean([v.accuracy for v, _ in rows]),
                    "effectiveness": mean([v.effectiveness for v, _ in rows])}
    return out
