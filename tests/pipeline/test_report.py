"""The pipeline's config, resumable stage records and report, on synthetic suite results."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hatkit.pipeline import PipelineConfigError, RunDir, RunMismatchError, load_pipeline_config, plan
from hatkit.pipeline.report import findings, write_report
from hatkit.pipeline.run import prepare
from hatkit.pipeline.table import COLUMNS, read_results

METRICS: dict[str, dict[str, dict[str, Any]]] = {
    "base": {"live_qa": {"score": 0.10}, "variant_qa": {"score": 0.08},
             "general_if": {"prompt_strict": 0.40}, "lengths": {"think_tool_mean": 0.0,
                                                                "think_reply_mean": 0.0}},
    "fixed_sft": {"live_qa": {"score": 0.70}, "variant_qa": {"score": 0.45},
                  "general_if": {"prompt_strict": 0.30}},
    "hsa_sft": {"live_qa": {"score": 0.72}, "variant_qa": {"score": 0.70},
                "general_if": {"prompt_strict": 0.31}},
    "opd": {"live_qa": {"score": 0.71}, "variant_qa": {"score": 0.69},
            "general_if": {"prompt_strict": 0.40},
            "lengths": {"think_tool_mean": 40.0, "think_reply_mean": 20.0}},
    "hat": {"live_qa": {"score": 0.74}, "variant_qa": {"score": 0.73},
            "general_if": {"prompt_strict": 0.37}, "safety": {"violation_rate": 0.125},
            "lengths": {"think_tool_mean": 25.0, "think_reply_mean": 9.5},
            "latency": {"turn_p50_s": 1.25, "turn_p95_s": 2.5}},
}


def _write_results(run: RunDir) -> None:
    for row, suites in METRICS.items():
        for suite, metrics in suites.items():
            folder = run.eval / row
            folder.mkdir(parents=True, exist_ok=True)
            data = {"suite": suite, "metrics": metrics, "n": 12,
                    "details": {"think_tool": [1, 2, 3], "think_reply": [4, 5]} if suite == "lengths" else {}}
            (folder / f"{suite}.json").write_text(json.dumps(data))


def test_config_profiles_file_and_errors(tmp_path: Path) -> None:
    quick = load_pipeline_config("quick")
    assert quick.profile == "quick" and quick.data.train_episodes > 0
    cfg = tmp_path / "p.yaml"
    cfg.write_text("seed: 3\ndata:\n  train_episodes: 5\ntrain:\n  sft:\n    max_steps: 2\n")
    loaded = load_pipeline_config("quick", cfg)
    assert (loaded.seed, loaded.data.train_episodes, loaded.train["sft"]) == (3, 5, {"max_steps": 2})
    assert loaded.data.n_variants == quick.data.n_variants  # untouched fields keep the profile
    cfg.write_text("sed: 3\n")
    with pytest.raises(PipelineConfigError, match=r"p.yaml: sed: .*did you mean 'seed'"):
        load_pipeline_config("quick", cfg)
    cfg.write_text("seed: [1\n")
    with pytest.raises(PipelineConfigError, match=r"p.yaml:\d+: not valid YAML"):
        load_pipeline_config("quick", cfg)
    with pytest.raises(PipelineConfigError, match="unknown profile 'huge'"):
        load_pipeline_config("huge")


def test_a_run_folder_refuses_other_settings(tmp_path: Path) -> None:
    prepare(load_pipeline_config("quick"), tmp_path / "r")
    prepare(load_pipeline_config("quick"), tmp_path / "r")  # same settings: reopened
    with pytest.raises(RunMismatchError, match="seed"):
        prepare(load_pipeline_config("quick", overrides={"seed": 9}), tmp_path / "r")


def test_plan_orders_training_before_its_evaluation() -> None:
    names = [s.name for s in plan()]
    assert names[0] == "data" and names[-1] == "report"
    for row in ("fixed_sft", "hsa_sft", "opd", "hat"):
        assert names.index(f"train-{row}") < names.index(f"eval-{row}")
    assert names.index("train-hsa_sft") < names.index("train-opd") < names.index("train-hat")


def test_report_cells_equal_the_suite_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    _write_results(run)
    out = write_report(run, load_pipeline_config("quick"))
    md = Path(out["report_md"]).read_text()
    html = Path(out["report_html"]).read_text()
    # Every table row carries the suite's numbers, formatted as the column says.
    line = next(ln for ln in md.splitlines() if ln.startswith("| HAT |"))
    cells = [c.strip() for c in line.strip("|").split("|")][1:]
    expected = {"live_qa": "0.740", "variant_qa": "0.730", "variant drop": "0.010",
                "general_if": "0.370", "safety violations": "0.125", "think_tool tokens": "25.0",
                "think_reply tokens": "9.5", "turn p50 s": "1.25", "turn p95 s": "2.50",
                "faults recovered": "n/a"}
    assert dict(zip([c.title for c in COLUMNS], cells, strict=True)) == expected
    assert out["table"]["HAT"]["live_qa"] == {"score": 0.74}
    for value in expected.values():
        assert f"<td>{value}</td>" in html
    assert html.count("data:image/png;base64,") == 3  # self-contained: plots inline
    assert not re.search(r'src="(?!data:)', html)


def test_findings_report_each_claim_either_way() -> None:
    results = {row: {s: {"metrics": m, "n": 12} for s, m in suites.items()}
               for row, suites in METRICS.items()}
    claims = {c["claim"]: c for c in findings(results)}
    assert len(claims) == 3
    assert all(c["holds"] == "yes" for c in claims.values())
    results["hsa_sft"]["variant_qa"]["metrics"]["score"] = 0.2  # HSA now drops more than fixed
    results["hat"]["live_qa"]["metrics"]["score"] = 0.5  # RL lost accuracy
    claims = {c["claim"]: c for c in findings(results)}
    assert claims["HSA keeps the variant drop small where fixed-harness SFT loses more"]["holds"] == "no"
    assert claims["RL shortens reasoning without losing accuracy"]["holds"] == "no"
    # Differences below one item's worth (1/12 here) are not called either way.
    results["opd"]["general_if"]["metrics"]["prompt_strict"] = 0.32
    results["hat"]["live_qa"]["metrics"]["score"] = 0.71
    results["hat"]["lengths"]["metrics"].update(think_tool_mean=39.5, think_reply_mean=20.0)
    claims = {c["claim"]: c for c in findings(results)}
    assert claims["OPD recovers general instruction following lost in SFT"]["holds"] == "too close to call"
    assert claims["RL shortens reasoning without losing accuracy"]["holds"] == "too close to call"


def test_report_escapes_untrusted_text(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    _write_results(run)
    evil = run.eval / "hat" / "safety.json"
    evil.write_text(json.dumps({"suite": "safety", "n": 1, "metrics": {"<script>alert(1)</script>": 1}}))
    html = Path(write_report(run, load_pipeline_config("quick"))["report_html"]).read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert read_results(run.eval)["hat"]["safety"]["n"] == 1


def test_estimates_cover_every_stage_and_rescale_by_finished_ones() -> None:
    from hatkit.pipeline.estimate import estimate, rescale

    cfg = load_pipeline_config("quick")
    est = estimate(plan(), cfg)
    assert [e.stage for e in est] == [s.name for s in plan()] and all(e.seconds > 0 for e in est)
    sft = next(e for e in est if e.stage == "train-hsa_sft")
    assert "36 steps" in sft.basis  # the pipeline's own override of the stage profile
    assert rescale(est, {}) == 1.0
    assert rescale(est, {"data": 2 * est[0].seconds}) == 2.0
