"""The pipeline's config, resumable stage records and report, on synthetic suite results."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hatkit.evals.paired import CLOSE
from hatkit.evals.success import rate_with_interval
from hatkit.pipeline import PipelineConfigError, RunDir, RunMismatchError, load_pipeline_config, plan
from hatkit.pipeline.config import PROFILES
from hatkit.pipeline.report import findings, write_report
from hatkit.pipeline.run import prepare
from hatkit.pipeline.table import COLUMNS, read_results

N = 12
SUCCESS: dict[str, dict[str, list[int]]] = {
    # case indices (of N) each model gets right, per suite
    "base": {"live_qa": [], "variant_qa": [], "general_if": [0, 1, 2, 3, 4]},
    "fixed_sft": {"live_qa": list(range(N)), "variant_qa": [0, 1], "general_if": [0, 1, 2, 3]},
    "hsa_sft": {"live_qa": list(range(N)), "variant_qa": list(range(N)), "general_if": [0, 1]},
    "opd": {"live_qa": list(range(N)), "variant_qa": list(range(N)), "general_if": list(range(N))},
    "hat": {"live_qa": list(range(11)), "variant_qa": list(range(11)), "general_if": list(range(11))},
}
EXTRA: dict[str, dict[str, dict[str, float]]] = {
    "base": {"lengths": {"think_tool_mean": 0.0, "think_reply_mean": 0.0}},
    "opd": {"lengths": {"think_tool_mean": 40.0, "think_reply_mean": 20.0}},
    "hat": {"safety": {"violation_rate": 0.125},
            "lengths": {"think_tool_mean": 25.0, "think_reply_mean": 9.5},
            "latency": {"turn_p50_s": 1.25, "turn_p95_s": 2.5},
            "faults": {"success": 0.5, "success_lo": 0.2538, "success_hi": 0.7462, "answer_rate": 1.0,
                       "recovered_rate": 0.75, "recovered": 3.0, "faulted": 4.0}},
}


def _suite_json(suite: str, won: list[int]) -> dict[str, Any]:
    """A suite result as the suites write it: metrics from per-case records."""
    flags = [i in won for i in range(N)]
    if suite == "general_if":
        return {"suite": suite, "n": N, "metrics": {"prompt_strict": sum(flags) / N},
                "details": {"prompts": [{"key": f"p{i}", "strict": [ok]} for i, ok in enumerate(flags)]}}
    return {"suite": suite, "n": N, "metrics": {**rate_with_interval(flags), "answer_rate": 1.0},
            "details": {"episodes": [{"case_id": f"c{i}", "success": ok} for i, ok in enumerate(flags)]}}


def _lengths(metrics: dict[str, float]) -> dict[str, list[float]]:
    """Per-call think lengths around the suite's means (+-2 tokens), 12 calls of each kind."""
    return {seg: [metrics[f"{seg}_mean"] + d for d in (-2, 0, 2) * 4]
            for seg in ("think_tool", "think_reply")}


def _results() -> dict[str, dict[str, dict[str, Any]]]:
    out = {row: {suite: _suite_json(suite, won) for suite, won in suites.items()}
           for row, suites in SUCCESS.items()}
    for row, suites in EXTRA.items():
        for suite, metrics in suites.items():
            details = _lengths(metrics) if suite == "lengths" else {}
            out[row][suite] = {"suite": suite, "metrics": metrics, "n": N, "details": details}
    return out


def _write_results(run: RunDir) -> None:
    for row, suites in _results().items():
        for suite, data in suites.items():
            folder = run.eval / row
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{suite}.json").write_text(json.dumps(data))


