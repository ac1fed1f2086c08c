"""HSA-RL on the real default model (SmolLM2-135M) with the quick profile, one step: the
live-commerce variants, the reward judge and LoRA on the real chat template (~3 min)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hatkit.agent import read_traces
from hatkit.train import rl
from hatkit.train.checkpoint import META_FILE
from hatkit.train.config import load_config

pytestmark = pytest.mark.slow


def test_quick_profile_one_step_on_the_default_model(tmp_path: Path) -> None:
    config = load_config("rl", profile="quick", overrides={
        "output_dir": str(tmp_path / "rl"), "max_steps": 1, "report_to": []})
    final = rl.train(config, resume=False)
    meta = json.loads((final / META_FILE).read_text())
    assert meta["stage"] == "rl" and meta["steps"] == 1 and len(meta["harness_hashes"]) == 2
    assert meta["judge_hash"] and 0.0 <= meta["metrics"]["last_reward"] <= 1.0
    traces = list(read_traces(tmp_path / "rl" / "rollouts" / "step-00000.jsonl"))
    assert len(traces) == 2 and all(t.harness_name.startswith("live_commerce__train_") for t in traces)
    assert all(sum(t.training_view().loss_mask) > 0 for t in traces)
    assert not (final / "adapter_config.json").exists()  # LoRA merged
