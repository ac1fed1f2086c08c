"""Stage 1: HSA-SFT (and the fixed-harness SFT baseline), on TRL's SFTTrainer.

The rows of `hatkit data build` already hold the token ids exactly as the episode fed and
generated them, and a per-token loss mask from the trace's training view (1 on model-generated
think/tool-call/reply tokens; 0 on system, user and tool output). They go to SFTTrainer
pre-tokenised, with the mask as its `assistant_masks` column: TRL then builds
`labels = input_ids where mask else -100`. Nothing is re-rendered or re-tokenised. `mode:
hsa|fixed` picks the dataset, so the baseline trains on the same questions with the same command.

TRL also truncates every row to `max_length` and drops rows left with no trained token, without
a word. So `train` first computes the length plan (hatkit.train.length_plan), hands it to
`on_plan` (the CLI prints it) and refuses to start when a trained token would be cut or a row
dropped, unless `allow_truncation` is set. The rendered harness puts the first trained token
of a row at about 750-950 tokens and rows run to about 2,250 (embedded tokenizer, quick data);
`fit_max_length` sizes the limit from the rows instead (the pipeline does, when not told one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl.trainer.sft_config import SFTConfig

from .checkpoint import (
    data_manifest,
    final_dir,
    finished_checkpoint,
    last_checkpoint,
    resolve_model,
    save_final,
)
from .length_plan import LengthPlan, plan_sft
from .length_plan import TruncationRefused as TruncationRefused  # raised by train()
from .runtime import (
    CPUDefaults,
    attach_progress,
    load_causal_lm,
    on_main_process,
    prepare_output_dir,
    summarize,
    weights_bf16,
)

MODES = ("hsa", "fixed")


@dataclass
class HatSFTConfig(CPUDefaults, SFTConfig):  # type: ignore[misc]  # CPUDefaults narrows two TRL fields
    """TRL's SFTConfig plus the hatkit fields (model, data, LoRA)."""

    model: str = field(default="local", metadata={
        "help": "Start model: 'local' (the embedded default SmolLM2-135M) or a checkpoint folder."})
    dataset_dir: str = field(default="runs/data", metadata={
        "help": "Output folder of `hatkit data build` (holds manifest.json, hsa/ and fixed/)."})
    mode: str = field(default="hsa", metadata={
        "help": "hsa = rows across harness variants; fixed = the fixed-harness baseline rows."})
    split: str = field(default="train", metadata={"help": "Dataset split to train on."})
    max_rows: int | None = field(default=None, metadata={
        "help": "Use only the first N rows of the split (None = all)."})
    use_lora: bool = field(default=False, metadata={
        "help": "Train LoRA adapters (peft) instead of all weights; merged into the saved model."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha."})
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout."})
    lora_target_modules: list[str] | None = field(default=None, metadata={
        "help": "Modules to adapt (None = all linear layers)."})
    allow_truncation: bool = field(default=False, metadata={
        "help": "Train even when max_length cuts trained tokens or drops rows (TRL truncates "
                "rows and drops those left without a trained token); by default SFT prints the "
                "length plan and refuses."})
    head_on_trained_only: bool = field(default=True, metadata={
        "help": "Apply the LM head only at the positions whose next token is trained, not at "
                "every position: the same loss and gradients without the full [length, "
                "vocabulary] logits. Measured on 2 CPU cores with the default model and quick "
                "HSA rows (~1,450 tokens, ~15% trained), batch 1: 8.98 s a row vs 13.52 s "
                "(1.5x). Off = TRL's own loss; packing and padding_free always use TRL's."})
    share_prefix: bool = field(default=False, metadata={
        "help": "Batch rows of one harness together and run their common prefix (the rendered "
                "system prompt) once per batch instead of once per row: same loss and "
                "gradients (hatkit.train.shared_prefix). Measured on 2 CPU cores with the default "
                "model, HSA rows at batch 4: 17.5 s a row vs 14.5 s plain at batch 1, so the quick "
                "profile leaves it off; bench/sft_shared_prefix.py compares the two. "
                "Not with packing, padding_free or activation checkpointing."})
    share_prefix_min_tokens: int = field(default=128, metadata={
        "help": "share_prefix: the shortest common prefix worth sharing (tokens)."})
    output_dir: str | None = field(default="runs/sft", metadata={
        "help": "Where checkpoint-N folders and the final model (final/) are written."})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        super().__post_init__()  # type: ignore[no-untyped-call]
        if self.share_prefix and (self.packing or self.padding_free
                                  or self.activation_checkpointing or self.gradient_checkpointing):
            raise ValueError("share_prefix does not work with packing, padding_free or "
                             "activation checkpointing")


CONFIG_CLASS = HatSFTConfig

PROFILES: dict[str, dict[str, Any]] = {
    # 12 steps of one row (790-2,250 tokens, ~1,500 on average) at ~90-135 tokens/s on an
    # idle 2-core CPU: 3-4 minutes. max_length is a bound for `hatkit train sft` that quick
    # data fits (a longer row is refused, not cut); `hatkit run` sizes it from the data.
    "quick": {"model": "local", "max_length": 3072, "per_device_train_batch_size": 1,
              "gradient_accumulation_steps": 1, "max_steps": 12, "learning_rate": 5e-5,
              "warmup_steps": 2, "logging_steps": 1, "save_steps": 4, "save_total_limit": 2,
              "bf16": False, "activation_checkpointing": False, "use_cpu": True,
              "dataloader_num_workers": 0, "seed": 0},
    "full": {"model": "Qwen/Qwen3-0.6B", "max_length": 4096, "per_device_train_batch_size": 4,
             "gradient_accumulation_steps": 4, "num_train_epochs": 2, "max_steps": -1,
             "learning_rate": 1e-5, "warmup_steps": 0.03, "lr_scheduler_type": "cosine",
             "logging_steps": 5, "save_steps": 200, "save_total_limit": 3, "bf16": True,
             "activation_checkpointing": True, "seed": 0},
}


def dataset_path(config: HatSFTConfig) -> Path:
    """`<dataset_dir>/<mode>/<split>.parquet` (or .jsonl)."""
    folder = Path(config.dataset_dir) / config.mode
    for ext in ("parquet", "jsonl"):
        path = folder / f"{config.split}.{ext}"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no {config.split}.parquet or {config.split}.jsonl in {folder}; "
                            "build the data with `hatkit data build --out "
                            f"{config.dataset_dir}`")


def read_rows(config: HatSFTConfig) -> Any:
    """The split's rows as written by `hatkit data build` (first `max_rows` of them)."""
    from datasets import Dataset

    path = dataset_path(config)
    ds = (Dataset.from_parquet(str(path)) if path.suffix == ".parquet"
          else Dataset.from_json(str(path)))
    missing = {"input_ids", "loss_mask"} - set(ds.column_names)
    if missing:
        raise ValueError(f"{path}: rows lack {sorted(missing)}; rebuild with `hatkit data build`")
    if config.max_rows is not None:
        ds = ds.select(range(min(config.max_rows, len(ds))))
    return ds


def load_rows(config: HatSFTConfig, raw: Any = None) -> Any:
    """The training rows as a datasets.Dataset with `input_ids` and `assistant_masks` (the
    trace's loss mask), ready for SFTTrainer's pre-tokenised path; with `share_prefix` also
    `harness_hash` (it orders the batches; the Trainer drops it before collating)."""
    ds = read_rows(config) if raw is None else raw
    keep = ["input_ids", "loss_mask"]
    if config.share_prefix and "harness_hash" in ds.column_names:
        keep.append("harness_hash")
    return ds.select_columns(keep).rename_column("loss_mask", "assistant_masks")


def fit_max_length(rows: Iterable[Mapping[str, Any]], multiple: int = 64) -> int:
    """The longest row's token count rounded up to `multiple`: a max_length that cuts nothing."""
    names = getattr(rows, "column_names", None)
    if names is not None:  # a datasets.Dataset: read only the lengths
        column = "n_tokens" if "n_tokens" in names else "loss_mask"
        rows = rows.select_columns([column])  # type: ignore[attr-defined]
    longest = max((int(r["n_tokens"]) if r.get("n_tokens") is not None else len(r["loss_mask"])
                   for r in rows), default=0)
    return max(multiple, -(-longest // multiple) * multiple)


def length_plan(config: HatSFTConfig, raw: Any = None) -> LengthPlan:
    """What `config.max_length` would cut in the split (TRL's packing strategies that split
    overflowing rows lose nothing, so they plan as no limit)."""
    ds = read_rows(config) if raw is None else raw
    ds = ds.select_columns([c for c in ("loss_mask", "category") if c in ds.column_names])
    split_packing = bool(config.packing) and config.packing_strategy != "bfd"
    limit = None if split_packing else config.max_length
    return plan_sft(ds, limit, f"{config.mode}/{config.split}",
                    keep_end=config.truncation_mode == "keep_end")


def lora_config(config: HatSFTConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                      lora_dropout=config.lora_dropout, task_type="CAUSAL_LM",
                      target_modules=config.lora_target_modules or "all-linear")


def build_trainer(config: HatSFTConfig, model: Any, tokenizer: Any, rows: Any,
                  callbacks: list[Any] | None = None) -> Any:
    """The SFTTrainer for `rows` (also used by the mask test). It does not check lengths:
    `train` does, before it gets here."""
    from trl.trainer.sft_trainer import SFTTrainer

    kwargs: dict[str, Any] = {}
    trainer_class: Any = SFTTrainer
    if config.share_prefix:  # TRL still prepares (labels, truncation) the rows: the plan holds
        from .shared_prefix import SharedPrefixCollator, make_trainer_class

        trainer_class = make_trainer_class()
        kwargs["data_collator"] = SharedPrefixCollator(
            tokenizer.pad_token_id, min_shared=config.share_prefix_min_tokens)
    elif config.head_on_trained_only and not (config.packing or config.padding_free):
        from .shared_prefix import make_trainer_class

        trainer_class = make_trainer_class(group_by_harness=False)
    return trainer_class(model=model, args=config, train_dataset=rows, processing_class=tokenizer,
                         peft_config=lora_config(config) if config.use_lora else None,
                         callbacks=callbacks, **kwargs)


def train(config: HatSFTConfig, *, resume: bool = True,
          progress: Callable[[int, int], None] | None = None,
          callbacks: list[Any] | None = None,
          on_plan: Callable[[LengthPlan], None] | None = None) -> Path:
    """Run stage 1 and return `output_dir/final` (see hatkit.train.checkpoint). The length
    plan goes to `on_plan` first; TruncationRefused if it cuts training (see module)."""
    out = Path(config.output_dir or "runs/sft")
    if resume and (done := finished_checkpoint(out)) is not None:
        return done
    raw = read_rows(config)
    plan = length_plan(config, raw)
    if on_plan is not None:
        on_plan(plan)
    if not config.allow_truncation:
        plan.refuse_cuts()
    on_main_process(lambda: prepare_output_dir(out, resume))
    model_path = resolve_model(config.model)
    data = data_manifest(config.dataset_dir, config.mode, config.split)
    model, tokenizer = load_causal_lm(model_path, bf16=weights_bf16(config), fp16=config.fp16)
    trainer = build_trainer(config, model, tokenizer, load_rows(config, raw), callbacks)
    attach_progress(trainer, progress)
    start = last_checkpoint(out) if resume else None
    result = trainer.train(resume_from_checkpoint=start)
    if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
        # stopped early by a callback (a simulated kill): leave only checkpoint-N behind
        return Path(last_checkpoint(out) or out)
    metrics = summarize(trainer, result)

    def save() -> None:
        save_final(trainer.model, tokenizer, out, stage="sft", model_spec=config.model,
                   model_path=model_path, config=config, steps=trainer.state.global_step,
                   metrics=metrics, data=data, extra={"mode": config.mode, "resumed_from": start,
                                                      "length_plan": plan.record()})

    on_main_process(save)
    return final_dir(out)