def test_config_profiles_file_and_errors(tmp_path: Path) -> None:
    quick = load_pipeline_config("quick")
    assert quick.profile == "quick" and quick.data.train_episodes > 0
    cfg = tmp_path / "p.yaml"
    cfg.write_text("seed: 3\ndata:\n  train_episodes: 5\ntrain:\n  sft:\n    max_steps: 2\n")
    loaded = load_pipeline_config("quick", cfg)
    quick_sft = PROFILES["quick"]["train"]["sft"]
    assert (loaded.seed, loaded.data.train_episodes) == (3, 5)
    assert loaded.train["sft"] == {**quick_sft, "max_steps": 2}
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
    # Every table row carries the suite's numbers, formatted as the column says: success first,
    # with its 95% interval (these result files predate the affected-item metrics: n/a).
    line = next(ln for ln in md.splitlines() if ln.startswith("| HAT |"))
    cells = [c.strip() for c in line.strip("|").split("|")][1:]
    expected = {"live_qa success": "0.92 [0.65, 0.99]", "variant_qa success": "0.92 [0.65, 0.99]",
                "variant drop": "0.000", "affected success": "n/a", "stale rules": "n/a",
                "stale tools": "n/a", "general_if": "0.917", "faults success": "0.50 [0.25, 0.75]",
                "faults recovered": "0.750", "safety violations": "0.125", "think_tool tokens": "25.0",
                "think_reply tokens": "9.5", "turn p50 s": "1.25", "turn p95 s": "2.50"}
    assert dict(zip([c.title for c in COLUMNS], cells, strict=True)) == expected
    assert out["table"]["HAT"]["faults"]["success"] == 0.5
    base = next(ln for ln in md.splitlines() if ln.startswith("| Base |"))
    assert "| 0.00 [0.00, 0.24] |" in base and base.endswith("| n/a | n/a | 0.0 | 0.0 | n/a | n/a |")
    for value in expected.values():
        assert f"<td>{value}</td>" in html
    assert html.count("data:image/png;base64,") == 3  # self-contained: plots inline
    assert not re.search(r'src="(?!data:)', html)
    # Paired verdicts for each adjacent pair of models, per QA suite, in both files.
    verdicts = {(r["suite"], r["pair"]): r["verdict"] for r in out["paired"]}
    assert verdicts == {
        ("live_qa", "Fixed-SFT vs Base"): "better", ("live_qa", "HSA-SFT vs Fixed-SFT"): CLOSE,
        ("live_qa", "+OPD vs HSA-SFT"): CLOSE, ("live_qa", "HAT vs +OPD"): CLOSE,
        ("live_qa", "HAT vs Fixed-SFT"): CLOSE,
        ("variant_qa", "Fixed-SFT vs Base"): CLOSE, ("variant_qa", "HSA-SFT vs Fixed-SFT"): "better",
        ("variant_qa", "+OPD vs HSA-SFT"): CLOSE, ("variant_qa", "HAT vs +OPD"): CLOSE,
        ("variant_qa", "HAT vs Fixed-SFT"): "better"}
    assert "| variant_qa | HSA-SFT vs Fixed-SFT | **better** | 1.00 vs 0.17 on 12 paired cases" in md
    assert "McNemar p=0.00195" in md and "Paired comparisons" in html
    assert '<span class="yes">better</span>' in html
    assert '<span class="close">too close to call</span>' in html


def _claims(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, str]:
    return {c["claim"]: c["holds"] for c in findings(results)}


DROP = "HSA keeps the variant drop small where fixed-harness SFT loses more"
OPD = "OPD recovers general instruction following lost in SFT"
RL = "RL shortens reasoning without losing accuracy"


def test_findings_use_a_paired_test_on_the_same_cases() -> None:
    results = _results()
    assert _claims(results) == {DROP: "yes", OPD: "yes", RL: "yes"}
    # HSA now drops on every case where fixed SFT drops on none; RL loses 12 cases of 12.
    results["hsa_sft"]["variant_qa"] = _suite_json("variant_qa", [])
    results["fixed_sft"]["variant_qa"] = _suite_json("variant_qa", list(range(N)))
    results["hat"]["live_qa"] = _suite_json("live_qa", [])
    claims = _claims(results)
    assert claims[DROP] == "no" and claims[RL] == "no"
    # Claim 2 as published is HAT vs Fixed-SFT on general_if (1 prompt won, 1 lost here), or one
    # case lost with lengths barely changed: not called either way.
    results["hat"]["general_if"] = _suite_json("general_if", [0, 2, 3, 5])
    results["hat"]["live_qa"] = _suite_json("live_qa", list(range(11)))
    results["hat"]["lengths"]["details"] = _lengths({"think_tool_mean": 39.5, "think_reply_mean": 20.0})
    claims = _claims(results)
    assert claims[OPD] == CLOSE and claims[RL] == CLOSE
    rl = next(c for c in findings(results) if c["claim"] == RL)["measured"]
    assert "think_tool 40.0 [" in rl and "-> 39.5 [" in rl and "change -0.5 [" in rl
    # Reasoning that grows before replies (its interval above zero) contradicts the claim.
    results["hat"]["lengths"]["details"] = _lengths({"think_tool_mean": 30.0, "think_reply_mean": 30.0})
    assert _claims(results)[RL] == "no"
    # Means alone (no per-episode records) are never called, however far apart.
    for suites in results.values():
        for data in suites.values():
            data["details"] = {}
    results["hat"]["lengths"]["metrics"].update(think_tool_mean=1.0, think_reply_mean=1.0)
    found = findings(results)
    assert {c["holds"] for c in found} == {CLOSE} and all("not paired" in c["measured"] for c in found)


