"""The config loader's layering and errors, and `hatkit train` end to end on a tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
from train_helpers import make_dataset, save_tiny_checkpoint, tiny_sft_overrides
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.train import runtime
from hatkit.train.checkpoint import read_meta
from hatkit.train.config import ConfigError, load_config, parse_overrides
from hatkit.train.runtime import cpu_has_bf16_matmul, weights_bf16


def test_layers_defaults_profile_file_overrides(tmp_path: Path) -> None:
    file = tmp_path / "sft.yaml"
    file.write_text("learning_rate: 1e-4\nmax_steps: 7\nmode: fixed\n")
    config = load_config("sft", file, "quick", {"max_steps": "9"})
    assert config.learning_rate == 1e-4  # YAML's "1e-4" string coerced to the field's float
    assert config.max_steps == 9 and config.mode == "fixed"
    assert config.max_length == 3072  # from the quick profile
    assert config.bf16 is cpu_has_bf16_matmul()  # fp32, or bf16 autocast where the CPU has it
    assert config.allow_truncation is False
    assert config.activation_checkpointing is False
    import torch

    if torch.cuda.is_available():
        full = load_config("sft", profile="full")
        assert full.bf16 is True and full.activation_checkpointing is True
    else:  # the full profile is for a GPU; on CPU the refusal is a ConfigError, not a traceback
        with pytest.raises(ConfigError, match="bf16"):
            load_config("sft", profile="full")


@pytest.mark.parametrize("stage", ["sft", "opd"])
def test_cpu_bf16_autocasts_only_where_the_cpu_multiplies_bf16(stage: str, monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    """On a CPU with bf16 matrix instructions the CPU stages train under bf16 autocast over fp32
    weights (about 1.8x a step, bench/sft_precision.py); without them, or with cpu_bf16=false,
    fp32 as before; the weights never load in bf16 on the CPU."""
    monkeypatch.setattr(runtime, "cpu_has_bf16_matmul", lambda: True)
    on = load_config(stage, profile="quick")
    assert on.bf16 is True and on.use_cpu and weights_bf16(on) is False
    assert load_config(stage, profile="quick", overrides={"cpu_bf16": "false"}).bf16 is False
    monkeypatch.setattr(runtime, "cpu_has_bf16_matmul", lambda: False)
    assert load_config(stage, profile="quick").bf16 is False


def test_unknown_key_names_file_line_and_suggestion(tmp_path: Path) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text("max_steps: 3\nlearning_rte: 0.1\n")
    expected = r"bad\.yaml:2: unknown key 'learning_rte'; did you mean 'learning_rate'"
    with pytest.raises(ConfigError, match=expected):
        load_config("sft", file)
    with pytest.raises(ConfigError, match=r"--set: unknown key 'max_step'"):
        load_config("opd", overrides={"max_step": 3})


def test_bad_profile_stage_type_and_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown profile 'tiny'.*full, quick"):
        load_config("sft", profile="tiny")
    with pytest.raises(ConfigError, match="unknown stage"):
        load_config("dpo")
    with pytest.raises(ConfigError, match="'max_steps' must be int, not 'many'"):
        load_config("sft", overrides={"max_steps": "many"})
    with pytest.raises(ConfigError, match="mode must be one of"):
        load_config("sft", overrides={"mode": "both"})
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config("sft", listy)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config("sft", tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides(["max_steps"])
    assert parse_overrides(["a=1", "b=[x, y]", "c=true"]) == {"a": 1, "b": ["x", "y"], "c": True}


def test_help_lists_the_stages() -> None:
    result = CliRunner().invoke(app, ["train", "sft", "--help"])
    assert result.exit_code == 0
    for option in ("--config", "--profile", "--set", "--resume"):
        assert option in result.output


def test_tiny_sft_run_through_the_cli(tmp_path: Path) -> None:
    base = save_tiny_checkpoint(tmp_path / "base")
    data = make_dataset(tmp_path / "data")
    overrides = tiny_sft_overrides(tmp_path, base, data, report_to=["tensorboard"])
    file = tmp_path / "sft.yaml"
    file.write_text("".join(f"{k}: {v!r}\n".replace("'", '"') for k, v in overrides.items()
                            if k != "max_steps"))
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(file), "--set", "max_steps=2"])
    assert result.exit_code == 0, result.output
    assert "checkpoint:" in result.output and "train_loss" in result.output
    assert "SFT length plan hsa/train, max_length 256" in result.output  # printed before training
    meta = read_meta(tmp_path / "sft" / "final")
    assert meta is not None and meta["steps"] == 2
    assert list((tmp_path / "sft" / "runs").rglob("events.out.tfevents.*"))  # TensorBoard files
    bad = CliRunner().invoke(app, ["train", "sft", "--config", str(file), "--set", "modee=x"])
    assert bad.exit_code == 1 and "did you mean 'mode'" in bad.output
    short = CliRunner().invoke(app, ["train", "sft", "--config", str(file), "--set", "max_length=128",
                                     "--set", f"output_dir={tmp_path / 'short'}"])
    assert short.exit_code == 1 and "SFT length plan" in short.output
    assert "would cut" in short.output and "allow_truncation=true" in short.output


def test_resolve_model_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    from hatkit.train.checkpoint import lineage, resolve_model

    ckpt = save_tiny_checkpoint(tmp_path / "ckpt")
    assert resolve_model(str(ckpt)) == ckpt == resolve_model(f"local:{ckpt}")
    with pytest.raises(ValueError, match=r"no config\.json"):
        resolve_model(str(tmp_path))
    asked: list[str] = []

    def fake_download(repo_id: str, **kwargs: object) -> str:
        asked.append(repo_id)
        return str(ckpt)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert resolve_model("Qwen/Qwen3-0.6B") == ckpt and asked == ["Qwen/Qwen3-0.6B"]
    assert lineage("Qwen/Qwen3-0.6B", ckpt) == ("Qwen/Qwen3-0.6B", None)

    def offline(repo_id: str, **kwargs: object) -> str:
        raise OSError("network is blocked")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(ValueError, match="cannot fetch it from the Hugging Face hub"):
        resolve_model("Qwen/Qwen3-0.6B")


def test_summary_counts_grpo_steps_whose_groups_all_scored_alike() -> None:
    from types import SimpleNamespace

    from hatkit.train.runtime import summarize

    history = [{"step": 1, "loss": 0.0, "frac_reward_zero_std": 1.0},
               {"step": 2, "loss": 0.1, "frac_reward_zero_std": 0.5},
               {"step": 3, "loss": 0.0, "frac_reward_zero_std": 1.0}]
    args = SimpleNamespace(bf16=False, fp16=False, use_cpu=True)
    trainer = SimpleNamespace(state=SimpleNamespace(log_history=history, global_step=3), args=args)
    metrics = summarize(trainer, SimpleNamespace(metrics={}))
    assert metrics["steps_without_signal"] == 2 and metrics["global_step"] == 3
    sft = SimpleNamespace(state=SimpleNamespace(log_history=[{"step": 1, "loss": 1.0}], global_step=1),
                          args=args)
    assert "steps_without_signal" not in summarize(sft, SimpleNamespace(metrics={}))
