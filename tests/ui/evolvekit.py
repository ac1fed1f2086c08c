"""A real evolution loop for the end-to-end browser test: the shipped live_commerce harness
in git with one tool disabled (a planted defect), a proposer that re-enables it, the oracle
as the frozen policy, and the Confirm gate on `wait`, so only the web page can decide."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge
from hatkit.evolve.config import EvolveConfig
from hatkit.evolve.confirm import ConfirmGate
from hatkit.evolve.edits import Edit
from hatkit.evolve.journal import Journal
from hatkit.evolve.loop import EvolveLoop
from hatkit.evolve.proposers import ProposalContext
from hatkit.harness import resolve_harness_path

DISABLED = "get_promotions"


class ReEnable:
    """Round 0 proposes to re-enable the disabled tool; later rounds propose nothing."""

    name = "scripted"

    def __init__(self, harness: Path) -> None:
        self.harness = harness

    def propose(self, ctx: ProposalContext) -> list[Edit]:
        if ctx.round > 0:
            return []
        text = (self.harness / "harness.yaml").read_text()
        fixed = text.replace("check_stock, ", f"check_stock, {DISABLED}, ")
        return [Edit({"harness.yaml": fixed}, f"re-enable {DISABLED}", {"key": "scripted"}, "scripted")]


def defective_harness(tmp: Path) -> Path:
    harness = tmp / "repo" / "harness"
    shutil.copytree(resolve_harness_path("live_commerce"), harness,
                    ignore=shutil.ignore_patterns("__pycache__"))
    text = (harness / "harness.yaml").read_text()
    assert f"{DISABLED}, " in text
    (harness / "harness.yaml").write_text(text.replace(f"{DISABLED}, ", ""))
    repo = git.Repo.init(harness.parent)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.invalid")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "base harness")
    return harness


def waiting_loop(harness: Path, run_dir: Path) -> EvolveLoop:
    config = EvolveConfig(dev_n=20, regression_n=20, approve="wait", patience=1, min_cluster=1,
                          max_rounds=2)
    gate = ConfirmGate(Journal(run_dir / "journal.jsonl"), "wait", poll_s=0.05, timeout_s=120)
    return EvolveLoop(harness, run_dir, policy=LC.oracle, judge=ProgrammaticJudge(role="eval"),
                      proposer=ReEnable(harness), gate=gate, config=config)
