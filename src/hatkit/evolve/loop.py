"""The Harness Evolution loop: Diagnose -> Propose -> Evaluate -> Confirm -> Regression check
-> Release, round after round, until an early-stopping rule fires.

Resumable by construction: the journal is the only state. Each step first looks for its own
record and reuses it, so a run killed anywhere (even kill -9) resumes without repeating or
losing a round: proposals are journaled whole (an LLM proposer is not asked again),
decisions are never asked twice, and evaluations are not rerun. The harness folder is only
written by a release, from a working copy built off the round's base commit; a release
interrupted half-way is rolled back to HEAD and redone whole (release.make_release).

Non-code edits are evaluated on dev before the Confirm gate, so the human sees the gain;
Python hook/tool code is not run before a human approved it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ..domain import Domain, domain_of
from ..harness import Harness, load_harness
from ..harness.versioning import HarnessRepo, VersioningError
from ..judge.verdict import Judge
from ..sim.truth import Question
from .config import EvolveConfig
from .confirm import ConfirmGate
from .diagnose import Diagnosis, diagnose
from .edits import Edit, EditError, build_candidate, unified_diff
from .evaluate import PolicyFactory, evaluate
from .journal import Journal, PendingEdit
from .proposers import ProposalContext, Proposer
from .regression import category_deltas, check_regression
from .release import make_release
from .stopping import should_stop

StepHook = Callable[[str], None]
"""Called at every step boundary with the step's name (tests inject crashes here)."""


def close_round(journal: Journal, rnd: int, released: str | None) -> None:
    """Edits of a finished round that nobody decided are rejected as superseded, so the
    Confirm gate (and the UI's pending list) never shows a stale edit."""
    why = f"superseded: edit {released} of this round was released" if released else "round ended"
    for e in journal.pending():
        if e.round == rnd:
            journal.decide(e.edit_id, "reject", by="loop", comment=why)


@dataclass
class LoopResult:
    rounds: int
    releases: list[str]
    stop_reason: str