def test_a_claim_too_close_to_call_states_what_the_run_could_detect(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    _write_results(run)
    (run.eval / "hat" / "general_if.json").write_text(json.dumps(_suite_json("general_if", [0, 2, 3, 5])))
    md = Path(write_report(run, load_pipeline_config("quick"))["report_md"]).read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith(f"- **{OPD}**"))
    assert "HAT vs Fixed-SFT: 0.33 vs 0.33 on 12 paired cases" in line and "**too close to call**" in line
    assert "smallest effect these sizes detect (HAT vs Fixed-SFT on general_if, n=8): 0.54" in line
    assert not any("smallest effect" in ln for ln in md.splitlines() if ln.startswith(f"- **{DROP}**"))


def test_report_escapes_untrusted_text(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    _write_results(run)
    evil = run.eval / "hat" / "safety.json"
    evil.write_text(json.dumps({"suite": "safety", "n": 1, "metrics": {"<script>alert(1)</script>": 1}}))
    html = Path(write_report(run, load_pipeline_config("quick"))["report_html"]).read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert read_results(run.eval)["hat"]["safety"]["n"] == 1


def test_estimates_cover_every_stage_and_rescale_by_finished_ones_of_their_kind() -> None:
    from hatkit.pipeline.estimate import estimate, time_left

    cfg = load_pipeline_config("quick")
    est = estimate(plan(), cfg)
    assert [e.stage for e in est] == [s.name for s in plan()] and all(e.seconds > 0 for e in est)
    sft = next(e for e in est if e.stage == "train-hsa_sft")
    steps = PROFILES["quick"]["train"]["sft"]["max_steps"]
    assert f"{steps} steps" in sft.basis  # the pipeline's own override of the stage profile
    kinds = {s.name: s.kind for s in plan()}
    total = sum(e.seconds for e in est)
    assert time_left(est, {}, kinds) == pytest.approx(total)
    # a data stage twice as slow as estimated says nothing of training or evaluation
    assert time_left(est, {"data": 2 * est[0].seconds}, kinds) == pytest.approx(total - est[0].seconds)
    base_eval = next(e for e in est if kinds[e.stage] == "eval")
    evals = sum(e.seconds for e in est if kinds[e.stage] == "eval")
    left = time_left(est, {"data": est[0].seconds, base_eval.stage: base_eval.seconds / 2}, kinds)
    # the unfinished evaluations take half their estimates too
    assert left == pytest.approx(total - est[0].seconds - base_eval.seconds - (evals - base_eval.seconds) / 2)


def test_evaluation_estimates_follow_the_precision_auto_resolves_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """quick's eval_precision auto is bf16 only where the CPU multiplies bf16: its items are
    estimated faster there and the basis says so; elsewhere fp32's figures stand."""
    from hatkit.models import precision
    from hatkit.pipeline.estimate import EVAL_SPEED, estimate

    cfg = load_pipeline_config("quick")
    assert cfg.eval_precision == "auto"
    seconds = {}
    for hardware in (True, False):
        monkeypatch.setattr(precision, "cpu_has_bf16_matmul", lambda hardware=hardware: hardware)
        ev = next(e for e in estimate(plan(), cfg) if e.stage == "eval-hsa_sft")
        assert ("bf16 weights" in ev.basis) is hardware
        seconds[hardware] = ev.seconds
    fixed = 11.0  # model load and set-up, not scaled
    assert (seconds[False] - fixed) / (seconds[True] - fixed) == pytest.approx(EVAL_SPEED["bf16"])


def test_report_states_row_lengths_and_what_the_limits_cut(tmp_path: Path) -> None:
    """The figures the run trained with (prompt and row tokens, the SFT length plan) are quoted
    from the manifest and the stage records, in both report files."""
    run = RunDir(tmp_path / "run")
    _write_results(run)
    run.data.mkdir(parents=True)
    (run.data / "manifest.json").write_text(json.dumps({
        "system_prompt_tokens": 780,
        "modes": {"hsa": {"train": {"rows": 4, "tokens": 6000, "trained_tokens": 880, "max_tokens": 1700}}}}))
    stage = next(s for s in plan() if s.name == "train-hsa_sft")
    run.mark_done(stage, {"stage": stage.name, "outputs": {"length_plan": {
        "stage": "sft", "max_length": 1728, "rows_cut": 0, "trained_tokens_cut": 0, "rows_dropped": 0}}})
    out = write_report(run, load_pipeline_config("quick"))
    md = Path(out["report_md"]).read_text()
    html = Path(out["report_html"]).read_text()
    assert "- Rendered system prompt of the base harness: 780 tokens." in md
    assert "- hsa train: 4 rows, mean 1500 tokens (longest 1700), mean 220 trained tokens a row." in md
    line = "train HSA-SFT: max_length 1728; rows cut 0, trained tokens cut 0, rows dropped 0."
    assert f"- {line}" in md and f"<li>{line}</li>" in html


def test_quick_profile_runs_variant_qa_on_the_models_its_claims_compare() -> None:
    cfg = load_pipeline_config("quick")
    assert "variant_qa" not in cfg.suites_for("base") and "live_qa" in cfg.suites_for("base")
    assert "variant_qa" in cfg.suites_for("fixed_sft") and "variant_qa" in cfg.suites_for("hat")
    assert "variant_qa" in load_pipeline_config("full").suites_for("base")


def test_the_cpu_profile_plan_says_what_each_claim_can_detect() -> None:
    from hatkit.pipeline.detectable import detectable_effects, paired_rate_mde, relative_mean_mde

    assert paired_rate_mde(100) == pytest.approx(2.8016 * (0.3 / 100) ** 0.5, rel=1e-3)
    assert relative_mean_mde(100) == pytest.approx(2.8016 * 0.5 / 10, rel=1e-3)
    cpu = {d.claim[:2]: d for d in detectable_effects(load_pipeline_config("cpu"))}
    quick = {d.claim[:2]: d for d in detectable_effects(load_pipeline_config("quick"))}
    assert cpu["1."].n == 100 and quick["1."].n == 40 and cpu["1."].smallest < quick["1."].smallest
    assert cpu["3."].decidable and not quick["4."].decidable
    assert load_pipeline_config("cpu").data.think == "long"
    assert load_pipeline_config("quick").data.think == "short"
    assert load_pipeline_config("cpu").train_profile == "quick"


def test_rl_claim_says_how_many_steps_could_change_the_model(tmp_path: Path) -> None:
    """A GRPO step whose groups all scored alike trains nothing; the claim-3 line says so, so an
    unchanged HAT is not read as RL having been tried and found harmless. Eval records name
    the precision each model decoded in."""
    run = RunDir(tmp_path / "run")
    _write_results(run)
    stage = next(s for s in plan() if s.name == "train-hat")
    run.mark_done(stage, {"stage": stage.name, "outputs": {
        "rl_signal": {"steps": 3, "steps_without_signal": 2}}})
    for s in plan():
        if s.kind == "eval":
            run.mark_done(s, {"stage": s.name, "outputs": {"precision": "bf16"}})
    md = Path(write_report(run, load_pipeline_config("quick"))["report_md"]).read_text()
    claim = next(ln for ln in md.splitlines() if ln.startswith(f"- **{RL}"))
    assert "2 of 3 RL steps had no learning signal" in claim
    assert "Evaluations decode the models' weights in bf16 (eval_precision auto)." in md


def test_the_report_names_the_eval_judges_the_stages_recorded(tmp_path: Path) -> None:
    """A report rewritten after the judge changed still names the judge that scored the suites."""
    run = RunDir(tmp_path / "run")
    _write_results(run)
    cfg = load_pipeline_config("quick")
    evals = [s for s in plan(cfg) if s.kind == "eval"]

    def judged(stage: Any, name: str, digit: str) -> None:
        judge = {"name": name, "hash": digit * 64}
        run.mark_done(stage, {"stage": stage.name, "outputs": {"eval_judge": judge}})

    for stage in evals[:2]:
        judged(stage, "old-judge", "a")
    md = Path(write_report(run, cfg)["report_md"]).read_text()
    assert "- eval judge (every suite): `old-judge`, hash `aaaaaaaaaaaa`" in md
    assert "versioned apart from the eval judge" in md  # no HAT checkpoint: the domain's reward harness
    assert "different eval judges" not in md
    judged(evals[2], "new", "b")
    md = Path(write_report(run, cfg)["report_md"]).read_text()
    assert "`new`, hash `bbbbbbbbbbbb`" in md and "scored by different eval judges" in md
