"""Stages 1 and 2 on the real default model (slow tier): real `hatkit data build` rows with
the default tokenizer, two SFT steps at the quick profile's max_length, then one OPD step
with the SFT checkpoint as student and the embedded base model as teacher."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hatkit.models.select import load_model
from hatkit.train import opd, sft
from hatkit.train.checkpoint import read_meta
from hatkit.train.config import load_config

pytestmark = pytest.mark.slow


def test_default_model_sft_then_opd(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from hatkit.models.chat_format import ChatTemplateFormat
    from hatkit.models.default_model import ensure_default_model
    from hatkit.train.dataset import BuildSettings, build_datasets

    fmt = ChatTemplateFormat(AutoTokenizer.from_pretrained(ensure_default_model()), native_tools=False)
    build_datasets(BuildSettings(out=tmp_path / "data", train_episodes=4, dev_episodes=1,
                                 n_variants=2, seed=3), fmt)
    started = time.perf_counter()
    final = sft.train(load_config("sft", overrides={
        "dataset_dir": str(tmp_path / "data"), "output_dir": str(tmp_path / "sft"),
        "max_steps": 2, "report_to": []}))
    sft_s = time.perf_counter() - started
    meta = read_meta(final)
    assert meta is not None and meta["base_model"] == "local" and len(meta["harness_hashes"]) == 2
    assert len(meta["metrics"]["loss_history"]) == 2
    assert meta["length_plan"]["trained_tokens_cut"] == 0  # the quick bound fits real rows
    print(f"default model: 2 SFT steps at max_length {meta['length_plan']['max_length']} in {sft_s:.1f} s "
          f"({meta['metrics']['num_tokens'] / meta['metrics']['train_runtime']:.1f} tokens/s)")
    started = time.perf_counter()
    opd_final = opd.train(load_config("opd", overrides={
        "model": str(final), "output_dir": str(tmp_path / "opd"), "max_steps": 1,
        "per_device_train_batch_size": 2, "max_prompts": 2, "max_completion_length": 16,
        "prompt_sources": ["mtbench"], "report_to": []}))
    print(f"default model: 1 OPD step in {time.perf_counter() - started:.1f} s")
    opd_meta = read_meta(opd_final)
    assert opd_meta is not None and opd_meta["parent"] == str(final)
    assert opd_meta["base_model"] == "local" and opd_meta["harness_hashes"] == meta["harness_hashes"]
    load_model(str(opd_final))


def test_two_ranks_under_torchrun_write_one_final(tmp_path: Path) -> None:
    """What `accelerate launch` does on GPUs, with two gloo ranks on CPU: both train, the
    main rank alone writes final/, and the tokens seen are both ranks' batches."""
    import json
    import shutil
    import subprocess
    import sys

    from train_helpers import make_dataset, save_tiny_checkpoint

    base, data = save_tiny_checkpoint(tmp_path / "base"), make_dataset(tmp_path / "data")
    bindir = Path(sys.executable).parent
    hatkit = shutil.which("hatkit", path=str(bindir))
    assert hatkit is not None
    cmd = [str(bindir / "torchrun"), "--nproc_per_node", "2", "--master_port", "29517", hatkit,
           "train", "sft", "--set", f"model={base}", "--set", f"dataset_dir={data}",
           "--set", f"output_dir={tmp_path / 'sft'}", "--set", "max_steps=2",
           "--set", "max_length=256", "--set", "per_device_train_batch_size=2",
           "--set", "report_to=[]"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("checkpoint: ") == 2
    meta = json.loads((tmp_path / "sft" / "final" / "hatkit_checkpoint.json").read_text())
    assert meta["steps"] == 2 and meta["metrics"]["num_tokens"] == 2 * 2 * 2 * 222
