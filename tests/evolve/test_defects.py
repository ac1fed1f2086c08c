"""Claim 4's set-up: the documented defective harness, and the difference of two test-error
reductions with a paired interval."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.domain import get_domain
from hatkit.evolve.defects import Defect, error_reduction_difference, load_defects, plant_defects
from hatkit.harness import load_harness

LC = get_domain("live_commerce")


def test_the_documented_defects_are_planted_into_a_committed_valid_harness(tmp_path: Path) -> None:
    assert LC.defects_file is not None
    defects = load_defects(LC.defects_file)
    assert {d.id for d in defects} >= {"wrong_tool_name", "stale_threshold_in_prompt", "size_guide_disabled"}
    harness = plant_defects(LC.harness_dir, tmp_path / "repo", defects)
    h = load_harness(harness)
    assert "get_size_guide" not in h.spec.enabled.tools
    assert "$79 or more" in (harness / "prompts" / "system.j2").read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path / "repo", capture_output=True, text=True
    )
    assert status.stdout == ""
    with pytest.raises(ValueError, match="holds 'no such text' 0 times"):
        plant_defects(
            LC.harness_dir, tmp_path / "other", [Defect("x", "harness.yaml", "no such text", "", "")]
        )


def _report(before: list[bool], after: list[bool]) -> dict[str, object]:
    return {
        "test_items": [
            {"question_id": f"q{i}", "before": b, "after": a}
            for i, (b, a) in enumerate(zip(before, after, strict=True))
        ]
    }


def test_the_difference_of_error_reductions_is_paired_with_an_interval() -> None:
    fixed = _report([False] * 10 + [True] * 10, [False] * 8 + [True] * 12)  # error 0.5 -> 0.4
    hat = _report([False] * 10 + [True] * 10, [False] * 2 + [True] * 18)  # error 0.5 -> 0.1
    d = error_reduction_difference({"fixed": fixed, "hat": hat}, "fixed", "hat")
    assert (d["reduction_a"], d["reduction_b"], d["difference"], d["n"]) == (0.1, 0.4, 0.3, 20)
    assert 0.0 < d["lo"] < 0.3 < d["hi"] <= 0.6
    other = _report([True] * 20, [True] * 20)
    other["test_items"][0]["question_id"] = "elsewhere"  # type: ignore[index]
    with pytest.raises(ValueError, match="different questions"):
        error_reduction_difference({"fixed": fixed, "x": other}, "fixed", "x")


def test_evolve_compare_runs_both_models_and_writes_the_comparison(tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["evolve", "compare", "--run-dir", str(tmp_path), "--model", "a=oracle"])
    assert bad.exit_code == 1 and "exactly two" in bad.output
    r = CliRunner().invoke(
        app,
        [
            "evolve",
            "compare",
            "--run-dir",
            str(tmp_path),
            "--model",
            "fixed=oracle",
            "--model",
            "hat=oracle",
            "--dev-n",
            "8",
            "--regression-n",
            "8",
            "--test-n",
            "10",
            "--rounds",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["difference"]["n"] == 10 and data["difference"]["difference"] == 0.0  # same frozen policy
    assert data["reports"]["hat"]["test_error_after"] <= data["reports"]["hat"]["test_error_before"]
