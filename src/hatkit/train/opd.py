"""Stage 2: General OPD (on-policy distillation) on TRL's DistillationTrainer.

The student (the HSA-SFT checkpoint) samples answers to general instruction prompts; the
frozen original base model scores the student's own tokens; the loss is the per-token reverse
KL(student || teacher) over the full vocabulary on those samples. It restores the general
ability that domain SFT erodes, without pulling the student back off its own distribution.

Why TRL's DistillationTrainer (trl 1.16, `trl.DistillationTrainer`) and not GKDTrainer or a
loop of our own: it is the maintained successor of the experimental GKDTrainer; it always
generates on-policy with the student (GKD's `lmbda=1`), its generalized-JSD `beta=1.0` is
exactly the reverse KL, and it computes that divergence chunk by chunk from hidden states
(no full B x T x V logits, which matter for a 150k-vocabulary Qwen3 teacher). It also brings
what a small loop would have to rebuild: accelerate/DeepSpeed/FSDP, vLLM generation for the
full profile, checkpoint/resume, logging. The teacher is only run under `torch.no_grad()` in
eval mode; we also freeze its parameters, and the tests check its weights bitwise.

TRL never truncates these prompts; before training, `length_plan` counts the prompts that with
`max_completion_length` would overrun the student's context, and `train` hands it to `on_plan`.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl.trainer.distillation_config import DistillationConfig

from ..models.cache import sha256_file
from .checkpoint import final_dir, finished_checkpoint, last_checkpoint, read_meta, resolve_model, save_final
from .general_prompts import GeneralPrompt, collect_prompts
from .length_plan import PromptPlan
from .runtime import (
    CPUDefaults,
    attach_progress,
    load_causal_lm,
    on_main_process,
    prepare_output_dir,
    summarize,
    weights_bf16,
)


@dataclass
class HatOPDConfig(CPUDefaults, DistillationConfig):  # type: ignore[misc]  # as in sft.py
    """TRL's DistillationConfig plus the hatkit fields (student, teacher, prompt sources)."""

    model: str = field(default="runs/sft/final", metadata={
        "help": "Student: the stage-1 checkpoint folder ('local' = the embedded default model)."})
    teacher: str = field(default="local", metadata={
        "help": "Frozen teacher: the original base model ('local' = embedded SmolLM2-135M)."})
    prompt_sources: list[str] = field(default_factory=lambda: ["mtbench", "ifeval_train"],
                                      metadata={"help": "mtbench, ifeval_train and/or "
                                                "hf:NAME_OR_PATH (a HF data set or local file)."})
    n_if_prompts: int = field(default=64, metadata={
        "help": "How many IFEval-style prompts to synthesise from the train split."})
    max_prompts: int | None = field(default=None, metadata={
        "help": "Keep at most this many prompts, drawn at random with `seed` (None = all)."})
    hf_split: str = field(default="train", metadata={"help": "Split of an hf: source."})
    hf_messages_column: str | None = field(default="messages", metadata={
        "help": "Chat-messages column of an hf: source (prompt = up to the last user turn)."})
    hf_prompt_column: str | None = field(default=None, metadata={
        "help": "Plain prompt-text column of an hf: source (takes precedence over messages)."})
    hf_max_rows: int | None = field(default=None, metadata={
        "help": "Rows drawn from an hf: source (None = all)."})
    output_dir: str | None = field(default="runs/opd", metadata={
        "help": "Where checkpoint-N folders and the final model (final/) are written."})

    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[no-untyped-call]
        if self.beta != 1.0:
            import warnings

            warnings.warn(f"opd beta={self.beta}: 1.0 is the reverse KL the design asks for",
                          stacklevel=2)


CONFIG_CLASS = HatOPDConfig

PROFILES: dict[str, dict[str, Any]] = {
    # 8 steps x 4 prompts x <=32 sampled tokens: ~10-15 s a step on an idle 2-core CPU (2
    # minutes); with the machine loaded 5x by other jobs a 48-token step measured 106-208 s.
    "quick": {"model": "runs/sft/final", "teacher": "local", "max_steps": 8,
              "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1,
              "max_completion_length": 32, "max_prompts": 64, "n_if_prompts": 32,
              "learning_rate": 1e-5, "temperature": 1.0, "logging_steps": 1, "save_steps": 4,
              "save_total_limit": 2, "bf16": False, "activation_checkpointing": False,
              "use_cpu": True, "seed": 0},
    "full": {"model": "runs/sft/final", "teacher": "Qwen/Qwen3-0.6B", "max_steps": 500,
             "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2,
             "max_completion_length": 1024, "n_if_prompts": 2000, "learning_rate": 1e-6,
             "logging_steps": 10, "save_steps": 100, "save_total_limit": 3, "bf16": True,
             "activation_checkpointing": True, "seed": 0},
}


