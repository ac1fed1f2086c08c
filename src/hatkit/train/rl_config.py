"""HatRLConfig: the HSA-RL stage's settings (TRL's GRPOConfig plus hatkit's), apart from the
trainer so that the set-up helpers (`rl_setup`) and the trainer (`rl`) both read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl.trainer.grpo_config import GRPOConfig

from ..sim.faults import FAULT_KINDS


@dataclass
class HatRLConfig(GRPOConfig):
    """TRL's GRPOConfig plus the hatkit fields (model, simulator, reward, LoRA)."""

    model: str = field(default="local", metadata={"help": (
        "Start model: 'local' (the embedded default SmolLM2-135M) or a checkpoint folder "
        "(normally the OPD stage's final/).")})
    harness: str = field(default="live_commerce", metadata={"help": (
        "Base harness (folder or shipped name) the training family of variants is made from.")})
    domain: str | None = field(default=None, metadata={"help": (
        "Domain of the questions and the judge (default: the one the harness names, else "
        "live_commerce).")})
    n_variants: int = field(default=8, metadata={"help": (
        "Training-family harness variants the episodes are spread over (0 = the base only).")})
    n_questions: int = field(default=64, metadata={"help": (
        "Train-split questions (episodes) in the sampling pool.")})
    locale: str = field(default="en", metadata={"help": "Locale of the questions and harnesses."})
    categories: list[str] | None = field(default=None, metadata={"help": (
        "Only these question categories (None = all).")})
    fault_rate: float = field(default=0.1, metadata={"help": (
        "Probability per tool call of an injected fault, spread evenly over fault_kinds "
        "(0 = no faults).")})
    fault_kinds: list[str] | None = field(default=None, metadata={"help": (
        "Fault kinds to inject (None = timeout, malformed, permission_denied).")})
    max_faults_per_episode: int | None = field(default=2, metadata={"help": (
        "Cap on injected faults per episode (None = no cap).")})
    max_turns: int | None = field(default=None, metadata={"help": (
        "Cap on model calls per viewer message (None = the harness's own limit).")})
    max_new_tokens: int = field(default=256, metadata={"help": (
        "Cap on tokens per model call in rollouts (the harness's own cap applies when lower).")})
    rollout_batch: int = field(default=8, metadata={"help": "Episodes decoded together in one batch."})
    accuracy_weight: float = field(default=0.5, metadata={"help": (
        "Reward weight of the reward judge's accuracy score.")})
    effectiveness_weight: float = field(default=0.5, metadata={"help": (
        "Reward weight of the reward judge's effectiveness score.")})
    judge_harness: str | None = field(default=None, metadata={"help": (
        "Reward judge harness folder (None = the shipped programmatic judge, reward role).")})
    think_tool_coef: float = field(default=0.002, metadata={"help": (
        "Reward penalty per think_tool token over its target (mean over the reasoning blocks "
        "before tool calls).")})
    think_tool_target: int = field(default=170, metadata={"help": (
        "Tokens of reasoning before a tool call that go unpenalised.")})
    think_reply_coef: float = field(default=0.005, metadata={"help": (
        "Reward penalty per think_reply token over its target (mean over the reasoning blocks "
        "before replies).")})
    think_reply_target: int = field(default=40, metadata={"help": (
        "Tokens of reasoning before a reply that go unpenalised.")})
    save_rollouts: bool = field(default=True, metadata={"help": (
        "Write every rollout's trace to output_dir/rollouts/step-N.jsonl.")})
    use_lora: bool = field(default=False, metadata={"help": (
        "Train LoRA adapters (peft) instead of all weights, merged into the saved model; the KL "
        "reference is then the base with adapters off.")})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha."})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout."})
    lora_target_modules: list[str] | None = field(default=None, metadata={"help": (
        "Modules to adapt (None = all linear layers).")})
    # TRL fields whose defaults differ for hatkit
    output_dir: str | None = field(default="runs/rl", metadata={"help": (
        "Where checkpoint-N folders, rollouts/, rl_manifest.json and final/ go.")})
    beta: float = field(default=0.02, metadata={"help": (
        "KL coefficient to the reference (start) model, per token (TRL's k3 estimator).")})
    num_generations: int | None = field(default=4, metadata={"help": (
        "Group size: rollouts per episode, compared with each other.")})
    per_device_train_batch_size: int = field(default=4, metadata={"help": (
        "Rollouts per device per optimizer micro-step.")})
    max_completion_length: int | None = field(default=3072, metadata={"help": (
        "Completion ids (all after the first prompt, tool output included) beyond this are cut, "
        "their loss with them.")})
    logging_steps: float = field(default=1, metadata={"help": "Log every N steps."})
    bf16: bool = field(default=False, metadata={"help": (
        "bf16 (GPU). On the CPU RL stays fp32 even where SFT and OPD autocast to bf16: "
        "rollouts decode with the policy's fp32 weights, and the trainer's log-probs must match them.")})
    report_to: str | list[str] | None = field(default_factory=lambda: ["tensorboard"], metadata={
        "help": "Metric loggers; TensorBoard files are written with tensorboardX when the "
                "tensorboard package is absent."})

    def __post_init__(self) -> None:
        if self.n_variants < 0 or self.n_questions < 1:
            raise ValueError("n_variants must be >= 0 and n_questions >= 1")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], not {self.fault_rate}")
        if bad := [k for k in self.fault_kinds or [] if k not in FAULT_KINDS]:
            raise ValueError(f"unknown fault_kinds {bad}; choose from {', '.join(FAULT_KINDS)}")
        super().__post_init__()  # type: ignore[no-untyped-call]
