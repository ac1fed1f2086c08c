"""HSA-RL rollouts: real agent-loop episodes in the simulator, turned into GRPO samples.

`Rollouts` is the `rollout_func` handed to TRL's GRPOTrainer. TRL's dataset rows are episode
keys; for the prompts of one generation batch (each repeated num_generations times by TRL's
sampler) it runs every episode through `hatkit.agent` on its training-family harness variant,
with fault injection, sampling from the live policy, and returns per rollout:

- `prompt_ids`: the trace's ids up to the first generated token (system + viewer message +
  generation prompt), `completion_ids`: everything after, as fed and generated, multi-turn
  (tool outputs, hook feedback and follow-up viewer turns included);
- `env_mask`: the trace's training-view loss mask over the completion (1 only on unvetoed
  tokens the model generated; tool output, user, system, markup and runtime text are 0): TRL
  multiplies it into the completion mask, so those tokens get zero loss weight;
- `logprobs`: the sampling log-probs of generated tokens (None elsewhere);
- the reward fields of `RewardSpec` and `hat_metrics` for the logs, among them
  `trained_tokens_cut`: generated tokens `max_completion_length` cut off (never silently).

Ids come from the trace as generated; nothing is re-tokenised. The policy is wrapped fresh in
a `LocalModel` for every rollout phase, so its prefix KV cache never outlives an optimizer
step (a cache computed with old weights would make the samples off-policy).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent import Agent, Trace, write_traces
from ..agent.loop import drive
from ..agent.tool_runner import ThreadToolRunner
from ..harness import Harness
from ..models.base import ChatModel, ModelOutput, ModelRequest, TokenFormat
from ..sim.faults import FaultConfig, FaultInjectingRunner
from ..sim.runner import ask_all
from ..sim.truth import Question
from .rewards import RewardSpec, Scorer, block_lengths


@dataclass(frozen=True)
class EpisodeSpec:
    """One training episode: a question on one harness variant."""

    key: str
    question: Question
    harness: int
    """Index into the rollout's harness list."""

    @property
    def prompt(self) -> str:
        """The dataset row TRL samples: the key, a tab, the first viewer message (for logs)."""
        return f"{self.key}\t{self.question.text}"


@dataclass(frozen=True)
class Sampling:
    """How rollouts sample; TRL scores them with the same temperature."""

    temperature: float
    top_p: float
    max_new_tokens: int
    max_completion_tokens: int | None
    """Completion ids beyond this are cut (and their loss weight with them)."""
    max_batch: int = 8


class _SamplingPolicy:
    """The policy as a ChatModel whose requests use the RL sampling settings, not the
    harness's serving ones (often greedy), so rollouts explore and log-probs match TRL's."""

    def __init__(self, inner: Any, sampling: Sampling) -> None:
        self.inner = inner
        self.sampling = sampling
        self.model_id = str(inner.model_id)
        self.native_tools = bool(inner.native_tools)

    def token_format(self) -> TokenFormat | None:
        fmt: TokenFormat | None = self.inner.token_format()
        return fmt

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        s = self.sampling
        out: list[ModelOutput] = self.inner.generate([dataclasses.replace(
            r, temperature=s.temperature, top_p=s.top_p, logprobs=True,
            max_new_tokens=min(r.max_new_tokens, s.max_new_tokens)) for r in requests])
        return out


def split_trace(trace: Trace, max_completion: int | None = None
                ) -> tuple[list[int], list[int], list[int], list[float | None]]:
    """(prompt_ids, completion_ids, env_mask, logprobs) of one trace, from its training view.

    The prompt ends where the model's first generated token starts; an episode where the model
    never generated (a backend error) keeps one completion token with mask 0."""
    view = trace.training_view()
    logprobs: list[float | None] = []
    for span in trace.spans:
        lps = span.logprobs if span.source == "model" else None
        n = len(span.token_ids or [])
        logprobs.extend(lps if lps is not None and len(lps) == n else [None] * n)
    ids, mask = view.input_ids, view.loss_mask
    first = next((i for i, s in enumerate(trace.spans) if s.source == "model"), None)
    cut = sum(len(s.token_ids or []) for s in trace.spans[:first]) if first is not None else len(ids) - 1
    cut = max(1, min(cut, len(ids) - 1))
    end = len(ids) if max_completion is None else min(len(ids), cut + max_completion)
    return ids[:cut], ids[cut:end], mask[cut:end], logprobs[cut:end]