def load_prompts(config: HatOPDConfig) -> list[GeneralPrompt]:
    """The configured prompt sources, shuffled with `seed` and capped at `max_prompts`."""
    hf = {"split": config.hf_split, "messages_column": config.hf_messages_column,
          "prompt_column": config.hf_prompt_column, "n": config.hf_max_rows}
    prompts = collect_prompts(config.prompt_sources, n_if=config.n_if_prompts,
                              seed=config.seed, hf=hf)
    random.Random(config.seed).shuffle(prompts)
    return prompts[: config.max_prompts] if config.max_prompts is not None else prompts


def write_prompts(prompts: list[GeneralPrompt], path: Path) -> dict[str, Any]:
    """Record the exact prompts of the run (JSONL) and return {path, sha256} for the checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # each rank under accelerate writes its own
    tmp.write_text("".join(json.dumps({"key": p.key, "source": p.source, "messages": p.messages},
                                      ensure_ascii=False) + "\n" for p in prompts), encoding="utf-8")
    tmp.replace(path)
    return {"path": str(path.resolve()), "sha256": sha256_file(path)}


def length_plan(config: HatOPDConfig, prompts: list[GeneralPrompt], tokenizer: Any,
                context: int | None) -> PromptPlan:
    """The prompts, rendered as TRL renders them, against `context` (per prompt source)."""
    plan = PromptPlan("opd", config.max_completion_length, context)
    for p in prompts:
        ids = tokenizer.apply_chat_template(p.messages, add_generation_prompt=True, tokenize=True,
                                            return_dict=True)["input_ids"]
        plan.add(p.source, len(ids))
    return plan


def build_trainer(config: HatOPDConfig, student: Any, teacher: Any, tokenizer: Any,
                  prompts: list[GeneralPrompt], callbacks: list[Any] | None = None) -> Any:
    """TRL's DistillationTrainer over `prompts`, the teacher frozen (no grad, eval mode)."""
    from datasets import Dataset
    from trl.trainer.distillation_trainer import DistillationTrainer

    if student.config.vocab_size != teacher.config.vocab_size:
        raise ValueError(f"student vocabulary ({student.config.vocab_size}) differs from the "
                         f"teacher's ({teacher.config.vocab_size}); OPD needs one tokenizer")
    teacher.eval()
    teacher.requires_grad_(False)
    rows = Dataset.from_list([{"prompt": p.messages} for p in prompts])
    return DistillationTrainer(model=student, teacher_model=teacher, args=config,
                               train_dataset=rows, processing_class=tokenizer, callbacks=callbacks)


def train(config: HatOPDConfig, *, resume: bool = True,
          progress: Callable[[int, int], None] | None = None,
          callbacks: list[Any] | None = None,
          on_plan: Callable[[PromptPlan], None] | None = None) -> Path:
    """Run stage 2 and return `output_dir/final` (see hatkit.train.checkpoint); the prompts'
    length plan goes to `on_plan` before training."""
    out = Path(config.output_dir or "runs/opd")
    if resume and (done := finished_checkpoint(out)) is not None:
        return done
    on_main_process(lambda: prepare_output_dir(out, resume))
    student_path, teacher_path = resolve_model(config.model), resolve_model(config.teacher)
    student, tokenizer = load_causal_lm(student_path, bf16=weights_bf16(config), fp16=config.fp16)
    teacher, _ = load_causal_lm(teacher_path, bf16=weights_bf16(config), fp16=config.fp16,
                                trainable=False)
    prompts = load_prompts(config)
    plan = length_plan(config, prompts, tokenizer,
                       getattr(student.config, "max_position_embeddings", None))
    if on_plan is not None:
        on_plan(plan)
    data = write_prompts(prompts, out / "prompts.jsonl")
    parent = read_meta(student_path) or {}
    data["harness_hashes"] = parent.get("harness_hashes", [])
    trainer = build_trainer(config, student, teacher, tokenizer, prompts, callbacks)
    attach_progress(trainer, progress)
    start = last_checkpoint(out) if resume else None
    result = trainer.train(resume_from_checkpoint=start)
    if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
        return Path(last_checkpoint(out) or out)
    sources: dict[str, int] = {}
    for p in prompts:
        sources[p.source] = sources.get(p.source, 0) + 1
    metrics = summarize(trainer, result)

    def save() -> None:
        save_final(trainer.model, tokenizer, out, stage="opd", model_spec=config.model,
                   model_path=student_path, config=config, steps=trainer.state.global_step,
                   metrics=metrics, data=data, extra={"teacher": str(teacher_path),
                                                      "prompt_sources": sources,
                                                      "resumed_from": start,
                                                      "length_plan": plan.record()})

    on_main_process(save)
    return final_dir(out)
