"""Time estimates for each pipeline stage, printed before anything starts.

Built from speeds measured on this kind of machine (2 cores, fp32, SmolLM2-135M; DESIGN.md;
SFT under bf16 autocast where the CPU has bf16 matrix instructions):
decoding about 34 tokens/s in a batch of 8 with the harness prefix cached, about 7.6 tokens/s
for one sequence; SFT about 110 tokens/s on the quick data's ~1,500-token rows (model loading
and saving included); an agent evaluation item of a trained model about 7 s (up to five calls,
batched; each call prefills only what is new since the row's last call). The untrained base model
is cheaper (3 s an item): its loops end at the third identical call.
Once stages finish, each remaining estimate is scaled by how far the finished stages of its
kind (data, train, eval) were off (`time_left`), so the printed ETA tightens as the run goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import PipelineConfig
from .stages import Stage

TRAIN_TOKENS_PER_S = 110.0  # quick SFT (LM head at trained positions): 96 rows, 141,600 tokens in
# 1,208 s on an idle machine (117/s), load and checkpoint saves around it
TRAIN_TOKENS_PER_S_CPU_BF16 = 185.0  # the same under bf16 autocast on a CPU with AMX: 96 HSA rows,
# 143,400 tokens in 733 s (196/s) where fp32 took 1,299 s on the same rows
BATCH_DECODE_TOKENS_PER_S = 34.0
SINGLE_DECODE_TOKENS_PER_S = 7.6
ORACLE_EPISODES_PER_S = 40.0  # data building: oracle episodes incl. tokenising the traces
MODEL_LOAD_S = 3.0
EVAL_S_PER_ITEM = 5.0  # an item of a trained quick model, suites decoding batches of 16 with the
# row cache: make run at 4bf8c3c, Fixed-SFT 362 s and HSA-SFT 617 s for 96 items each (the second
# while other jobs shared the cores); 7.0 s was measured in batches of 8 before
EVAL_SPEED = {"bf16": 244 / 154, "int8": 271 / 123, "int8h": 244 / 167, "int8w": 9.00 / 6.69}  # over
# fp32, the same 40 live_qa cases of a trained quick checkpoint on 2 AVX512-BF16 cores
# (models.precision); int8w: 300 cases of a cpu-sitting Fixed-SFT, one thread each, side by side
SFT_ROW_TOKENS = 1550  # mean row of the quick data (fixed ~1,450, hsa ~1,650 tokens)


@dataclass(frozen=True)
class Estimate:
    stage: str
    seconds: float
    basis: str


def _get(config: Any, name: str, default: float) -> float:
    value = getattr(config, name, None)
    return float(value) if isinstance(value, int | float) and value else default


def _train_seconds(stage_name: str, cfg: PipelineConfig) -> tuple[float, str]:
    from ..train import load_config
    from ..train.runtime import cpu_autocast

    config = load_config(stage_name, None, cfg.train_profile, dict(cfg.train.get(stage_name, {})))  # type: ignore[call-overload]
    steps = _get(config, "max_steps", 10)
    batch = _get(config, "per_device_train_batch_size", 1) * _get(config, "gradient_accumulation_steps", 1)
    if stage_name == "sft":
        # max_length is sized from the data (not known yet) and only bounds a row
        tokens = steps * batch * min(_get(config, "max_length", SFT_ROW_TOKENS), SFT_ROW_TOKENS)
        per = int(tokens / steps / batch)
        cpu_bf16 = cpu_autocast(config)
        speed = TRAIN_TOKENS_PER_S_CPU_BF16 if cpu_bf16 else TRAIN_TOKENS_PER_S
        return tokens / speed, (f"{int(steps)} steps x {int(batch)} x ~{per} tokens"
                                + (", bf16 autocast" if cpu_bf16 else ""))
    new = _get(config, "max_new_tokens", _get(config, "max_completion_length", 64))
    turns = _get(config, "max_turns", 1)
    samples = steps * batch  # GRPO's batch counts completions, each group's generations included
    speed = BATCH_DECODE_TOKENS_PER_S if samples > 1 else SINGLE_DECODE_TOKENS_PER_S
    decode = samples * new * turns / speed
    prompt = 1600 if stage_name == "rl" else 200  # RL prompts carry the rendered harness
    passes = 2 if stage_name == "rl" else 1  # RL also scores every sample under the reference
    learn = passes * samples * (prompt + new * turns) / TRAIN_TOKENS_PER_S
    return decode + learn, f"{int(steps)} steps, {int(samples)} samples of <= {int(new)} new tokens"


def estimate(stages: list[Stage], cfg: PipelineConfig) -> list[Estimate]:
    """A rough duration for each stage of the plan, with the numbers it rests on."""
    from ..models.precision import resolve_precision

    precision = resolve_precision(cfg.eval_precision or "fp32")
    per_item = EVAL_S_PER_ITEM / EVAL_SPEED.get(precision, 1.0)
    weights = f", {precision} weights" if precision != "fp32" else ""
    out = []
    for stage in stages:
        if stage.kind == "data":
            n = 2 * (cfg.data.train_episodes + cfg.data.dev_episodes)
            out.append(Estimate(stage.name, 20 + n / ORACLE_EPISODES_PER_S, f"{n} oracle episodes"))
        elif stage.kind == "train" and stage.row is not None and stage.row.stage is not None:
            seconds, basis = _train_seconds(stage.row.stage, cfg)
            out.append(Estimate(stage.name, MODEL_LOAD_S + seconds, basis))
        elif stage.kind == "eval" and stage.row is not None:
            sizes = cfg.suite_sizes()
            items = sum(n for s, n in sizes.items()
                        if s in cfg.suites_for(stage.row.key) and s not in ("lengths", "latency"))
            seconds = MODEL_LOAD_S + 8 + items * per_item
            out.append(Estimate(stage.name, seconds, f"{items} items{weights}"))
        elif stage.kind == "evolve":
            # per model: the test set before and after, and per round the dev and regression sets
            items = 2 * (2 * cfg.evolution_test_n + cfg.evolution_rounds * 2 * cfg.evolution_dev_n)
            out.append(Estimate(stage.name, 2 * MODEL_LOAD_S + items * per_item,
                                f"2 models x {cfg.evolution_rounds} rounds, {items} items"))
        else:
            out.append(Estimate(stage.name, 5, "tables and plots"))
    return out


def time_left(estimates: list[Estimate], actual: Mapping[str, float], kinds: Mapping[str, str]) -> float:
    """Seconds the unfinished stages should still take: each estimate scaled by how long the
    finished stages of its kind (data, train, eval, ...) took against theirs. A kind with no
    finished stage keeps its estimate: one factor for all said "38 min left" of an 85-minute
    run after an 11-second data stage that was estimated at 24 s."""
    def factor(kind: str) -> float:
        done = [e for e in estimates if e.stage in actual and kinds.get(e.stage) == kind]
        est = sum(e.seconds for e in done)
        return sum(actual[e.stage] for e in done) / est if est > 0 else 1.0

    return sum(e.seconds * factor(kinds.get(e.stage, "")) for e in estimates if e.stage not in actual)
