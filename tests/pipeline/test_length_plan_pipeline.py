"""The pipeline sizes SFT's max_length from the built rows, so its length plan cuts nothing;
`hatkit run --plan` prints that plan for both modes; an explicit max_length is kept."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.pipeline import load_pipeline_config, prepare
from hatkit.pipeline.run import run_stage
from hatkit.pipeline.stages import DATA, sft_length_plan, train_config
from hatkit.train.sft import fit_max_length, read_rows
from tiny import tiny_llama, tiny_tokenizer

ZERO = "rows cut: 0, trained tokens cut: 0, rows dropped: 0"


def test_pipeline_fits_max_length_and_run_plan_prints_it(tmp_path: Path) -> None:
    base = tmp_path / "base"
    tok = tiny_tokenizer()
    tiny_llama(len(tok)).save_pretrained(base)
    tok.save_pretrained(base)
    file = tmp_path / "pipeline.yaml"
    file.write_text(yaml.safe_dump({"base_model": str(base), "data": {
        "train_episodes": 3, "dev_episodes": 1, "n_variants": 2}}))
    cfg = load_pipeline_config("quick", file)
    assert "max_length" not in cfg.train.get("sft", {})
    run, stages, _ = prepare(cfg, tmp_path / "runs" / "r")
    sft_stages = [s for s in stages if s.kind == "train" and s.row is not None and s.row.stage == "sft"]
    assert len(sft_stages) == 2 and sft_length_plan(sft_stages[0], run, cfg) is None  # no data yet
    run_stage(DATA, run, cfg)

    for stage in sft_stages:
        config = train_config(stage, run, cfg)
        longest = max(read_rows(config)["n_tokens"])
        assert config.max_length == fit_max_length(read_rows(config))
        assert longest <= config.max_length < longest + 64
        plan = sft_length_plan(stage, run, cfg)
        assert plan is not None and plan.max_length == config.max_length and not plan.cuts_training
        assert plan.summary().endswith(ZERO)

    result = CliRunner().invoke(app, ["run", "--plan", "--config", str(file),
                                      "--runs", str(tmp_path / "runs"), "--run-id", "r"])
    assert result.exit_code == 0, result.output
    for label in ("Fixed-SFT", "HSA-SFT"):
        line = next(ln for ln in result.output.splitlines() if f"train {label}:" in ln)
        assert line.endswith(ZERO)

    # a max_length the pipeline config names is kept, and the plan says what it cuts
    short = cfg.model_copy(update={"train": {"sft": {"max_length": 64}}})
    assert train_config(sft_stages[0], run, short).max_length == 64
    plan = sft_length_plan(sft_stages[0], run, short)
    assert plan is not None and plan.cuts_training
