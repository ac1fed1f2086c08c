"""HSA-RL rollouts: GRPO samples come straight from the trace's training view, tool-output
tokens get zero loss weight (in our samples and in TRL's loss), and the reward judge scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rl_helpers import (
    LowercaseScore,
    ToolThenReply,
    one_thread,  # noqa: F401 - autouse fixture: one torch thread
    tiny_config,
)

from hatkit.agent.trace import SEGMENT_IDS
from hatkit.domains.live_commerce.questions import generate_questions
from hatkit.harness import Harness, load_harness
from hatkit.train.rewards import JudgeScorer
from hatkit.train.rl import build_trainer, reward_spec
from hatkit.train.rl_rollout import EpisodeSpec, Rollouts, Sampling, split_trace
from hatkit.train.runtime import load_causal_lm
from tiny import tiny_tokenizer


def rollouts_for(harness: Harness, scorer: Any, n: int = 2) -> Rollouts:
    qs = generate_questions({}, n=n, seed=0, split="train", categories=["chit_chat"])
    specs = [EpisodeSpec(f"ep{i}", q, 0) for i, q in enumerate(qs)]
    return Rollouts([harness], specs, scorer, reward_spec(tiny_config_defaults()),
                    Sampling(1.0, 1.0, 64, None), tiny_tokenizer(), faults=None)


def tiny_config_defaults() -> Any:
    from hatkit.train.rl import HatRLConfig

    return HatRLConfig(output_dir=None, report_to=[], use_cpu=True)


def test_samples_follow_the_training_view(minimal_harness: Path) -> None:
    ro = rollouts_for(load_harness(minimal_harness), LowercaseScore())
    specs = list(ro.episodes.values())
    traces = ro.run(specs, ToolThenReply(), step=0)
    samples = ro.to_samples(traces, specs)
    for i, trace in enumerate(traces):
        view = trace.training_view()
        p, c, m = samples["prompt_ids"][i], samples["completion_ids"][i], samples["env_mask"][i]
        assert p + c == view.input_ids  # nothing re-tokenised, nothing dropped
        assert m == view.loss_mask[len(p):] and sum(view.loss_mask[:len(p)]) == 0
        assert m[0] == 1  # the prompt ends where the model's first token starts
        segs = view.segment_ids[len(p):]
        tool = [k for k, s in enumerate(segs) if s == SEGMENT_IDS["tool_output"]]
        assert len(tool) > 20 and all(m[k] == 0 for k in tool)  # tool output: zero weight
        assert any(s == SEGMENT_IDS["think_reply"] for s in segs)
        assert samples["hat_think_tool_excess"][i] == 0.0  # short reasoning: no penalty
        assert trace.meta["episode_key"] == specs[i].key


def test_completion_cap_cuts_ids_and_mask(minimal_harness: Path) -> None:
    ro = rollouts_for(load_harness(minimal_harness), LowercaseScore(), n=1)
    trace = ro.run(list(ro.episodes.values()), ToolThenReply(), step=0)[0]
    p, c, m, lp = split_trace(trace, max_completion=10)
    assert len(c) == len(m) == len(lp) == 10 and p == trace.training_view().input_ids[:len(p)]


def test_completion_cap_cuts_are_counted_not_silent(minimal_harness: Path) -> None:
    import dataclasses

    ro = rollouts_for(load_harness(minimal_harness), LowercaseScore(), n=1)
    specs = list(ro.episodes.values())
    traces = ro.run(specs, ToolThenReply(), step=0)
    assert ro.to_samples(traces, specs)["hat_metrics"][0]["trained_tokens_cut"] == 0.0
    ro.sampling = dataclasses.replace(ro.sampling, max_completion_tokens=10)
    samples = ro.to_samples(traces, specs)
    trained = sum(traces[0].training_view().loss_mask)
    cut = samples["hat_metrics"][0]["trained_tokens_cut"]
    assert cut == trained - sum(samples["env_mask"][0]) and cut > 0


def test_reward_judge_scores_real_traces(lc: Harness) -> None:
    scorer = JudgeScorer(accuracy_weight=0.3, effectiveness_weight=0.7)
    assert scorer.judge.role == "reward"
    ro = rollouts_for(lc, scorer, n=1)
    specs = list(ro.episodes.values())
    traces = ro.run(specs, ToolThenReply(), step=0)
    scores = scorer(traces[0], lc)
    assert scores["score"] == pytest.approx(0.3 * scores["accuracy"] + 0.7 * scores["effectiveness"])
    assert ro.to_samples(traces, specs)["hat_score"] == [scores["score"]]


def test_trl_loss_mask_is_the_env_mask(tmp_path: Path, minimal_harness: Path) -> None:
    """Inside GRPOTrainer's loss, the tokens weighted are exactly our env_mask's."""
    config = tiny_config(tmp_path, minimal_harness, max_steps=1, num_generations=2,
                         per_device_train_batch_size=2, max_turns=3)
    model, tok = load_causal_lm(Path(config.model))
    trainer, ro = build_trainer(config, model, tok, scorer=LowercaseScore())
    produced: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []

    def scripted(prompts: list[Any], tr: Any) -> dict[str, Any]:
        specs = [ro.spec_of(p) for p in prompts]
        produced.append(ro.to_samples(ro.run(specs, ToolThenReply(), step=0), specs))
        return produced[-1]

    real_loss = trainer._compute_loss

    def spy(model: Any, inputs: dict[str, Any]) -> Any:
        seen.append(inputs)
        return real_loss(model, inputs)

    trainer.rollout_func = scripted
    trainer._compute_loss = spy
    trainer.train()
    samples, inputs = produced[0], seen[0]
    weights = (inputs["completion_mask"] * inputs["tool_mask"]).tolist()
    for row, ids in enumerate(inputs["completion_ids"].tolist()):
        k = samples["completion_ids"].index(ids[:len(samples["completion_ids"][0])])
        n = len(samples["completion_ids"][k])
        assert weights[row][:n] == samples["env_mask"][k] and sum(weights[row][n:]) == 0
        assert 0 < sum(weights[row]) < n  # some tokens trained, tool output not


class _State:
    global_step = 3


class _Accelerator:
    @staticmethod
    def unwrap_model(model: Any) -> Any:
        return model


def test_live_policy_rollouts_are_on_policy_and_uncached(tmp_path: Path, minimal_harness: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Sampled log-probs equal a plain forward pass over prompt + completion (so the ids are
    the generated ones, in their context); each rollout phase gets a fresh, emptied prefix
    cache; the model is back in training mode afterwards."""
    import torch

    from hatkit.models import local

    made: list[Any] = []

    class Recording(local.LocalModel):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(local, "LocalModel", Recording)
    config = tiny_config(tmp_path, minimal_harness, max_turns=2)
    model, tok = load_causal_lm(Path(config.model))
    _, ro = build_trainer(config, model, tok, scorer=LowercaseScore())
    trainer = type("T", (), {"model": model.train(), "state": _State(), "accelerator": _Accelerator()})()
    prompts = [s.prompt for s in list(ro.episodes.values())[:2]]
    for _ in range(2):
        out = ro(prompts, trainer)
        assert model.training
    assert len(made) == 2 and made[0] is not made[1] and all(not m._cache for m in made)
    assert made[1].stats["prefix_misses"] >= 1  # the second phase recomputed its prefix
    for p, c, m, lp in zip(out["prompt_ids"], out["completion_ids"], out["env_mask"],
                           out["logprobs"], strict=True):
        with torch.no_grad():
            logits = model(torch.tensor([p + c])).logits[0, len(p) - 1:-1].float()
        ref = torch.log_softmax(logits, -1).gather(-1, torch.tensor(c)[:, None])[:, 0]
        on = [k for k, w in enumerate(m) if w]
        assert on and torch.allclose(torch.tensor([lp[k] for k in on]), ref[on], atol=1e-3)
