"""The evolution report: test error before and after K rounds (the error reduction rate), the
rounds, the releases and the Confirm policy that admitted them.

Test questions are never seen by the loop (it diagnoses and evaluates on dev, and checks
regressions on a fixed dev-split set), so the before/after figure is held out.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..domain import Domain, domain_of
from ..harness import Harness, load_harness
from ..harness.versioning import HarnessRepo
from ..judge.verdict import Judge
from ..models.base import ChatModel
from ..sim.truth import Question
from .config import EvolveConfig
from .edits import write_atomic
from .evaluate import PolicyFactory, evaluate
from .journal import Journal


def policy_for(model: str, domain: Domain) -> PolicyFactory:
    """'oracle' -> the domain's oracle policy per harness; anything else -> one loaded backend,
    reused for every harness (the weights are frozen during evolution)."""
    if model == "oracle":
        def oracle(h: Harness, qs: Sequence[Question]) -> ChatModel:
            return domain.oracle(h, qs)

        return oracle
    from ..models.select import load_model

    backend = load_model(model)
    factory: Callable[[Harness, Sequence[Question]], ChatModel] = lambda h, qs: backend  # noqa: E731
    return factory


def error_reduction(before: float, after: float) -> float:
    """(before - after) / before; 0 when there was no error to reduce."""
    return round((before - after) / before, 4) if before > 0 else 0.0


def build_report(harness_dir: Path, run_dir: Path, policy: PolicyFactory, judge: Judge,
                 config: EvolveConfig, domain: Domain | str | None = None) -> dict[str, Any]:
    """Evaluate the test split on the harness the run started from and on the current one."""
    journal = Journal(run_dir / "journal.jsonl")
    starts = journal.records("round_start")
    if not starts:
        raise ValueError(f"{run_dir} has no evolution rounds to report on")
    repo = HarnessRepo(harness_dir)
    after_h = load_harness(repo.folder)
    questions = domain_of(after_h, domain).questions(
        after_h.rules, n=config.test_n, seed=config.seed, split="test", locale=config.locale,
        categories=config.categories)
    with tempfile.TemporaryDirectory(prefix="hatkit-evolve-report-") as tmp:
        before_h = load_harness(repo.materialize(starts[0]["base_commit"], Path(tmp) / "before"))
        before = evaluate(before_h, questions, policy, judge)
        after = evaluate(after_h, questions, policy, judge)
    stop = journal.records("stop")
    report = {
        "model": config.model, "approve_policy": (journal.records("start") or [{}])[0].get("approve"),
        "rounds": len(journal.records("round_end")),
        "stop_reason": stop[0]["reason"] if stop else None,
        "releases": [{k: r[k] for k in ("round", "name", "tag", "harness_hash", "edit_id")}
                     for r in journal.records("release")],
        "test_before": before.summary(), "test_after": after.summary(),
        "test_items": [{"question_id": x.question_id, "before": x.passed, "after": y.passed}
                       for x, y in zip(before.episodes, after.episodes, strict=True)],
        "test_error_before": round(before.error_rate, 4), "test_error_after": round(after.error_rate, 4),
        "error_reduction_rate": error_reduction(before.error_rate, after.error_rate),
        "judge": getattr(judge, "name", ""),
    }
    write_atomic(run_dir / "report.json", json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return report
