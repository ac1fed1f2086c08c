"""The real default model through the agent loop (slow tier)."""

from __future__ import annotations

import pytest

from hatkit.agent import Agent
from hatkit.harness import load_harness
from hatkit.models.local import LocalModel

pytestmark = pytest.mark.slow


def test_default_model_runs_episodes_batched_and_token_exact() -> None:
    model = LocalModel.default()
    agent = Agent(load_harness("live_commerce"), model)
    traces = agent.run_many(["How much are the wireless earbuds?", "Hi Mia!"])
    for t in traces:
        assert t.final_reply
        view = t.training_view(include_vetoed=True)
        assert view.input_ids[: len(agent.prefix_ids or [])] == agent.prefix_ids
        assert sum(view.loss_mask) == sum(len(s.token_ids or []) for s in t.spans if s.source == "model")
    assert model.stats["prefix_misses"] == 1
