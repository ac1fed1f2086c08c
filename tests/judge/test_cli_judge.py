"""`hatkit judge run | calibrate | report | agree` as a user drives them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.judge.labels import Label, save_labels

runner = CliRunner()


def test_judge_run_on_simulated_traces_with_variants(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    r = runner.invoke(app, ["sim", "run", "--out", str(traces), "--episodes", "20", "--variants",
                            "train", "--n-variants", "2"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["judge", "run", "--traces", str(traces), "--out", str(out)])
    assert r.exit_code == 0, r.output
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(verdicts) == 20 and all(v["role"] == "eval" and v["accuracy"] == 1.0 for v in verdicts)


def test_judge_run_without_the_agent_harness_is_a_clear_error(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    runner.invoke(app, ["sim", "run", "--out", str(traces), "--episodes", "4", "--variants", "train",
                        "--n-variants", "1"])
    moved = tmp_path / "elsewhere" / "t.jsonl"
    moved.parent.mkdir()
    traces.rename(moved)  # the variants folder no longer sits beside the traces
    r = runner.invoke(app, ["judge", "run", "--traces", str(moved), "--out", str(tmp_path / "v.jsonl")])
    assert r.exit_code == 1 and "pass --harness" in r.output


def test_calibrate_twice_then_report(tmp_path: Path) -> None:
    log = tmp_path / "rounds.jsonl"
    for _ in range(2):
        r = runner.invoke(app, ["judge", "calibrate", "--log", str(log), "--n", "24"])
        assert r.exit_code == 0, r.output
    assert "reference labels" in r.output and "unchanged since round 1" in r.output
    # every round also scores the domain's independently written families (leave-one-family-out)
    # (the newest round, heldout_families_r5.jsonl, every family sealed)
    assert "independent families" in r.output and "restock_promised" in r.output
    rounds = [json.loads(x) for x in log.read_text().splitlines()]
    assert rounds[-1]["families"]["all"]["accuracy"]["n"] == 390
    # the shipped split: sealed families apart, false alarms on the sealed clean conversations
    fams = rounds[-1]["families"]
    assert fams["all sealed"]["accuracy"]["n"] == 390 and "wrong_rule_value" not in fams
    assert rounds[-1]["false_alarms"]["n"] == fams["clean:sealed"]["accuracy"]["n"] == 90
    assert "false alarms on sealed clean" in r.output
    png = tmp_path / "a.png"
    r = runner.invoke(app, ["judge", "report", "--log", str(log), "--png", str(png)])
    assert r.exit_code == 0 and png.stat().st_size > 5000 and "independent families" in r.output
    assert len(log.read_text().splitlines()) == 2


def test_agree_with_imported_labels(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    runner.invoke(app, ["sim", "run", "--out", str(traces), "--episodes", "6"])
    ids = [json.loads(line)["episode_id"] for line in traces.read_text().splitlines()]
    labels = tmp_path / "labels.csv"
    save_labels([Label(i, "accuracy", 1 if k else 0, "ana") for k, i in enumerate(ids)], labels)
    r = runner.invoke(app, ["judge", "agree", "--traces", str(traces), "--labels", str(labels)])
    assert r.exit_code == 0, r.output
    assert "83.3%" in r.output  # the judge passes all six; "ana" failed one of them
    bad = tmp_path / "bad.csv"
    bad.write_text("trace_id,dimension,label,annotator\nx,accuracy,7,ana\n")
    r = runner.invoke(app, ["judge", "agree", "--traces", str(traces), "--labels", str(bad)])
    assert r.exit_code == 1 and "bad.csv:2" in r.output
