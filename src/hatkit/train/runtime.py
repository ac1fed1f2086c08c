"""Pieces every stage's `train()` shares: loading the start model, the output folder on
resume/no-resume, progress and loss callbacks, and a metrics summary for the checkpoint."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..models.precision import cpu_has_bf16_matmul
from .checkpoint import FINAL


@dataclass
class CPUDefaults:
    """Defaults the SFT and OPD configs share over TRL's: fp32, no activation checkpointing
    (it slows a CPU down), TensorBoard files. Listed first among the bases, so these fields
    replace TRL's same-named ones."""

    gradient_checkpointing: bool | None = field(  # type: ignore[assignment]
        default=None, metadata={"help": "Deprecated alias of activation_checkpointing."})
    activation_checkpointing: bool | None = field(default=None, metadata={
        "help": "Recompute activations to save memory (off unless set: it slows a CPU down)."})
    bf16: bool | None = field(  # type: ignore[assignment]
        default=False, metadata={"help": "bf16 mixed precision. On a GPU the weights load in "
                                         "bf16; on the CPU (use_cpu) they stay fp32 under bf16 "
                                         "autocast (see cpu_bf16)."})
    cpu_bf16: bool = field(default=True, metadata={
        "help": "With use_cpu, on a CPU that multiplies bf16 matrices in hardware (AMX or "
                "AVX512-BF16), train under bf16 autocast over fp32 weights: about 1.8x faster a "
                "step on the default model (bench/sft_precision.py). On other CPUs, which "
                "emulate bf16 several times slower, and with cpu_bf16=false: fp32."})
    report_to: str | list[str] | None = field(default_factory=lambda: ["tensorboard"], metadata={
        "help": "Metric loggers; tensorboard files are written with tensorboardX when the "
                "tensorboard package is absent."})

    def __post_init__(self) -> None:
        if getattr(self, "use_cpu", False) and self.cpu_bf16 and not getattr(self, "fp16", False) \
                and cpu_has_bf16_matmul():
            self.bf16 = True  # type: ignore[assignment]
        super().__post_init__()  # type: ignore[misc]


def cpu_autocast(config: Any) -> bool:
    """Whether a stage config trains under bf16 autocast on the CPU (fp32 weights)."""
    return bool(getattr(config, "bf16", False)) and bool(getattr(config, "use_cpu", False))


def weights_bf16(config: Any) -> bool:
    """Load the weights in bf16 only off the CPU: the CPU's bf16 is autocast over fp32 weights
    (pure bf16 weights lose the small updates of a fine-tune to rounding)."""
    return bool(config.bf16) and not cpu_autocast(config)