class EvolveLoop:
    def __init__(self, harness_dir: Path, run_dir: Path, *, policy: PolicyFactory, judge: Judge,
                 proposer: Proposer, gate: ConfirmGate, config: EvolveConfig,
                 console: Console | None = None, step_hook: StepHook | None = None,
                 domain: Domain | str | None = None) -> None:
        self.repo = HarnessRepo(harness_dir)
        self.run_dir = Path(run_dir)
        self.journal = gate.journal
        self.policy, self.judge, self.proposer, self.gate = policy, judge, proposer, gate
        self.cfg = config
        self.console = console or Console(stderr=True, quiet=True)
        self.hook = step_hook or (lambda _name: None)
        start = load_harness(self.repo.folder)
        self.domain = domain_of(start, domain)
        rules = start.rules
        kw: dict[str, Any] = dict(locale=config.locale, categories=config.categories, split="dev")
        self.dev: list[Question] = self.domain.questions(rules, n=config.dev_n, seed=config.seed, **kw)
        self.reg: list[Question] = self.domain.questions(rules, n=config.regression_n,
                                                         seed=config.seed + 7919, **kw)

    # -- helpers --
    def _log(self, kind: str, rnd: int, **fields: Any) -> dict[str, Any]:
        rec = self.journal.append(kind, rnd, **fields)
        self.hook(kind)
        return rec

    def _find(self, kind: str, rnd: int, edit_id: str | None = None) -> dict[str, Any] | None:
        hits = [r for r in self.journal.records(kind) if r["round"] == rnd
                and (edit_id is None or r.get("edit_id") == edit_id)]
        return hits[-1] if hits else None

    def _base(self, rnd: int, commit: str) -> Harness:
        dest = self.run_dir / "base" / f"round-{rnd}"
        if not (dest / "harness.yaml").is_file():
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            self.repo.materialize(commit, tmp)
            tmp.rename(dest)
        return load_harness(dest)

    def _ensure_clean(self) -> None:
        if not self.repo.is_dirty():
            return
        recs = self.journal.records()
        passed = {r["edit_id"] for r in recs if r["kind"] == "regression" and r.get("passed")}
        released = {r["edit_id"] for r in recs if r["kind"] == "release"}
        if passed - released:  # a release died mid-swap: make_release redoes it from HEAD
            self.repo.rollback("HEAD", force=True, commit=False)
            return
        raise VersioningError(f"{self.repo.folder} has uncommitted changes; commit or discard "
                              "them before evolving it")

    # -- the loop --
    def run(self) -> LoopResult:
        self._ensure_clean()
        if not self.journal.records("start"):
            self._log("start", 0, config=self.cfg.model_dump(), approve=self.gate.policy,
                      proposer=self.proposer.name, harness=str(self.repo.folder),
                      judge=getattr(self.judge, "name", ""))
        while not (stop := self.journal.records("stop")):
            self._round(len(self.journal.records("round_end")))
        return LoopResult(len(self.journal.records("round_end")),
                          [r["name"] for r in self.journal.records("release")], stop[0]["reason"])

    def _round(self, rnd: int) -> None:
        start = self._find("round_start", rnd)
        if start is None:
            self._ensure_clean()
            head = self.repo.repo.head.commit.hexsha
            start = self._log("round_start", rnd, base_commit=head,
                              base_hash=load_harness(self.repo.folder).content_hash)
        base = self._base(rnd, start["base_commit"])
        self.console.rule(f"round {rnd}  harness {base.short_hash}")
        rec = self._find("diagnosis", rnd)
        if rec is None:
            traces = self.run_dir / "traces" / f"round-{rnd}-dev-failures.jsonl"
            with self.console.status(f"diagnosing: {len(self.dev)} dev + {len(self.reg)} "
                                     "regression questions on the base harness"):
                dev = evaluate(base, self.dev, self.policy, self.judge, traces)
                reg = evaluate(base, self.reg, self.policy, self.judge)
            rec = self._log("diagnosis", rnd, dev=dev.summary(), regression_base=reg.summary(),
                            traces=str(traces), **diagnose(dev).to_dict())
        diag = Diagnosis.from_dict({k: rec[k] for k in ("harness_hash", "n", "pass_rate",
                                                        "by_category", "clusters")})
        self.console.print(f"dev pass rate {diag.pass_rate:.3f}; {diag.n_failures} failures in "
                           f"{len(diag.clusters)} clusters", highlight=False)
        if reason := should_stop(self.cfg.stop_rules(), [], diag):
            self._end(rnd, None, reason)
            return
        props = [r for r in self.journal.records("proposal") if r["round"] == rnd]
        if not props:
            ctx = ProposalContext(base, diag, Path(rec["traces"]), rnd)
            tried = {p["edit_id"] for p in self.journal.records("proposal")}  # no retrying
            items = [{**e.to_record(), "diff": unified_diff(base.root, e)}
                     for e in self.proposer.propose(ctx) if e.edit_id not in tried]
            items = items[:self.cfg.max_proposals]
            items = items or [{"edit_id": "none", "files": {}, "rationale": "nothing to propose",
                               "cluster": {}, "proposer": self.proposer.name, "needs_human": False,
                               "diff": ""}]
            props = self.journal.append_many("proposal", rnd, items)
            self.hook("proposal")
        if [p["edit_id"] for p in props] == ["none"]:
            self._end(rnd, None, f"the {self.proposer.name} proposer has nothing new to try")
            return
        released = None
        for prop in props:
            if prop["edit_id"] != "none" and (gain := self._try(rnd, base, rec, prop)) is not None:
                released = (prop["edit_id"], gain)
                break
        self._end(rnd, released, None)

    def _evaluate(self, rnd: int, base: Harness, diag: dict[str, Any], eid: str, edit: Edit,
                  edited: bool) -> dict[str, Any]:
        work = self.run_dir / "work" / edit.edit_id
        try:
            cand = build_candidate(base.root, edit, work)
        except EditError as exc:
            self.console.print(f"edit {eid} is invalid: {exc}", markup=False, highlight=False)
            return self._log("evaluation", rnd, edit_id=eid, valid=False, error=str(exc),
                             edited=edited, dev_delta=None, category_deltas={})
        with self.console.status(f"evaluating edit {eid} on {len(self.dev)} dev questions"):
            dev = evaluate(cand, self.dev, self.policy, self.judge)
        return self._log("evaluation", rnd, edit_id=eid, valid=True, edited=edited,
                         dev=dev.summary(), dev_delta=round(dev.pass_rate - diag["pass_rate"], 4),
                         category_deltas=category_deltas(diag["by_category"], dev.by_category()))

    def _try(self, rnd: int, base: Harness, diag: dict[str, Any], prop: dict[str, Any]) -> float | None:
        """Run one proposal through the gate and the checks; its dev gain if released."""
        eid = prop["edit_id"]
        edit = Edit.from_record(prop)
        ev = self._find("evaluation", rnd, eid)
        if ev is None and not edit.needs_human:
            ev = self._evaluate(rnd, base, diag, eid, edit, False)
        if ev is not None and not ev.get("valid", True):
            self.journal.decide(eid, "reject", by="validator", comment=str(ev.get("error", "")))
            return None
        pending = PendingEdit(eid, rnd, sorted(edit.files), prop.get("diff", ""), edit.rationale,
                              dict(edit.cluster), edit.needs_human, (ev or {}).get("dev_delta"),
                              dict((ev or {}).get("category_deltas", {})))
        outcome = self.gate.confirm(pending)
        self.hook("decision")
        if outcome.decision != "approve":
            return None
        if outcome.edited:
            edit = Edit({**edit.files, **outcome.edited}, edit.rationale, edit.cluster, edit.proposer)
        if ev is None or (outcome.edited and not ev.get("edited")):
            ev = self._evaluate(rnd, base, diag, eid, edit, bool(outcome.edited))
            if not ev.get("valid", True):
                return None  # the (human-edited) edit does not validate; already decided
        gain = float(ev["dev_delta"])
        if gain <= self.cfg.min_gain:
            self.console.print(f"edit {eid}: dev gain {gain:+.3f} is not above "
                               f"{self.cfg.min_gain}; not released", highlight=False)
            return None
        reg = self._find("regression", rnd, eid)
        if reg is None:
            cand = build_candidate(base.root, edit, self.run_dir / "work" / edit.edit_id)
            with self.console.status(f"regression check of edit {eid}"):
                cand_reg = evaluate(cand, self.reg, self.policy, self.judge)
            report = check_regression(diag["regression_base"], cand_reg.summary(),
                                      self.cfg.regression_threshold)
            reg = self._log("regression", rnd, edit_id=eid, **report.to_dict(),
                            candidate=cand_reg.summary())
        if not reg["passed"]:
            self.console.print(f"edit {eid}: regression check failed {reg['drops']}", highlight=False)
            return None
        self._release(rnd, base, diag, prop, edit, ev, reg, outcome.by)
        return gain

    def _release(self, rnd: int, base: Harness, diag: dict[str, Any], prop: dict[str, Any],
                 edit: Edit, ev: dict[str, Any], reg: dict[str, Any], by: str) -> None:
        eid = prop["edit_id"]
        if self._find("release", rnd, eid):
            return
        cand = build_candidate(base.root, edit, self.run_dir / "work" / edit.edit_id)
        name = f"{self.repo.folder.name}-r{rnd}-{eid[:8]}"
        report = {"round": rnd, "edit_id": eid, "rationale": edit.rationale, "cluster": edit.cluster,
                  "approved_by": by, "approve_policy": self.gate.policy, "model": self.cfg.model,
                  "base_hash": base.content_hash, "dev_before": diag["dev"], "dev_after": ev["dev"],
                  "regression": {k: reg[k] for k in ("passed", "threshold", "total_delta",
                                                     "category_deltas", "drops")}}
        rel = make_release(self.repo, cand.root, name=name, edit_id=eid, model=self.cfg.model,
                           report=report, report_path=self.run_dir / "reports" / f"{name}.json",
                           message=f"evolve round {rnd}: {edit.rationale[:60]}",
                           on_swapped=lambda: self.hook("release_swap"))
        self._log("release", rnd, edit_id=eid, name=rel.name, tag=rel.tag,
                  harness_commit=rel.harness_commit, harness_hash=rel.harness_hash)
        self.console.print(f"released {rel.tag} ({rel.harness_hash[:12]})", highlight=False)

    def _end(self, rnd: int, released: tuple[str, float] | None, reason: str | None) -> None:
        close_round(self.journal, rnd, released[0] if released else None)
        if self._find("round_end", rnd) is None:
            self._log("round_end", rnd, released=released[0] if released else None,
                      gain=released[1] if released else None)
        gains = [r.get("gain") for r in self.journal.records("round_end")]
        reason = reason or should_stop(self.cfg.stop_rules(), gains, None)
        if reason:
            self._log("stop", rnd, reason=reason)
            self.console.print(f"stopped: {reason}", highlight=False)
