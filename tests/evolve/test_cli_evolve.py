"""`hatkit evolve run|pending|decide` and `hatkit release list|show|diff|rollback`."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import disable, make_repo
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.harness import load_harness


def test_evolve_run_report_and_release_commands(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"), disable("get_return_policy"))
    run = tmp_path / "run"
    cli = CliRunner()
    r = cli.invoke(app, ["evolve", "run", "--harness", str(harness), "--run-dir", str(run),
                         "--approve", "auto", "--dev-n", "30", "--regression-n", "30",
                         "--test-n", "30", "--min-cluster", "1", "--rounds", "4", "--report"])
    assert r.exit_code == 0, r.output
    report = json.loads((run / "report.json").read_text())
    assert report["test_error_before"] > 0 and report["test_error_after"] == 0
    assert report["error_reduction_rate"] == 1.0 and report["approve_policy"] == "auto"
    assert len(report["releases"]) == 2
    names = [x["name"] for x in report["releases"]]
    r = cli.invoke(app, ["release", "list", "--harness", str(harness)])
    assert r.exit_code == 0 and names[0][:20] in r.output
    r = cli.invoke(app, ["release", "show", names[0], "--harness", str(harness)])
    assert r.exit_code == 0 and '"model": "oracle"' in r.output
    r = cli.invoke(app, ["release", "diff", names[0], names[1], "--harness", str(harness)])
    assert r.exit_code == 0 and "enabled.tools" in r.output
    r = cli.invoke(app, ["release", "rollback", names[0], "--harness", str(harness)])
    assert r.exit_code == 0, r.output
    assert load_harness(harness).content_hash == report["releases"][0]["harness_hash"]
    r = cli.invoke(app, ["release", "show", "nope", "--harness", str(harness)])
    assert r.exit_code == 1 and "no release named" in r.output
    r = cli.invoke(app, ["evolve", "pending", "--run-dir", str(run)])
    assert r.exit_code == 0 and "no pending edits" in r.output
    r = cli.invoke(app, ["evolve", "decide", "abc", "approve", "--run-dir", str(run)])
    assert r.exit_code == 1
