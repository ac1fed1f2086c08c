"""HSA-RL set-up: the training-family harness variants, the episode plan, faults, the reward
spec, the episodes' length plan and the episode manifest that stands in for the stage's
dataset in its checkpoint."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..domain import Domain, domain_of
from ..harness import Harness, load_harness, resolve_harness_path
from ..models.base import ModelOutput, ModelRequest, TokenFormat
from .length_plan import PromptPlan
from .rewards import LengthPenalty, RewardSpec
from .rl_config import HatRLConfig
from .rl_rollout import EpisodeSpec, Rollouts


def domain_for(config: HatRLConfig) -> Domain:
    """The domain of the run: the one the base harness names, else `config.domain`."""
    return domain_of(load_harness(config.harness), config.domain)


def training_harnesses(config: HatRLConfig, folder: Path) -> list[Harness]:
    """The base harness (n_variants=0) or n_variants training-family variants, made once in
    `folder` and reloaded on resume (same seeds -> byte-identical folders)."""
    from ..sim.augment import variant_folder, variant_name

    base = resolve_harness_path(config.harness)
    if config.n_variants == 0:
        return [load_harness(base)]
    name = str(load_harness(base).name)
    out = []
    for i in range(config.n_variants):
        seed = config.seed * 1000 + i
        out.append(variant_folder(base, folder / variant_name(name, "train", seed), family="train",
                                  seed=seed, hsa=domain_for(config).hsa))
    return out


def plan_episodes(config: HatRLConfig, harnesses: list[Harness]) -> list[EpisodeSpec]:
    """Train-split questions, dealt round-robin over the harnesses."""
    domain = domain_for(config)
    try:
        questions = domain.questions(harnesses[0].rules, n=config.n_questions, seed=config.seed,
                                     split="train", locale=config.locale, categories=config.categories)
    except KeyError as exc:
        raise ValueError(f"harness '{config.harness}' has no rule {exc} that the {domain.name} "
                         "question generator needs; add it or restrict `categories`") from None
    return [EpisodeSpec(f"ep{i:05d}", q, i % len(harnesses)) for i, q in enumerate(questions)]


def fault_config(config: HatRLConfig) -> Any:
    from ..sim.faults import FaultConfig

    if config.fault_rate <= 0:
        return None
    kinds = config.fault_kinds or ["timeout", "malformed", "permission_denied"]
    return FaultConfig(rates={k: config.fault_rate / len(kinds) for k in kinds},  # type: ignore[misc]
                       seed=config.seed, max_per_episode=config.max_faults_per_episode)


def reward_spec(config: HatRLConfig) -> RewardSpec:
    return RewardSpec(LengthPenalty("think_tool", config.think_tool_coef, config.think_tool_target),
                      LengthPenalty("think_reply", config.think_reply_coef, config.think_reply_target))


class _RenderOnly:
    """A ChatModel that only renders: the agent's first request of an episode is the rollout's
    prompt (system + first viewer message + generation prompt), exactly as fed."""

    model_id = "length-plan"

    def __init__(self, fmt: Any) -> None:
        self.fmt = fmt
        self.native_tools = bool(fmt.native_tools)

    def token_format(self) -> TokenFormat | None:
        fmt: TokenFormat = self.fmt
        return fmt

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        raise RuntimeError("the length plan renders prompts only")


def length_plan(config: HatRLConfig, rollouts: Rollouts, context: int | None) -> PromptPlan:
    """Each episode's rollout prompt against `context`, and the most tokens the policy may
    generate in it (viewer turns x model calls x new tokens) against max_completion_length."""
    from ..agent import Agent
    from ..models.chat_format import ChatTemplateFormat

    template = str(getattr(rollouts.tokenizer, "chat_template", "") or "")
    model = _RenderOnly(ChatTemplateFormat(rollouts.tokenizer, "tools" in template))  # as LocalModel
    agents = [Agent(h, model) for h in rollouts.harnesses]
    plan = PromptPlan("rl", config.max_completion_length, context)
    for spec in rollouts.episodes.values():
        agent = agents[spec.harness]
        step = agent.episode().ask(spec.question.text)
        prompt = next(step).prompt_ids or []
        step.close()
        limits = agent.harness.spec
        calls = limits.limits.max_turns * min(config.max_new_tokens, limits.model.max_new_tokens)
        plan.add(spec.question.category, len(prompt), len(spec.question.turns) * calls)
    return plan


def write_manifest(out: Path, config: HatRLConfig, rollouts: Rollouts, judge_hash: str) -> Path:
    """output_dir/rl_manifest.json: what the episodes were (the RL stage's "data"), written
    atomically."""
    manifest = {"harness": config.harness, "family": "train", "seed": config.seed,
                "variants": [{"name": h.name, "hash": h.content_hash} for h in rollouts.harnesses],
                "episodes": [{"key": e.key, "question_id": e.question.id, "category": e.question.category,
                              "harness_hash": rollouts.harnesses[e.harness].content_hash}
                             for e in rollouts.episodes.values()],
                "faults": rollouts.faults.model_dump() if rollouts.faults else None,
                "judge_hash": judge_hash}
    path = out / "rl_manifest.json"
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
