"""HSA-RL rewards: each length penalty acts on its own segment only, and only on the excess."""

from __future__ import annotations

import pytest

from hatkit.agent.trace import Span, Trace
from hatkit.train.rewards import LengthPenalty, RewardSpec, block_lengths, field_reward, mean_excess


def trace_with(think_tool: list[int], think_reply: list[int]) -> Trace:
    """A trace whose k-th tool-call reasoning block has think_tool[k] tokens, and so on."""
    t = Trace("h", "hash", "m")
    t.spans.append(Span("system", "sys", [1, 2, 3], source="harness"))
    t.spans.append(Span("user", "q", [4, 5], source="viewer"))
    turn = 0
    for n in think_tool:
        t.spans.append(Span("think_tool", "x" * n, [7] * n, turn=turn, source="model"))
        t.spans.append(Span("tool_call", "call", [8, 8], turn=turn, source="model"))
        t.spans.append(Span("tool_output", "out" * 50, [9] * 150, turn=turn + 1, source="tool"))
        turn += 1
    for n in think_reply:
        t.spans.append(Span("think_reply", "y" * n, [6] * n, turn=turn, source="model"))
        t.spans.append(Span("reply", "hi", [5, 5], turn=turn, source="model"))
        turn += 1
    return t


SPEC = RewardSpec(LengthPenalty("think_tool", 0.01, 100), LengthPenalty("think_reply", 0.02, 20))


def test_only_long_think_reply_is_penalised() -> None:
    t = trace_with(think_tool=[80, 60], think_reply=[50])
    assert SPEC.think_tool(t) == 0.0
    assert SPEC.think_reply(t) == pytest.approx(0.02 * 30)
    assert SPEC.total(t, {"score": 1.0}) == pytest.approx(1.0 - 0.6)


def test_only_long_think_tool_is_penalised() -> None:
    t = trace_with(think_tool=[300, 100], think_reply=[10])
    assert SPEC.think_reply(t) == 0.0
    assert SPEC.think_tool(t) == pytest.approx(0.01 * (200 + 0) / 2)  # mean excess per block
    fields = SPEC.fields(t, {"score": 0.5})
    assert fields == {"hat_score": 0.5, "hat_think_tool_excess": -100.0, "hat_think_reply_excess": 0.0}


def test_tool_output_and_runtime_text_do_not_count() -> None:
    t = trace_with(think_tool=[10], think_reply=[])
    t.spans.append(Span("think_reply", "z" * 500, [6] * 500, turn=5, source="runtime"))
    assert block_lengths(t, "think_tool") == [10]
    assert block_lengths(t, "think_reply") == []
    assert SPEC.think_reply(t) == 0.0


def test_excess_only_and_text_fallback() -> None:
    assert mean_excess([], 10) == 0.0
    assert mean_excess([5, 10, 16], 10) == pytest.approx(2.0)
    t = Trace("h", "hash", "m", spans=[Span("think_reply", "a b c d", None, source="model")])
    assert block_lengths(t, "think_reply") == [4]  # word count without token ids


def test_weights_and_reward_functions() -> None:
    assert SPEC.weights == [1.0, 0.01, 0.02]
    funcs = SPEC.reward_funcs()
    assert [f.__name__ for f in funcs] == ["judge", "think_tool_length", "think_reply_length"]
    logged: list[tuple[str, float]] = []
    out = funcs[0]([], [], hat_score=[0.25, 0.75], hat_metrics=[{"accuracy": 1.0}, {"accuracy": 0.0}],
                   log_metric=lambda k, v: logged.append((k, v)))
    assert out == [0.25, 0.75] and logged == [("hat/accuracy", 0.5)]
    with pytest.raises(KeyError, match="hat_x"):
        field_reward("hat_x", "x")([], [])


def test_bad_penalties_are_refused() -> None:
    with pytest.raises(ValueError, match="think_tool"):
        LengthPenalty("reply", 0.1, 10)
    with pytest.raises(ValueError, match=">= 0"):
        LengthPenalty("think_tool", -0.1, 10)
