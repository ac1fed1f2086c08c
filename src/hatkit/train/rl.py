"""Stage 3: HSA-RL, GRPO over multi-turn tool episodes in the simulator, on TRL's GRPOTrainer.

Why TRL's trainer and not a loop of our own: GRPOTrainer (TRL 1.16) accepts a `rollout_func`
that returns its own `prompt_ids` / `completion_ids` / `logprobs` plus an `env_mask` over the
completion, which it multiplies into the loss mask. That is exactly what a multi-turn trace
needs: the completion holds the model's tokens *and* the tool outputs fed between them, and
only the former are trained. Everything else (group-normalised advantages, the clipped
ratio, the per-token KL to a frozen reference with `beta`, AdamW, checkpoints and resume,
TensorBoard logging, `accelerate launch`) is TRL's, unchanged. We do not use TRL's own
tool loop (`tools=` / `environment_factory`): it re-renders the chat with the tokenizer's
template after every tool call, while hatkit's agent loop keeps the ids as generated and runs
our harness hooks, permissions and fault injection.

Each rollout (hatkit.train.rl_rollout) runs `hatkit.agent` on a training-family harness
variant (`hatkit.sim.augment`), a train-split question, with injected faults, sampling from
the live policy. The reward (hatkit.train.rewards) is the reward-role judge's
`accuracy_weight * accuracy + effectiveness_weight * effectiveness`, minus
`think_tool_coef * excess` and `think_reply_coef * excess` (mean tokens per reasoning block
over each target), handed to TRL as separate weighted reward functions; the KL term is TRL's
(`beta`, k3 estimator per token, against the start model: a frozen copy, or with LoRA the
base with adapters off).

Multi-GPU: the same config runs under `accelerate launch --num_processes N "$(which hatkit)"
train rl --config FILE` or `torchrun --nproc_per_node N "$(which hatkit)" train rl ...`
(tried on CPU with 2 torchrun processes): each process runs its share of the episodes and
TRL gathers the rewards of a group across processes. At scale the rollouts belong on vLLM:
GRPOConfig's `use_vllm` / `vllm_mode="server"` keeps the server's weights synced for a
rollout_func, and the agent loop reaches a vLLM server through hatkit's OpenAI-compatible
backend; that path needs token ids and log-probs back from the server and is not exercised
here (documented, untested).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .checkpoint import finished_checkpoint, last_checkpoint, resolve_model, save_final
from .length_plan import PromptPlan
from .rewards import JudgeScorer, Scorer
from .rl_config import HatRLConfig
from .rl_rollout import Rollouts, Sampling
from .rl_setup import (
    domain_for,
    fault_config,
    length_plan,
    plan_episodes,
    reward_spec,
    training_harnesses,
    write_manifest,
)
from .runtime import ProgressCallback, load_causal_lm, prepare_output_dir, summarize

CONFIG_CLASS = HatRLConfig
CUT_KEY = "hat/trained_tokens_cut"
"""Logged per step: mean generated tokens per rollout that max_completion_length cut off."""

PROFILES: dict[str, dict[str, Any]] = {
    # One step = 2 episodes of ~1,700 tokens (the harness prompt is ~1,560): rollout ~25 s,
    # LoRA forward/backward + reference pass ~45 s on an idle 2-core CPU (measured 160 s with
    # the machine shared by other jobs), so 3 steps take about 4-8 minutes with loading.
    "quick": {"model": "local", "max_steps": 3, "num_generations": 2,
              "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
              "max_new_tokens": 48, "max_turns": 3, "max_completion_length": 1024,
              "n_variants": 2, "n_questions": 8, "use_lora": True, "learning_rate": 5e-5,
              "beta": 0.02, "save_steps": 1, "save_total_limit": 2, "bf16": False,
              "use_cpu": True, "dataloader_num_workers": 0, "seed": 0},
    # vLLM rollouts are the scale path (use_vllm, vllm_mode="server"); not exercised here.
    "full": {"model": "Qwen/Qwen3-0.6B", "max_steps": 500, "num_generations": 8,
             "per_device_train_batch_size": 8, "gradient_accumulation_steps": 4,
             "max_new_tokens": 1024, "max_turns": 6, "max_completion_length": 6144,
             "n_variants": 32, "n_questions": 2000, "learning_rate": 1e-6, "beta": 0.02,
             "lr_scheduler_type": "constant_with_warmup", "warmup_steps": 10,
             "save_steps": 50, "save_total_limit": 3, "bf16": True,
             "gradient_checkpointing": True, "seed": 0},
}


def build_trainer(config: HatRLConfig, model: Any, tokenizer: Any, *, scorer: Scorer | None = None,
                  callbacks: list[Any] | None = None) -> tuple[Any, Rollouts]:
    """The GRPOTrainer and its rollout function (tests pass a toy `scorer`)."""
    from datasets import Dataset
    from trl.trainer.grpo_trainer import GRPOTrainer

    out = Path(config.output_dir or "runs/rl")
    harnesses = training_harnesses(config, out / "variants")
    episodes = plan_episodes(config, harnesses)
    reward = reward_spec(config)
    scorer = scorer or JudgeScorer(config.accuracy_weight, config.effectiveness_weight,
                                   config.judge_harness, domain=domain_for(config))
    sampling = Sampling(config.temperature, config.top_p, config.max_new_tokens,
                        config.max_completion_length, config.rollout_batch)
    rollouts = Rollouts(harnesses, episodes, scorer, reward, sampling, tokenizer,
                        fault_config(config), config.max_turns,
                        out / "rollouts" if config.save_rollouts else None)
    if config.reward_weights is not None and list(config.reward_weights) != reward.weights:
        raise ValueError("reward_weights is set by hatkit from think_tool_coef and "
                         "think_reply_coef (the judge score counts once); set those instead")
    config.reward_weights = reward.weights
    peft = None
    if config.use_lora:
        from peft import LoraConfig

        peft = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, task_type="CAUSAL_LM",
                          lora_dropout=config.lora_dropout,
                          target_modules=config.lora_target_modules or "all-linear")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is documented above
    funcs: list[Any] = list(reward.reward_funcs())
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=config,
                          train_dataset=Dataset.from_list(rollouts.dataset_rows()),
                          processing_class=tokenizer, peft_config=peft, callbacks=callbacks,
                          rollout_func=rollouts)
    return trainer, rollouts


def train(config: HatRLConfig, *, resume: bool = True,
          progress: Callable[[int, int], None] | None = None,
          scorer: Scorer | None = None, callbacks: list[Any] | None = None,
          on_plan: Callable[[PromptPlan], None] | None = None) -> Path:
    """Run stage 3 and return `output_dir/final` (see hatkit.train.checkpoint). `scorer`
    replaces the reward judge (tests use a toy one); `callbacks` go to the trainer; the
    episodes' length plan goes to `on_plan` before training (main process).

    Under `accelerate launch`/`torchrun` every process trains; only the main one cleans the
    output folder, makes the variants, writes the manifest and saves `final/`."""
    from ..models.cache import sha256_file

    dist = config.distributed_state
    out = Path(config.output_dir or "runs/rl")
    if resume and (done := finished_checkpoint(out)) is not None:
        return done
    if dist.is_main_process:
        prepare_output_dir(out, resume)
    dist.wait_for_everyone()
    model_path = resolve_model(config.model)
    model, tokenizer = load_causal_lm(model_path, bf16=bool(config.bf16), fp16=config.fp16)
    cbs = list(callbacks or []) + ([ProgressCallback(progress)] if progress else [])
    with dist.main_process_first():  # the main process makes the variant folders
        trainer, rollouts = build_trainer(config, model, tokenizer, scorer=scorer, callbacks=cbs)
    judge_hash = str(getattr(rollouts.scorer, "judge_hash", ""))
    plan = None
    if dist.is_main_process:
        write_manifest(out, config, rollouts, judge_hash)
        plan = length_plan(config, rollouts, getattr(model.config, "max_position_embeddings", None))
        if on_plan is not None:
            on_plan(plan)
    start = last_checkpoint(out) if resume else None
    result = trainer.train(resume_from_checkpoint=start)
    if trainer.control.should_training_stop and trainer.state.global_step < trainer.state.max_steps:
        return Path(last_checkpoint(out) or out)  # stopped by a callback: checkpoint-N only
    final = out / "final"
    if dist.is_main_process:
        metrics = summarize(trainer, result)
        for key in ("reward", "rewards/judge/mean", "hat/think_tool_tokens", "hat/think_reply_tokens"):
            vals = [float(h[key]) for h in trainer.state.log_history if key in h]
            if vals:
                metrics[f"first_{key}"], metrics[f"last_{key}"] = vals[0], vals[-1]
        cuts = [float(h[CUT_KEY]) for h in trainer.state.log_history if CUT_KEY in h]
        metrics[f"max_{CUT_KEY}"] = max(cuts, default=0.0)
        manifest = out / "rl_manifest.json"
        data = {"path": str(manifest.resolve()), "sha256": sha256_file(manifest),
                "harness_hashes": sorted({h.content_hash for h in rollouts.harnesses})}
        final = save_final(trainer.model, tokenizer, out, stage="rl", model_spec=config.model,
                           model_path=model_path, config=config, steps=trainer.state.global_step,
                           metrics=metrics, data=data,
                           extra={"judge_hash": judge_hash, "resumed_from": start,
                                  "length_plan": plan.record() if plan else None,
                                  "variants": [h.name for h in rollouts.harnesses]})
    dist.wait_for_everyone()
    return final
