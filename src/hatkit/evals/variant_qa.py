"""variant_qa: live_qa's messages on harnesses of the held-out variant family.

The same cases as live_qa (same n and seed), spread round-robin over `settings.n_variants`
variants made by `hatkit.sim.augment.make_variant` with the HELDOUT family (renamed tools and
skills, paraphrased prompts, every rule moved off its training value). Simulator ground truth
is recomputed under each variant's rules; each trace is judged against the variant it ran
under. Metrics are live_qa's (success first, with its interval). The drop live_qa - variant_qa
in success measures how much a model depends on one harness surface; beside it, on the items
each variant changed (`hatkit.evals.staleness`): success_affected, stale_rule_rate and
stale_tool_rate (a model repeating the default harness's values or tool names).
Variants are written under `out_dir/variants/` and reused by a rerun when their base matches.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..harness import Harness
from ..sim.augment import HsaData, variant_folder, variant_name
from .cases import EvalCase
from .context import SuiteContext
from .episodes import empty_episodes, run_cases
from .live_qa import cases_for, qa_result
from .result import SuiteResult
from .staleness import affected, staleness_metrics

NAME = "variant_qa"
HELDOUT = "heldout"
"""The augmentation family of the held-out variants."""


def heldout_variants(base: Harness, folder: Path, count: int, seed: int, hsa: HsaData) -> list[Harness]:
    """`count` held-out variants of `base` in `folder` (made, or reused when up to date)."""
    fam = hsa.family(HELDOUT)
    return [variant_folder(base, folder / variant_name(base.name, fam, seed * 100 + i), family=fam,
                           seed=seed * 100 + i) for i in range(count)]


def run(ctx: SuiteContext) -> SuiteResult:
    started = time.perf_counter()
    variants = heldout_variants(ctx.harness, ctx.out_dir / "variants", min(ctx.settings.n_variants,
                                                                          max(1, ctx.n)), ctx.seed,
                                ctx.domain.hsa)
    cases = cases_for(ctx)
    eps = empty_episodes(ctx.domain)
    bases: list[EvalCase] = []
    for k, variant in enumerate(variants):
        bases += cases[k::len(variants)]
        mine = [c.under_rules(ctx.domain, variant.rules) for c in cases[k::len(variants)]]
        if mine:
            eps.extend(run_cases(ctx.model, variant, mine, domain=ctx.domain,
                                 settings=ctx.settings, suite=NAME, seed=ctx.seed,
                                 progress=ctx.progress, done_before=len(eps.traces), total=len(cases),
                                 extra_meta={"variant": variant.name}))
    by_variant = {}
    outcomes = eps.outcomes()
    for v in variants:
        mine_v = [x for x, h in zip(eps.verdicts, eps.harnesses, strict=True) if h is v]
        won = [o.success for o, h in zip(outcomes, eps.harnesses, strict=True) if h is v]
        by_variant[v.name] = {"n": len(mine_v), "hash": v.content_hash,
                              "success": sum(won) / max(1, len(won)),
                              "accuracy": sum(x.accuracy for x in mine_v) / max(1, len(mine_v)),
                              "effectiveness": sum(x.effectiveness for x in mine_v) / max(1, len(mine_v))}
    items = [affected(b, c, ctx.harness, h, t, [str(r) for r in t.meta.get("replies", [])])
             for b, c, h, t in zip(bases, eps.cases, eps.harnesses, eps.traces, strict=True)]
    result = qa_result(NAME, ctx, eps, started, variants=by_variant, family=HELDOUT)
    result.metrics.update(staleness_metrics(items, [o.success for o in outcomes]))
    for record, item in zip(result.details["episodes"], items, strict=True):
        record.update(affected_rules=item.rules, affected_tools=item.tools, stale_rule=item.stale_rule,
                      stale_tool=item.stale_tool)
    return result
