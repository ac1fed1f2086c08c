"""Stage 1 on a tiny model: the mask TRL trains on is the trace's mask, token by token; the
loss is logged, weights change, checkpoints reload and resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from train_helpers import make_dataset, make_trace, save_tiny_checkpoint, tiny_sft_overrides
from transformers import TrainerCallback

from hatkit.agent.trace import SEGMENT_IDS
from hatkit.models.select import load_model
from hatkit.train import sft
from hatkit.train.checkpoint import META_FILE, read_meta
from hatkit.train.config import load_config
from hatkit.train.runtime import StopAfter, load_causal_lm
from tiny import tiny_tokenizer


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sft")
    return save_tiny_checkpoint(root / "base"), make_dataset(root / "data")


def test_trained_labels_equal_the_training_view_mask(setup: tuple[Path, Path], tmp_path: Path) -> None:
    from datasets import Dataset

    base, data = setup
    config = load_config("sft", overrides=tiny_sft_overrides(tmp_path, base, data, max_length=110))
    model, tok = load_causal_lm(base)
    trainer = sft.build_trainer(config, model, tok, sft.load_rows(config))
    rows = Dataset.from_parquet(str(data / "hsa" / "train.parquet"))
    prepared = trainer.train_dataset
    assert len(prepared) == len(rows)
    batch = trainer.data_collator([prepared[i] for i in range(len(prepared))])
    n_masked = 0
    for i, row in enumerate(rows):
        view = make_trace(i, tiny_tokenizer(), row["harness_hash"]).training_view()
        assert view.input_ids == row["input_ids"]  # the row is the trace's view, unchanged
        ids = view.input_ids[:110]
        mask, segs = view.loss_mask[:110], view.segment_ids[:110]
        assert prepared[i]["input_ids"] == ids
        labels = batch["labels"][i][: len(ids)].tolist()
        for tok_id, label, m, seg in zip(ids, labels, mask, segs, strict=True):
            assert (label != -100) == bool(m)
            if m:
                assert label == tok_id
            if seg in (SEGMENT_IDS["tool_output"], SEGMENT_IDS["system"], SEGMENT_IDS["user"]):
                assert label == -100
        assert (batch["labels"][i][len(ids):] == -100).all()  # padding never trained
        n_masked += sum(mask)
    assert n_masked > 0
    # truncation at 110 (build_trainer does not refuse; train() would) cut the end of the
    # longer rows; the rest is not shifted
    assert any(len(r["input_ids"]) > 110 for r in rows)


def _weights(path: Path) -> dict[str, torch.Tensor]:
    model, _ = load_causal_lm(path)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("lora", [False, True])
def test_sft_trains_logs_and_reloads(setup: tuple[Path, Path], tmp_path: Path, lora: bool) -> None:
    base, data = setup
    seen: list[tuple[int, int]] = []
    config = load_config("sft", overrides=tiny_sft_overrides(tmp_path, base, data, use_lora=lora,
                                                               mode="fixed"))
    final = sft.train(config, progress=lambda d, t: seen.append((d, t)))
    assert final == tmp_path / "sft" / "final" and (final / META_FILE).is_file()
    assert not (final / "adapter_config.json").exists()  # LoRA merged into plain weights
    meta = read_meta(final)
    assert meta is not None
    assert meta["stage"] == "sft" and meta["steps"] == 3 and meta["mode"] == "fixed"
    assert meta["base_model"] == str(base) and meta["parent"] is None
    assert meta["harness_hashes"] == ["f" * 64]
    assert meta["data"]["sha256"] and meta["data"]["path"].endswith("manifest.json")
    assert meta["config"]["use_lora"] is lora and meta["config"]["max_steps"] == 3
    losses = meta["metrics"]["loss_history"]
    assert len(losses) == 3 and all(loss > 0 for _, loss in losses)
    assert seen[-1] == (3, 3)
    before, after = _weights(base), _weights(final)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed
    loaded = load_model(str(final))
    assert loaded.model_id.endswith("final")


class StepLog(TrainerCallback):  # type: ignore[misc]
    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.append(int(state.global_step))


def test_kill_and_resume_continues_from_last_checkpoint(setup: tuple[Path, Path], tmp_path: Path) -> None:
    base, data = setup
    overrides = tiny_sft_overrides(tmp_path, base, data, max_steps=4, save_steps=1)
    first = sft.train(load_config("sft", overrides=overrides), callbacks=[StopAfter(2)])
    assert first.name == "checkpoint-2" and not (tmp_path / "sft" / "final").exists()
    (tmp_path / "sft" / "checkpoint-3").mkdir()  # what a kill during the next save leaves
    (tmp_path / "sft" / "checkpoint-3" / "model.safetensors").write_bytes(b"partial")
    steps = StepLog()
    final = sft.train(load_config("sft", overrides=overrides), callbacks=[steps])
    assert steps.steps == [3, 4]  # steps 1-2 are not redone
    meta = read_meta(final)
    assert meta is not None and meta["steps"] == 4
    assert meta["resumed_from"].endswith("checkpoint-2")
    assert [s for s, _ in meta["metrics"]["loss_history"]] == [1, 2, 3, 4]
    stamp = (final / META_FILE).stat().st_mtime_ns
    assert sft.train(load_config("sft", overrides=overrides)) == final  # finished: skipped
    assert (final / META_FILE).stat().st_mtime_ns == stamp
    json.loads((final / META_FILE).read_text())


def test_sigkill_mid_run_then_rerun_resumes(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """A real kill: the CLI is SIGKILLed once a checkpoint exists; the rerun resumes from the
    newest complete checkpoint (not from scratch) and finishes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from hatkit.train.checkpoint import last_checkpoint

    base, data = setup
    out = tmp_path / "sft"
    sets = [f"model={base}", f"dataset_dir={data}", f"output_dir={out}", "max_length=256",
            "save_steps=5", "save_total_limit=2", "report_to=[]", "learning_rate=1e-4"]
    hatkit = [sys.executable, "-c", "from hatkit.cli import main; main()", "train", "sft"]
    args = [a for s in [*sets, "max_steps=100000"] for a in ("--set", s)]
    proc = subprocess.Popen([*hatkit, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while last_checkpoint(out) is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = last_checkpoint(out)
    assert killed_at is not None and not (out / "final").exists()
    step = int(killed_at.rsplit("-", 1)[1])
    overrides = dict(s.split("=", 1) for s in sets)
    final = sft.train(load_config("sft", overrides={**overrides, "max_steps": step + 2,
                                                     "report_to": []}))
    meta = read_meta(final)
    assert meta is not None and meta["steps"] == step + 2
    assert meta["resumed_from"] == killed_at  # the newest complete checkpoint, not scratch
