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
from types import SimpleNamespace
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
    help="quick = this CPU (fp32 weights, bf16 autocast where it has AMX or AVX512-BF16), the "
    "embedded SmolLM2-135M; full = a GPU, a Qwen3 model, bf16.")]
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


@train_app.command("draft")
def train_draft(
    checkpoint: Annotated[Path, typer.Argument(help="The trained target: a checkpoint folder "
                                               "(e.g. runs/quick/checkpoints/hsa_sft/final).")],
    data: Annotated[Path, typer.Option(help="A `hatkit data build` folder: its conversations "
                                       "are what the heads learn the target's replies on.")],
    mode: Annotated[str, typer.Option(help="Which rows of the data: hsa or fixed.")] = "hsa",
    split: Annotated[str, typer.Option(help="train or dev.")] = "train",
    heads: Annotated[int, typer.Option(min=1, max=8, help="Tokens drafted per target pass.")] = 4,
    kept: Annotated[int, typer.Option(min=16, help="Output vocabulary of the heads: the most "
                                      "frequent tokens the target writes.")] = 4096,
    steps: Annotated[int, typer.Option(min=1, help="Optimiser steps (batches of 512 positions).")] = 300,
    lr: Annotated[float, typer.Option(help="Peak learning rate (linear decay).")] = 1e-3,
    max_rows: Annotated[int | None, typer.Option(help="Use at most this many rows.")] = None,
    own_replies: Annotated[int, typer.Option(min=0, help="Trained segments of the data at which "
                                             "the target writes its own greedy reply to learn "
                                             "from (a tenth held out for the accuracy shown); "
                                             "0: the data's text only.")] = 256,
    out: Annotated[Path | None, typer.Option(help="Where to write the heads; default "
                                             "CHECKPOINT/draft_heads, where serving finds them.")] = None,
) -> None:
    """MTP draft heads for speculative decoding, distilled from the target's own greedy tokens.

    The heads read the target's last hidden state and guess the next few tokens, so one
    target pass verifies several (`hatkit serve --model CKPT --speculative mtp`,
    `hatkit bench latency --model CKPT`). The target first writes its own greedy replies at
    `--own-replies` places in the data (what a draft meets when it serves; the data's text
    leaves the target's path). Prints each head's held-out accuracy: the share of positions
    where its guess equals the target's greedy token, on own replies no head trained on."""
    from ..models.mtp import HEADS_DIR, weights_hash
    from ..train.checkpoint import resolve_model
    from ..train.draft import greedy_rows, train_heads
    from ..train.runtime import load_causal_lm
    from ..train.sft import read_rows

    folder = resolve_model(str(checkpoint)) if not checkpoint.is_dir() else checkpoint
    if not (folder / "config.json").is_file():
        raise _fail(f"{checkpoint}: not a checkpoint folder (no config.json)")
    try:
        where: Any = SimpleNamespace(dataset_dir=str(data), mode=mode, split=split, max_rows=max_rows)
        ds = read_rows(where)
    except (FileNotFoundError, ValueError) as e:
        raise _fail(str(e)) from e
    model, tok = load_causal_lm(folder, trainable=False)
    if max(max(r) for r in ds["input_ids"]) >= model.get_output_embeddings().weight.shape[0]:
        raise _fail(f"{data}: token ids beyond {checkpoint}'s vocabulary; build the data with its tokenizer")
    rows = [(list(i), list(m)) for i, m in zip(ds["input_ids"], ds["loss_mask"], strict=True)]
    _say(f"{len(rows)} rows from {data}/{mode}/{split}; target {folder}")
    bar, _ = _progress_bar("reading the target's greedy tokens")
    task = bar.tasks[0].id
    labels = {"greedy": "the target writes its own replies", "target": "reading the target's greedy tokens",
              "heads": "training the heads"}

    def show(phase: str, done: int, total: int) -> None:
        bar.update(task, description=labels[phase], completed=done, total=total)

    with bar:
        own = greedy_rows(model, tok, rows, segments=own_replies, progress=show) if own_replies else []
        n_held = max(1, len(own) // 10) if len(own) >= 2 else 0
        result, report = train_heads(model, own[n_held:] + rows, num_heads=heads, kept=kept, steps=steps,
                                     lr=lr, eos_id=tok.eos_token_id, target_hash=weights_hash(folder),
                                     progress=show, heldout_rows=own[:n_held] if n_held else None)
    where_held = f"{n_held} of the target's own replies" if n_held else "held-out data rows"
    asked = f" (the data has {len(own)} trained segments)" if own_replies > len(own) else ""
    _say(f"{len(own)} own replies written{asked}; accuracy below on {where_held}")
    dest = result.save(out or folder / HEADS_DIR)
    table = Table(title=f"draft heads -> {dest}")
    for col in ("head", "guesses token", "held-out accuracy", "positions"):
        table.add_column(col)
    for i, (acc, n) in enumerate(zip(report.heldout_accuracy, report.heldout_positions, strict=True)):
        table.add_row(str(i), f"+{i + 2}", f"{acc:.3f}", str(n))
    console.print(table)
    _say(f"{report.positions} training positions, {report.kept} kept tokens, loss "
         f"{report.loss_first} -> {report.loss_last}")
