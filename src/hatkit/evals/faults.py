"""faults: live_qa with injected tool faults; how often does the agent still answer correctly?

Cases are simulator test questions of the tool-using categories (or the user's questions).
`FAULTS` injects exactly one fault per episode, on its first tool call, of a kind drawn
deterministically per episode (timeout, malformed, truncated, permission denied, empty,
server error), and only on the first attempt of a call, so an identical retry succeeds.

Definitions (per episode):
- **faulted**: at least one fault was injected (a `fault_injected` event in the trace); an
  episode that never calls a tool gets no fault and is not counted.
- **success**: the same per-episode success as live_qa (hatkit.evals.success): no fallback,
  no wrong claim or failed policy item, every asked fact stated, escalation as expected.
- **recovered**: faulted AND success: the viewer still got a correct answer.

Metrics, headline first: `success` over all episodes with its 95% Wilson interval
(`success_lo`, `success_hi`), `answer_rate` (a real reply after a usable tool result), then
`recovered_rate` = recovered / faulted (0 when no episode was faulted; `details.note` says
so), `recovered` and `faulted` (counts). Details: per-episode records and `by_category`.
"""

from __future__ import annotations

import time

from ..sim.faults import FaultConfig, FaultInjectingRunner
from .cases import EvalCase, sim_cases
from .context import SuiteContext
from .episodes import by_category, episode_records, mean, run_cases, success_metrics
from .result import SuiteResult

NAME = "faults"
FAULTS = FaultConfig(
    rates={"timeout": 0.25, "malformed": 0.15, "truncated": 0.15, "permission_denied": 0.15,
           "empty": 0.15, "server_error": 0.15},
    max_per_episode=1, first_call_only=True)


def run(ctx: SuiteContext) -> SuiteResult:
    started = time.perf_counter()
    cases: list[EvalCase] = (ctx.questions[:ctx.n] if ctx.questions is not None
                             else sim_cases(ctx.domain, ctx.harness.rules, ctx.n, ctx.seed,
                                            categories=ctx.domain.tool_categories or None))
    runner = FaultInjectingRunner(FAULTS.model_copy(update={"seed": ctx.seed}))
    eps = run_cases(ctx.model, ctx.harness, cases, domain=ctx.domain, settings=ctx.settings,
                    suite=NAME, seed=ctx.seed,
                    tool_runner=runner, progress=ctx.progress)
    faulted = recovered = 0
    records = episode_records(eps)
    for rec, trace in zip(records, eps.traces, strict=True):
        hit = bool(trace.events_of("fault_injected"))
        ok = bool(rec["success"])
        rec.update(faulted=hit, recovered=hit and ok,
                   fault_kinds=[e.data.get("fault") for e in trace.events_of("fault_injected")])
        faulted += hit
        recovered += hit and ok
    path = eps.write(ctx.traces_path(NAME))
    clean = [v for t, v in zip(eps.traces, eps.verdicts, strict=True) if not t.events_of("fault_injected")]
    return SuiteResult(
        suite=NAME, n=len(eps.traces), model_id=ctx.model.model_id, harness_hash=ctx.harness.content_hash,
        metrics={**success_metrics(eps), "recovered_rate": recovered / faulted if faulted else 0.0,
                 "recovered": float(recovered), "faulted": float(faulted)},
        seconds=time.perf_counter() - started, traces=str(path),
        details={"injected_by_kind": dict(runner.injected), "thresholds": eps.thresholds,
                 "by_category": by_category(eps),
                 "accuracy_faulted": mean([v.accuracy for t, v in zip(eps.traces, eps.verdicts, strict=True)
                                           if t.events_of("fault_injected")]),
                 "accuracy_clean": mean([v.accuracy for v in clean]), "episodes": records,
                 "note": "" if faulted else "no episode called a tool, so none was faulted"})
