"""The same evolution machinery on a judge harness: calibration rounds as evolution rounds.

Score = the judge's agreement with human (or reference) labels on the CALIBRATION items;
"categories" for the regression check are the label dimensions (accuracy, effectiveness),
so an edit that buys accuracy agreement with effectiveness agreement is refused. The
held-out (test) items are judged only to report a figure in the release; the diagnosis and
the proposers never see them, and `check_items_disjoint` refuses overlapping sets.

`JudgeThresholdProposer` is the templated proposer for judges: it moves a dimension's pass
threshold towards the labels when disagreements on it lean one way (too strict or too
lenient). Any `Proposer` (e.g. the LLM proposer) can edit a judge harness as well.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..domain import Domain
from ..harness import load_harness
from ..harness.versioning import HarnessRepo
from ..judge.calibrate import check_items_disjoint, evaluate_items
from ..judge.labels import LabelledItem
from ..judge.verdict import Judge
from .confirm import ConfirmGate
from .diagnose import Cluster, Diagnosis
from .edits import Edit, EditError, build_candidate, unified_diff
from .journal import PendingEdit
from .loop import close_round
from .proposers import ProposalContext, Proposer
from .regression import check_regression
from .release import make_release
from .stopping import StopRules, should_stop


def agreement_summary(judge: Judge, items: Sequence[LabelledItem]) -> dict[str, Any]:
    """{pass_rate: mean agreement, by_category: agreement per dimension, clusters}."""
    result = evaluate_items(judge, items)
    by = {d: float(r.agreement or 0.0) for d, r in result.items()}
    groups: dict[tuple[str, str], list[str]] = {}
    for d, r in result.items():
        for x in r.disagreements:
            side = "too_lenient" if x.judge else "too_strict"
            groups.setdefault((d, side), []).append(x.trace_id)
    clusters = [Cluster(f"{d}/{s}", d, s, len(ids), {s: len(ids)}, ids[:5])
                for (d, s), ids in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
    return {"harness_hash": judge.judge_hash, "n": len(items),
            "pass_rate": round(sum(by.values()) / max(1, len(by)), 4),
            "by_category": {k: round(v, 4) for k, v in by.items()},
            "clusters": [c.to_dict() for c in clusters]}


class JudgeThresholdProposer:
    """Move `<dimension>_pass` by `step` towards the labels."""

    name = "judge_threshold"

    def __init__(self, step: float = 0.1) -> None:
        self.step = step

    def propose(self, ctx: ProposalContext) -> list[Edit]:
        text = (ctx.harness.root / "harness.yaml").read_text(encoding="utf-8")
        out = []
        for c in ctx.diagnosis.clusters:
            m = re.search(rf"^(\s*{c.category}_pass:\s*)([0-9.]+)", text, re.M)
            if m is None:
                continue
            value = float(m.group(2)) + (-self.step if c.error_type == "too_strict" else self.step)
            value = round(min(1.0, max(0.0, value)), 4)
            new = text[:m.start(2)] + f"{value}" + text[m.end(2):]
            out.append(Edit({"harness.yaml": new}, f"{c.count} {c.key} disagreement(s): "
                            f"{c.category}_pass {m.group(2)} -> {value}", c.to_dict(), self.name))
        return out


def evolve_judge(judge_dir: Path, run_dir: Path, calibration: Sequence[LabelledItem],
                 heldout: Sequence[LabelledItem], proposer: Proposer, gate: ConfirmGate, *,
                 domain: Domain, threshold: float = 0.02, rules: StopRules | None = None) -> list[str]:
    """Evolve a judge harness (the domain's programmatic rubric reads it) against calibration
    labels; returns the release names."""
    check_items_disjoint(calibration, heldout)
    rules = rules or StopRules(patience=1, min_cluster=1, max_rounds=6)
    repo, j = HarnessRepo(judge_dir), gate.journal
    if not j.records("start"):
        j.append("start", 0, target="judge", approve=gate.policy, proposer=proposer.name,
                 harness=str(repo.folder), n_calibration=len(calibration), n_heldout=len(heldout))
    while not j.records("stop"):
        rnd = len(j.records("round_end"))
        base = load_harness(repo.folder)
        diag = next((r for r in j.records("diagnosis") if r["round"] == rnd), None) or j.append(
            "diagnosis", rnd, **agreement_summary(domain.judge(base), calibration))
        d = Diagnosis.from_dict(diag)
        released: tuple[str, float] | None = None
        reason = should_stop(rules, [], d)
        props = [] if reason else ([r for r in j.records("proposal") if r["round"] == rnd] or j.append_many(
            "proposal", rnd, [{**e.to_record(), "diff": unified_diff(base.root, e)}
                              for e in proposer.propose(ProposalContext(base, d, None, rnd))]))
        for prop in props:
            edit = Edit.from_record(prop)
            try:
                cand = build_candidate(base.root, edit, run_dir / "work" / edit.edit_id)
            except EditError as exc:
                j.decide(prop["edit_id"], "reject", by="validator", comment=str(exc))
                continue
            cal = agreement_summary(domain.judge(cand), calibration)
            gain = round(cal["pass_rate"] - d.pass_rate, 4)
            j.append("evaluation", rnd, edit_id=edit.edit_id, dev=cal, dev_delta=gain, valid=True)
            out = gate.confirm(PendingEdit(edit.edit_id, rnd, sorted(edit.files), prop["diff"],
                                           edit.rationale, dict(edit.cluster), edit.needs_human, gain))
            if out.decision != "approve" or gain <= rules.min_gain:
                continue
            reg = check_regression(diag, cal, threshold)
            j.append("regression", rnd, edit_id=edit.edit_id, **reg.to_dict())
            if not reg.passed:
                continue
            held = agreement_summary(domain.judge(cand), heldout)
            name = f"{repo.folder.name}-cal{rnd}-{edit.edit_id[:8]}"
            report = {"round": rnd, "edit": edit.rationale, "calibration_before": diag["by_category"],
                      "calibration_after": cal["by_category"], "heldout_after": held["by_category"],
                      "approve_policy": gate.policy, "approved_by": out.by}
            rel = make_release(repo, cand.root, name=name, edit_id=edit.edit_id, model="judge",
                               report=report, report_path=run_dir / "reports" / f"{name}.json",
                               message=f"judge calibration round {rnd}: {edit.rationale[:60]}")
            j.append("release", rnd, edit_id=edit.edit_id, name=rel.name, tag=rel.tag,
                     harness_hash=rel.harness_hash, heldout=held["by_category"])
            released = (edit.edit_id, gain)
            break
        close_round(j, rnd, released[0] if released else None)
        j.append("round_end", rnd, released=released[0] if released else None,
                 gain=released[1] if released else None)
        reason = reason or should_stop(rules, [r.get("gain") for r in j.records("round_end")], None)
        if reason:
            j.append("stop", rnd, reason=reason)
    return [r["name"] for r in j.records("release")]