class Rollouts:
    """TRL `rollout_func`: (prompts, trainer) -> the dict GRPOTrainer expects (see module)."""

    def __init__(self, harnesses: Sequence[Harness], episodes: Sequence[EpisodeSpec],
                 scorer: Scorer, reward: RewardSpec, sampling: Sampling, tokenizer: Any,
                 faults: FaultConfig | None, max_turns: int | None = None,
                 trace_dir: Path | None = None) -> None:
        self.harnesses = [_with_turns(h, max_turns) for h in harnesses]
        self.episodes = {e.key: e for e in episodes}
        self.scorer = scorer
        self.reward = reward
        self.sampling = sampling
        self.tokenizer = tokenizer
        self.faults = faults
        self.trace_dir = trace_dir
        self.rank = 0
        """Process index under accelerate; each process writes its own trace file."""

    def dataset_rows(self) -> list[dict[str, str]]:
        return [{"prompt": e.prompt} for e in self.episodes.values()]

    def spec_of(self, prompt: Any) -> EpisodeSpec:
        key = str(prompt).split("\t", 1)[0]
        if key not in self.episodes:
            raise KeyError(f"rollout prompt {key!r} is not one of this run's episode keys")
        return self.episodes[key]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        from ..models.local import LocalModel

        model = trainer.accelerator.unwrap_model(trainer.model)
        specs = [self.spec_of(p) for p in prompts]
        was_training = bool(model.training)
        local = LocalModel(model, self.tokenizer, model_id="hatkit-rl-policy",
                           max_batch=self.sampling.max_batch)  # fresh: no stale prefix cache
        try:
            self.rank = int(getattr(trainer.accelerator, "process_index", 0))
            traces = self.run(specs, _SamplingPolicy(local, self.sampling),
                              int(trainer.state.global_step))
        finally:
            local.clear_caches()
            model.train(was_training)  # LocalModel put it in eval mode
        return self.to_samples(traces, specs)

    def run(self, specs: Sequence[EpisodeSpec], policy: ChatModel, step: int) -> list[Trace]:
        """Run the episodes together, their model calls batched, with `policy`."""
        runner = FaultInjectingRunner(self.faults or FaultConfig(), ThreadToolRunner())
        episodes, steps = [], []
        for i, spec in enumerate(specs):
            harness = self.harnesses[spec.harness]
            # A group (same key, same step) shares one fault draw, so advantages compare
            # policy choices under the same environment, not fault luck.
            key = f"{spec.key}@{step}"
            agent = Agent(harness, policy, tool_runner=runner.for_episode(key), logprobs=True)
            ep = agent.episode(episode_id=f"{key}#{i}")
            q = spec.question
            ep.trace.meta.update(question_id=q.id, category=q.category, split=q.split,
                                 locale=q.locale, template_id=q.template_id,
                                 product_ids=list(q.product_ids), episode_key=spec.key,
                                 rl_step=step, variant=harness.name)
            episodes.append(ep)
            steps.append(ask_all(ep, [t.text for t in q.turns]))
        drive(policy, steps, labels=[ep.trace.episode_id for ep in episodes])
        traces = [ep.trace for ep in episodes]
        if self.trace_dir is not None:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            rank = f".rank{self.rank}" if self.rank else ""
            write_traces(self.trace_dir / f"step-{step:05d}{rank}.jsonl", traces)
        return traces

    def to_samples(self, traces: Sequence[Trace], specs: Sequence[EpisodeSpec]) -> dict[str, Any]:
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "env_mask",
                                                     "logprobs", "hat_metrics", *RewardSpec.FIELDS)}
        for trace, spec in zip(traces, specs, strict=True):
            p, c, m, lp = split_trace(trace, self.sampling.max_completion_tokens)
            scores = self.scorer(trace, self.harnesses[spec.harness])
            for k, v in self.reward.fields(trace, scores).items():
                out[k].append(v)
            out["prompt_ids"].append(p)
            out["completion_ids"].append(c)
            out["env_mask"].append(m)
            out["logprobs"].append([math.nan if x is None else x for x in lp])
            cut = sum(trace.training_view().loss_mask) - sum(m)
            out["hat_metrics"].append({**_metrics(trace, scores), "trained_tokens_cut": float(cut)})
        return out


def _metrics(trace: Trace, scores: Mapping[str, float]) -> dict[str, float]:
    row = {k: float(v) for k, v in scores.items()}
    for seg in ("think_tool", "think_reply"):
        lengths = block_lengths(trace, seg)
        row[f"{seg}_tokens"] = sum(lengths) / len(lengths) if lengths else 0.0
    row["tool_calls"] = float(len(trace.tool_calls))
    row["faults"] = float(len(trace.events_of("fault_injected")))
    row["fallback"] = float(bool(trace.events_of("fallback")))
    return row


def _with_turns(harness: Harness, max_turns: int | None) -> Harness:
    """The harness with at most `max_turns` model calls per viewer message (an RL compute
    bound; the files, and so the content hash the judge checks, are unchanged)."""
    if max_turns is None or max_turns >= harness.spec.limits.max_turns:
        return harness
    limits = harness.spec.limits.model_copy(update={"max_turns": max_turns})
    return dataclasses.replace(harness, spec=harness.spec.model_copy(update={"limits": limits}))
