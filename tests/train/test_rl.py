"""HSA-RL end to end on a tiny random-weight model: steps run and log a loss, weights
change, the final checkpoint reloads, a toy reward rises, resume and LoRA work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from rl_helpers import (
    LowercaseScore,
    one_thread,  # noqa: F401 - autouse fixture: one torch thread
    tiny_config,
)
from transformers import TrainerCallback

from hatkit.models.local import LocalModel
from hatkit.models.select import load_model
from hatkit.train import rl
from hatkit.train.checkpoint import META_FILE
from hatkit.train.runtime import StopAfter


class Logs(TrainerCallback):  # type: ignore[misc]
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if logs:
            self.rows.append(dict(logs))

    def series(self, key: str) -> list[float]:
        return [float(r[key]) for r in self.rows if key in r]


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_steps_run_log_loss_change_weights_and_reload(tmp_path: Path, minimal_harness: Path) -> None:
    config = tiny_config(tmp_path, minimal_harness, max_steps=3, fault_rate=0.5, max_turns=2)
    logs = Logs()
    steps: list[tuple[int, int]] = []
    final = rl.train(config, resume=False, scorer=LowercaseScore(), callbacks=[logs],
                     progress=lambda d, t: steps.append((d, t)))
    assert final == tmp_path / "out" / "final" and steps[-1] == (3, 3)
    assert len(logs.series("loss")) == 3 and len(logs.series("reward")) == 3
    before, after = weights(Path(config.model)), weights(final)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    meta = json.loads((final / META_FILE).read_text())
    assert meta["stage"] == "rl" and meta["steps"] == 3 and meta["config"]["num_generations"] == 4
    assert meta["data"]["path"].endswith("rl_manifest.json") and len(meta["harness_hashes"]) == 1
    assert "last_reward" in meta["metrics"] and "loss_history" in meta["metrics"]
    assert (tmp_path / "out" / "rollouts" / "step-00002.jsonl").is_file()
    LocalModel.from_pretrained(final)
    assert load_model(str(final)) is not None
    again = rl.train(config, resume=True, scorer=LowercaseScore())  # finished: returned at once
    assert again == final and json.loads((final / META_FILE).read_text()) == meta


@pytest.mark.parametrize(("lr", "rises"), [(0.02, True), (0.0, False)])
def test_mean_reward_rises_on_toy_setting(tmp_path: Path, minimal_harness: Path, lr: float,
                                          rises: bool) -> None:
    """The toy reward (share of lowercase letters generated) climbs under GRPO with a high
    learning rate, and does not with a zero one: the rise is the optimisation's."""
    config = tiny_config(tmp_path, minimal_harness, max_steps=12, num_generations=8,
                         per_device_train_batch_size=8, learning_rate=lr, save_rollouts=False)
    logs = Logs()
    rl.train(config, resume=False, scorer=LowercaseScore(), callbacks=[logs])
    reward = logs.series("reward")
    assert len(reward) == 12
    first, last = sum(reward[:3]) / 3, sum(reward[-3:]) / 3
    assert (last - first > 0.1) is rises, reward


def test_resume_from_last_checkpoint(tmp_path: Path, minimal_harness: Path) -> None:
    config = tiny_config(tmp_path, minimal_harness, max_steps=4, save_strategy="steps",
                         save_steps=1, save_total_limit=2)
    stopped = rl.train(config, resume=False, scorer=LowercaseScore(), callbacks=[StopAfter(2)])
    assert stopped.name == "checkpoint-2" and not (tmp_path / "out" / "final").exists()
    logs = Logs()
    final = rl.train(config, resume=True, scorer=LowercaseScore(), callbacks=[logs])
    meta = json.loads((final / META_FILE).read_text())
    assert meta["steps"] == 4 and meta["resumed_from"].endswith("checkpoint-2")
    assert len(logs.series("loss")) == 2  # only steps 3 and 4 ran again


def test_lora_with_kl_saves_a_merged_model(tmp_path: Path, minimal_harness: Path) -> None:
    config = tiny_config(tmp_path, minimal_harness, max_steps=2, use_lora=True, lora_r=4,
                         beta=0.1, learning_rate=0.05)
    logs = Logs()
    final = rl.train(config, resume=False, scorer=LowercaseScore(), callbacks=[logs])
    assert not (final / "adapter_config.json").exists()
    assert len(logs.series("kl")) == 2
    before, after = weights(Path(config.model)), weights(final)
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_profiles_build_configs() -> None:
    from hatkit.train.config import load_config

    quick = load_config("rl", profile="quick")
    assert isinstance(quick, rl.HatRLConfig) and 2 <= (quick.num_generations or 0) <= 4
    assert quick.model == "local" and not quick.bf16 and quick.max_steps <= 6
    full = load_config("rl", profile="full", overrides={"use_cpu": True, "bf16": False})
    assert full.num_generations == 8
    with pytest.raises(ValueError, match="fault_kinds"):
        rl.HatRLConfig(fault_kinds=["flood"], report_to=[])


def test_clear_errors_for_bad_settings(tmp_path: Path, minimal_harness: Path) -> None:
    from hatkit.train.runtime import load_causal_lm

    config = tiny_config(tmp_path, minimal_harness, categories=["stock_shipping"])
    model, tok = load_causal_lm(Path(config.model))
    with pytest.raises(ValueError, match=r"standard_shipping_fee.*categories"):
        rl.build_trainer(config, model, tok, scorer=LowercaseScore())
    config = tiny_config(tmp_path, minimal_harness, reward_weights=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="think_tool_coef"):
        rl.build_trainer(config, model, tok, scorer=LowercaseScore())


def test_training_family_variants_and_episode_plan(tmp_path: Path) -> None:
    from hatkit.train.rl_setup import plan_episodes, training_harnesses

    config = rl.HatRLConfig(output_dir=str(tmp_path), n_variants=2, n_questions=5, seed=0,
                            report_to=[], use_cpu=True)
    harnesses = training_harnesses(config, tmp_path / "variants")
    assert [h.name for h in harnesses] == ["live_commerce__train_0", "live_commerce__train_1"]
    assert len({h.content_hash for h in harnesses}) == 2
    again = training_harnesses(config, tmp_path / "variants")  # resume: reloaded, not remade
    assert [h.content_hash for h in again] == [h.content_hash for h in harnesses]
    plan = plan_episodes(config, harnesses)
    assert [e.harness for e in plan] == [0, 1, 0, 1, 0]
    assert all(e.question.split == "train" for e in plan) and len({e.key for e in plan}) == 5