def plain_config(path: Path) -> Any:
    """The checkpoint's config without a stale GGUF `quantization_config`: the embedded model
    was dequantised to fp32 safetensors, but its config.json still names the GGUF, and
    transformers' Trainer refuses to fine-tune a model it believes quantised."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    quant = getattr(config, "quantization_config", None)
    if isinstance(quant, dict) and quant.get("quant_method") == "gguf":
        del config.quantization_config
    return config


def load_causal_lm(path: Path, *, bf16: bool = False, fp16: bool = False,
                   trainable: bool = True) -> tuple[Any, Any]:
    """(model, tokenizer) from a local checkpoint folder: fp32 unless bf16/fp16 weights are
    asked for (a GPU's choice; see `weights_bf16`). The tokenizer
    gets a pad token (its EOS) when it has none, as the collators need one."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.bfloat16 if bf16 else torch.float16 if fp16 else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, config=plain_config(path))
    if not trainable:
        model.eval()  # type: ignore[no-untyped-call]
        model.requires_grad_(False)
    return model, tokenizer


def prepare_output_dir(output_dir: str | Path, resume: bool) -> None:
    """Without resume, a stage starts over: earlier `checkpoint-N` folders and `final/` in
    `output_dir` are removed, so that a later resume cannot pick up a stale run's state."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if resume:
        return
    for child in out.iterdir():
        if child.is_dir() and (child.name.startswith("checkpoint-") or child.name == FINAL):
            shutil.rmtree(child)


class ProgressCallback(TrainerCallback):  # type: ignore[misc]
    """Reports (step, max_steps) after every optimizer step, e.g. to a rich progress bar."""

    def __init__(self, progress: Callable[[int, int], None]) -> None:
        self.progress = progress

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.progress(int(state.global_step), int(state.max_steps))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.progress(int(state.global_step), int(state.max_steps))


class StopAfter(TrainerCallback):  # type: ignore[misc]
    """Stops training (after saving) once `global_step` reaches `step`: how the resume tests
    simulate a run killed mid-way without killing a process."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if state.global_step >= self.step:
            control.should_save = True
            control.should_training_stop = True
        return control


def summarize(trainer: Any, train_output: Any) -> dict[str, Any]:
    """Final metrics for `hatkit_checkpoint.json`: trainer metrics, the logged losses by step
    (first/last/history), the step count and the precision trained in."""
    history = [h for h in trainer.state.log_history if "loss" in h]
    losses = [(int(h["step"]), float(h["loss"])) for h in history]
    metrics: dict[str, Any] = {k: float(v) for k, v in (train_output.metrics or {}).items()
                               if isinstance(v, (int, float))}
    metrics["global_step"] = int(trainer.state.global_step)
    args = trainer.args
    metrics["precision"] = ("bf16 autocast" if cpu_autocast(args)
                            else "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32")
    if losses:
        metrics["first_loss"], metrics["last_loss"] = losses[0][1], losses[-1][1]
    metrics["loss_history"] = losses
    zero_std = [float(h["frac_reward_zero_std"]) for h in history if "frac_reward_zero_std" in h]
    if zero_std:  # GRPO: a group whose rollouts all score alike has no advantage, no gradient
        metrics["steps_without_signal"] = sum(z >= 1.0 for z in zero_std)
    extra = [h for h in trainer.state.log_history if "loss" not in h and "train_runtime" not in h]
    for key in ("num_tokens", "entropy", "mean_token_accuracy", "completions/mean_length"):
        vals = [float(h[key]) for h in extra + history if key in h]
        if vals:
            metrics[key] = vals[-1]
    return metrics


LOG_KEYS = {"loss": "loss", "grad_norm": "grad", "learning_rate": "lr", "entropy": "entropy",
            "mean_token_accuracy": "acc", "completions/mean_length": "sample_len",
            "num_tokens": "tokens"}


class LogPrinter(TrainerCallback):  # type: ignore[misc]
    """Prints each logged step as one rich line (replaces transformers' raw dict printer)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not logs or "loss" not in logs:
            return
        parts = [f"{short} {float(logs[k]):.4g}" for k, short in LOG_KEYS.items()
                 if isinstance(logs.get(k), (int, float))]
        self.console.print(f"step {state.global_step}/{state.max_steps}  " + "  ".join(parts),
                           markup=False)


def attach_progress(trainer: Any, progress: Callable[[int, int], None] | None) -> None:
    """With a progress callable (the CLI's rich bar): drop transformers' tqdm bar and raw log
    printer, report steps to `progress` and print each log as one line."""
    if progress is None:
        return
    from transformers.trainer_callback import PrinterCallback
    from transformers.trainer_callback import ProgressCallback as TqdmCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(TqdmCallback)
    trainer.add_callback(ProgressCallback(progress))
    trainer.add_callback(LogPrinter())


def on_main_process(fn: Callable[[], Any]) -> None:
    """Run `fn` on the main process only, then wait for all (under `accelerate launch`, every
    rank runs `train()`; one must prepare or write the shared output folder)."""
    from accelerate import PartialState

    state = PartialState()
    if state.is_main_process:
        fn()
    state.wait_for_everyone()
