"""Claim 4 of the published system: with the model frozen, Harness Evolution reduces HAT's
error more than fixed-harness SFT's. The domain's documented defective harness (defects.yaml,
written before any run) is evolved once per model, with the same proposer (rule-based), the
same approval (auto) and the same sizes; both are tested on the same questions before and
after, and the difference of the two error reductions is reported with a paired bootstrap
interval, not a ratio of two small numbers. Resumable: a model whose run finished is reused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .defects import error_reduction_difference, load_defects, plant_defects

if TYPE_CHECKING:
    from rich.console import Console

    from ..domain import Domain


class CompareError(ValueError):
    """The comparison cannot run (bad model list, a domain without defects.yaml, ...)."""


def compare_evolution(run_dir: Path, models: Sequence[tuple[str, str]], domain: Domain, *,
                      rounds: int = 4, dev_n: int = 40, regression_n: int = 40, test_n: int = 60,
                      seed: int = 0, console: Console | None = None) -> dict[str, Any]:
    """Evolve the defective harness once per (name, model spec), baseline first; write and
    return `compare.json`'s summary: each model's test error before and after, and the
    difference of the reductions (candidate minus baseline) with its 95% interval."""
    from .config import EvolveConfig
    from .confirm import ConfirmGate
    from .journal import Journal
    from .loop import EvolveLoop
    from .proposers import RuleBasedProposer
    from .report import build_report, policy_for

    if len(models) != 2 or any(not name or not spec for name, spec in models):
        raise CompareError("give exactly two models NAME=SPEC (baseline first, then the candidate)")
    if domain.defects_file is None:
        raise CompareError(f"domain '{domain.name}' ships no defects.yaml (its defective starting harness)")
    defects = load_defects(domain.defects_file)
    reports: dict[str, dict[str, Any]] = {}
    for name, spec in models:
        folder = run_dir / name
        harness = folder / "repo" / "harness"
        if not harness.is_dir():
            plant_defects(domain.harness_dir, folder / "repo", defects)
        cfg = EvolveConfig(model=spec, approve="auto", max_rounds=rounds, dev_n=dev_n,
                           regression_n=regression_n, test_n=test_n, seed=seed)
        try:
            policy = policy_for(spec, domain)
        except ValueError as exc:
            raise CompareError(str(exc)) from None
        judge = domain.judge(role="eval")
        gate = ConfirmGate(Journal(folder / "run" / "journal.jsonl"), "auto")
        EvolveLoop(harness, folder / "run", policy=policy, judge=judge, proposer=RuleBasedProposer(),
                   gate=gate, config=cfg, console=console, domain=domain).run()
        reports[name] = build_report(harness, folder / "run", policy, judge, cfg, domain)
    (a, _), (b, _) = models
    diff = error_reduction_difference(reports, a, b, seed=seed)
    summary = {"defects": [d.id for d in defects], "models": dict(models),
               "reports": {n: {k: r[k] for k in ("test_error_before", "test_error_after", "rounds")}
                           for n, r in reports.items()}, "difference": diff}
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "compare.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
