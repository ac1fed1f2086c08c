"""The whole HAT pipeline end to end on a tiny random-weight model: every stage runs, the
report's cells equal the suites' own files, and a rerun reuses every finished stage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatkit.evals import QUICK_SETTINGS
from hatkit.models import select
from hatkit.pipeline import ROWS, load_pipeline_config, plan, run_pipeline
from hatkit.pipeline.table import COLUMNS, cell, fmt_cell
from tiny import tiny_llama, tiny_tokenizer

NO_LOG: dict[str, Any] = {"report_to": [], "logging_steps": 1, "save_steps": 50}


def _tiny_checkpoint(folder: Path) -> Path:
    tok = tiny_tokenizer()
    tiny_llama(len(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _config(base: Path) -> Any:
    return load_pipeline_config("quick", overrides={
        "base_model": str(base),
        "data": {"train_episodes": 3, "dev_episodes": 1, "n_variants": 2},
        "train": {
            "sft": {**NO_LOG, "max_steps": 1},  # max_length: sized from the data
            "opd": {**NO_LOG, "max_steps": 1, "per_device_train_batch_size": 2,
                    "max_completion_length": 6, "prompt_sources": ["mtbench"], "max_prompts": 2},
            "rl": {**NO_LOG, "max_steps": 1, "num_generations": 2, "per_device_train_batch_size": 2,
                   "max_new_tokens": 6, "max_turns": 1, "n_variants": 1, "n_questions": 2,
                   "use_lora": False, "max_completion_length": 16384},
        },
        "eval_sizes": {"live_qa": 1, "variant_qa": 1, "general_if": 1, "faults": 1, "safety": 1,
                       "lengths": 1, "latency": 1},
    })


def test_pipeline_end_to_end_on_a_tiny_model_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:
    cfg = _config(_tiny_checkpoint(tmp_path / "base")).model_copy(update={
        "evolution_test_n": 2, "evolution_dev_n": 2, "evolution_rounds": 1,  # claim 4, in small
        "eval_precision": "int8"})
    started: list[tuple[str, bool]] = []
    loads: list[tuple[str, int]] = []
    real_load = select.load_model

    def recording_load(spec: str, **kw: object) -> object:
        loads.append((spec, int(kw.get("max_batch", 0))))  # type: ignore[call-overload]
        return real_load(spec, **kw)

    monkeypatch.setattr(select, "load_model", recording_load)
    run = run_pipeline(cfg, tmp_path / "run", on_start=lambda s, skipped: started.append((s.name, skipped)))
    # every evaluation decodes the suites' batches whole (a default of 8 split the quick 16s),
    # in the weight precision the config names
    evals = [spec for spec, batch in loads if batch == QUICK_SETTINGS.batch_size]
    assert len(evals) == len(ROWS) and all(s.endswith("@int8") for s in evals), loads
    assert [name for name, _ in started] == [s.name for s in plan(cfg)]
    assert "evolve" in [name for name, _ in started]
    assert not any(skipped for _, skipped in started)
    for row in ("fixed_sft", "hsa_sft", "opd", "hat"):
        meta = json.loads((run.checkpoints / row / "final" / "hatkit_checkpoint.json").read_text())
        assert meta["stage"] == {"fixed_sft": "sft", "hsa_sft": "sft", "opd": "opd", "hat": "rl"}[row]
    # SFT's max_length was fitted to the rows: the plan in the stage record cut nothing.
    for row in ("fixed_sft", "hsa_sft"):
        record = json.loads((run.stages / f"train-{row}.json").read_text())
        lengths = record["outputs"]["length_plan"]
        assert lengths["max_length"] >= lengths["max_tokens"] > 0
        assert lengths["rows_cut"] == lengths["trained_tokens_cut"] == lengths["rows_dropped"] == 0
    hat = json.loads((run.stages / "train-hat.json").read_text())["outputs"]["length_plan"]
    assert hat["stage"] == "rl" and hat["rows"] == 2
    # Lineage: +OPD starts from HSA-SFT, HAT from +OPD.
    opd_meta = json.loads((run.checkpoints / "opd" / "final" / "hatkit_checkpoint.json").read_text())
    assert "hsa_sft" in json.dumps(opd_meta)

    # The report's cells are the suites' own numbers.
    md = (run.root / "report.md").read_text()
    assert "Evaluations decode the models' weights in int8 (eval_precision int8)." in md
    for row_key, label in (("base", "Base"), ("hat", "HAT")):
        suites = {p.stem: json.loads(p.read_text()) for p in (run.eval / row_key).glob("*.json")}
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {label} |"))
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        assert cells == [fmt_cell(c, cell(suites, c)) for c in COLUMNS]
        assert suites["live_qa"]["n"] == 1
    assert (run.root / "report.html").read_text().count("data:image/png;base64,") == 3
    # The report names both judges; HSA-RL's reward judge is not the eval judge.
    hat_meta = json.loads((run.checkpoints / "hat" / "final" / "hatkit_checkpoint.json").read_text())
    assert f"reward judge (HSA-RL): hash `{hat_meta['judge_hash'][:12]}`" in md
    assert "versioned apart from the eval judge" in md and "eval judge (every suite)" in md
    # Claim 4: the defective harness evolved with each frozen model, tested on the same questions.
    evolve = json.loads((run.stages / "evolve.json").read_text())["outputs"]
    assert set(evolve["reports"]) == {"fixed_sft", "hat"} and evolve["difference"]["n"] == 2
    assert evolve["models"]["hat"] == f"{run.checkpoints / 'hat' / 'final'}@int8"  # in eval_precision
    assert "cuts HAT's error more than Fixed-SFT's" in md and "2 test questions" in md

    # A second run reuses every finished stage and only rewrites the report.
    records = {s.name: run.stage_file(s).read_text() for s in plan(cfg) if s.kind != "report"}
    again: list[tuple[str, bool]] = []
    run_pipeline(cfg, tmp_path / "run", on_start=lambda s, skipped: again.append((s.name, skipped)))
    assert all(skipped for name, skipped in again if name != "report")
    assert records == {s.name: run.stage_file(s).read_text() for s in plan(cfg) if s.kind != "report"}


def test_pipeline_on_the_second_domain_end_to_end(tmp_path: Path) -> None:
    """`hatkit run --domain food_delivery` in small: every stage runs on the food-delivery
    harness, its questions and its judge, and the report has every column for every row."""
    cfg = _config(_tiny_checkpoint(tmp_path / "base")).model_copy(update={"domain": "food_delivery"})
    run = run_pipeline(cfg, tmp_path / "run")
    manifest = json.loads((run.data / "manifest.json").read_text())
    assert manifest["disjoint"]["ok"] and manifest["modes"]["hsa"]["train"]["rows"] == 3
    assert manifest["hsa_base"] is True  # the quick profile mixes the base harness into HSA rows
    rl = json.loads((run.checkpoints / "hat" / "rl_manifest.json").read_text())
    assert all(v["name"].startswith("food_delivery") for v in rl["variants"])
    for row_key in ("base", "fixed_sft", "hsa_sft", "opd", "hat"):
        live = json.loads((run.eval / row_key / "live_qa.json").read_text())
        lines = (run.eval / row_key / "live_qa.traces.jsonl").read_text().splitlines()
        traces = [json.loads(x) for x in lines]
        assert {t["harness_name"] for t in traces} == {"food_delivery"} and live["n"] == 1
    md = (run.root / "report.md").read_text()
    for label in [r.label for r in ROWS]:
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {label} |"))
        assert len(line.strip("|").split("|")) == len(COLUMNS) + 1
