"""`hatkit train sft | opd | rl`: load a stage config, train, print the metrics.

Multi-GPU: the same command and config file run under accelerate (or torchrun), e.g.
    accelerate launch --num_processes 8 "$(command -v hatkit)" train sft -c sft.yaml --profile full
Every rank runs the stage; only the main one prepares the output folder and writes `final/`.
The stage configs are TRL configs, so DeepSpeed/FSDP fields go in the YAML as usual (a LoRA
merge of a ZeRO-3/FSDP-sharded model is not handled). Tested on CPU: two gloo ranks through
`torchrun --nproc_per_node 2 "$(command -v hatkit)" train sft ...` (tests/train, slow tier).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ._common import _fail, _progress_bar, _say, app, console

train_app = typer.Typer(help="Train the three HAT stages: sft (HSA-SFT or the fixed-harness "
                        "baseline), opd (general on-policy distillation), rl (HSA-RL).",
                        no_args_is_help=True)
app.add_typer(train_app, name="train")

ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", "-c", help="YAML file: a mapping of config fields (TRL's fields plus hatkit's; "
    "unknown keys are refused).")]
ProfileOpt = Annotated[str, typer.Option(
    help="quick = this CPU, fp32, the embedded SmolLM2-135M; full = a GPU, a Qwen3 model, bf16.")]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", "-s", help="Override one field, key=value (repeatable), e.g. --set max_steps=4.")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume/--no-resume", help="Continue from the last checkpoint in output_dir (a finished "
    "stage is skipped); --no-resume deletes its checkpoints and starts over.")]


def run_stage(stage: str, config_file: Path | None, profile: str, sets: list[str] | None,
              resume: bool) -> Path:
    """Load the config, train with a rich progress bar, print the length plan (what the
    length limits cut; SFT refuses a plan that cuts trained tokens) and the final metrics."""
    from ..models.default_model import DefaultModelError
    from ..train import ConfigError, finished_checkpoint, load_config, parse_overrides, read_meta, train_stage

    try:
        overrides = parse_overrides(sets or [])
        overrides.setdefault("disable_tqdm", True)
        config = load_config(stage, config_file, profile, overrides)
    except ModuleNotFoundError as exc:
        raise _fail(f"stage {stage} is not available: {exc}") from None
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    train = train_stage(stage)
    _quiet_library_bars()
    _say(f"[bold]{stage}[/] profile={profile} model={config.model} -> {config.output_dir}")
    if resume and (done := finished_checkpoint(str(config.output_dir))) is not None:
        _say(f"[yellow]{stage} already finished[/] in {done}; skipped (--no-resume retrains)")
    bar, update = _progress_bar(f"training {stage}")
    try:
        with bar:
            final: Path = train(config, resume=resume, progress=update,
                                on_plan=lambda plan: console.print(plan.table()))
    except (FileNotFoundError, ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None
    meta = read_meta(final) or {}
    print_metrics(meta)
    _say(f"checkpoint: {final}")
    if "tensorboard" in (config.report_to or []):
        _say(f"TensorBoard logs: {Path(str(config.output_dir)) / 'runs'}")
    return final


def _quiet_library_bars() -> None:
    """Our rich bar and log lines replace the datasets/transformers tqdm bars."""
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def print_metrics(meta: dict[str, Any]) -> None:
    table = Table("metric", "value", title=f"{meta.get('stage', '?')}: {meta.get('steps', '?')} steps")
    for key, value in sorted((meta.get("metrics") or {}).items()):
        if key == "loss_history":
            continue
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    console.print(table)


@train_app.command("sft")
def train_sft(config: ConfigOpt = None, profile: ProfileOpt = "quick", set_: SetOpt = None,
              resume: ResumeOpt = True) -> None:
    """Stage 1, HSA-SFT: fine-tune on `hatkit data build` rows (loss on model tokens only).

    `--set mode=fixed` trains the fixed-harness baseline on the same questions;
    `--set use_lora=true` trains LoRA adapters (merged into the saved model)."""
    run_stage("sft", config, profile, set_, resume)


@train_app.command("opd")
def train_opd(config: ConfigOpt = None, profile: ProfileOpt = "quick", set_: SetOpt = None,
              resume: ResumeOpt = True) -> None:
    """Stage 2, General OPD: on-policy distillation from the frozen base model.

    The SFT model samples answers to general prompts (MT-Bench, IFEval-style train prompts,
    or hf:DATASET) and learns the base model's distribution on them (per-token reverse KL)."""
    run_stage("opd", config, profile, set_, resume)


@train_app.command("rl")
def train_rl(config: ConfigOpt = None, profile: ProfileOpt = "quick", set_: SetOpt = None,
             resume: ResumeOpt = True) -> None:
    """Stage 3, HSA-RL: GRPO on multi-turn tool episodes in the simulator.

    Reward: the reward-role judge, with separate length penalties on think_tool and
    think_reply tokens and a KL term to the reference."""
    run_stage("rl", config, profile, set_, resume)
