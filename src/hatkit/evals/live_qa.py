"""live_qa: test-split viewer messages on the base harness, scored by the eval-role judge.

The simulator's test split asks about products and in phrasings that no training split
uses; a user's `--questions FILE` replaces it. Metrics, headline first: `success` (share of
episodes that succeed, see hatkit.evals.success) with its 95% Wilson interval `success_lo`,
`success_hi`; `answer_rate` (episodes expecting tools that end in a real reply after a tool
result); then the judge's mean `accuracy`, `effectiveness` and `score` (their mean) as
detail. Details add per-episode records (`success`, `failure`), ground-truth fact recall and
must-not hits, and a per-category breakdown with intervals.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ..agent.trace import Trace
from .cases import EvalCase, sim_cases
from .context import SuiteContext
from .episodes import Episodes, by_category, episode_records, mean, qa_metrics, run_cases
from .result import SuiteResult

NAME = "live_qa"


def cases_for(ctx: SuiteContext) -> list[EvalCase]:
    """The user's cases (first n) or n simulator test cases under the base harness's rules."""
    if ctx.questions is not None:
        return ctx.questions[:ctx.n]
    return sim_cases(ctx.domain, ctx.harness.rules, ctx.n, ctx.seed)


def episodes(ctx: SuiteContext) -> Episodes:
    """live_qa's episodes, run once per `run_suites` call (lengths and latency reuse them)."""
    if NAME not in ctx.shared:
        cases = cases_for(ctx)
        ctx.shared[NAME] = run_cases(ctx.model, ctx.harness, cases, domain=ctx.domain,
                                     settings=ctx.settings, suite=NAME,
                                     seed=ctx.seed, progress=ctx.progress)
    return ctx.shared[NAME]


def qa_result(name: str, ctx: SuiteContext, eps: Episodes, started: float, **extra: object) -> SuiteResult:
    path = eps.write(ctx.traces_path(name))
    return SuiteResult(
        suite=name, metrics=qa_metrics(eps), n=len(eps.traces), model_id=ctx.model.model_id,
        harness_hash=ctx.harness.content_hash, seconds=time.perf_counter() - started,
        details={"answer_n": sum(a is not None for a in eps.answers()),
                 "facts_recall": mean([c.facts_recall for c in eps.checks]),
                 "must_not_hits": sum(bool(c.must_not_hits) for c in eps.checks),
                 "by_category": by_category(eps), "episodes": episode_records(eps),
                 "questions": str(ctx.questions_path) if ctx.questions_path else "sim:test",
                 "judge": eps.verdicts[0].judge_name if eps.verdicts else "",
                 "judge_role": eps.verdicts[0].role if eps.verdicts else "eval", **extra},
        traces=str(path))


def run(ctx: SuiteContext) -> SuiteResult:
    started = time.perf_counter()
    return qa_result(NAME, ctx, episodes(ctx), started)


def from_live_qa(name: str, ctx: SuiteContext,
                 measure: Callable[[Sequence[Trace]], tuple[dict[str, float], dict[str, object]]],
                 **extra: object) -> SuiteResult:
    """A suite measured on live_qa's episodes (run once and shared, never re-run)."""
    started = time.perf_counter()
    eps = episodes(ctx)
    metrics, details = measure(eps.traces)
    return SuiteResult(suite=name, metrics=metrics, n=len(eps.traces), model_id=ctx.model.model_id,
                       harness_hash=ctx.harness.content_hash, seconds=time.perf_counter() - started,
                       details={**details, "from": NAME, **extra},
                       traces=str(eps.write(ctx.traces_path(NAME))))
