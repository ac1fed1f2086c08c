"""The evolution machinery calibrates a judge harness against labels, keeping calibration
and test items apart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import git

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.rubric.planted import build_labelled_set
from hatkit.domains.live_commerce.rubric.programmatic import JUDGE_HARNESS, ProgrammaticJudge
from hatkit.evolve.confirm import ConfirmGate
from hatkit.evolve.journal import Journal
from hatkit.evolve.judge_loop import JudgeThresholdProposer, agreement_summary, evolve_judge
from hatkit.harness import load_harness


@pytest.fixture(scope="module")
def items() -> tuple[list, list]:
    return (build_labelled_set(16, 0, "dev", variants=1, locales=("en",)),
            build_labelled_set(16, 0, "test", variants=1, locales=("en",)))


def test_judge_threshold_is_calibrated_and_released(tmp_path: Path, items: tuple[list, list]) -> None:
    cal, held = items
    judge = tmp_path / "repo" / "judge"
    shutil.copytree(JUDGE_HARNESS, judge, ignore=shutil.ignore_patterns("__pycache__"))
    yaml = judge / "harness.yaml"
    yaml.write_text(yaml.read_text().replace("effectiveness_pass: 0.8", "effectiveness_pass: 1.0"))
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "t@e.com"),
                 ("config", "user.name", "t"), ("add", "-A"), ("commit", "-q", "-m", "judge")):
        git(judge.parent, *args)
    before = agreement_summary(ProgrammaticJudge(load_harness(judge)), cal)
    gate = ConfirmGate(Journal(tmp_path / "run" / "journal.jsonl"), "auto")
    releases = evolve_judge(judge, tmp_path / "run", cal, held, JudgeThresholdProposer(), gate, domain=LC)
    after = agreement_summary(ProgrammaticJudge(load_harness(judge)), cal)
    assert releases and after["by_category"]["effectiveness"] > before["by_category"]["effectiveness"]
    assert after["by_category"]["accuracy"] >= before["by_category"]["accuracy"]
    rel = Journal(tmp_path / "run" / "journal.jsonl").records("release")
    assert "heldout" in rel[0]
    with pytest.raises(ValueError, match="disjoint"):
        evolve_judge(judge, tmp_path / "run2", cal, cal[:3], JudgeThresholdProposer(), gate, domain=LC)
