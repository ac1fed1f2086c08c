"""The latency bench's held-out agent replies: which prompt of a greedy episode it measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hatkit.agent.trace import Event, Span, Trace
from hatkit.serve.latency import agent_reply_requests


def _trace(spans: list[tuple[str, list[int], int, str]], error: bool = False) -> Trace:
    t = Trace("h", "0", "m", spans=[Span(seg, "", ids, turn=turn, source=src)
                                    for seg, ids, turn, src in spans])
    if error:
        t.events.append(Event("model_error", 0))
    return t


CALLED = [("system", [1, 2, 3], 0, "harness"), ("user", [4, 5], 0, "viewer"),
          ("think_tool", [6], 0, "model"), ("tool_call", [7, 8], 0, "model"),
          ("tool_output", [9, 10, 11], 1, "tool"), ("think_reply", [12], 1, "model"),
          ("reply", [13, 14], 1, "model")]
DIRECT = [("system", [1, 2, 3], 0, "harness"), ("user", [4], 0, "viewer"), ("reply", [5, 6], 0, "model")]


class FakeAgent:
    def __init__(self, traces: list[Trace]) -> None:
        self.prefix_ids = [1, 2]
        self.traces = traces
        self.asked: list[str] = []

    def run_many(self, messages: Sequence[str]) -> list[Trace]:
        self.asked = list(messages)
        return self.traces[: len(messages)]


def test_the_prompt_is_the_conversation_up_to_the_reply_after_the_tool_output() -> None:
    agent: Any = FakeAgent([_trace(CALLED)])
    (req,) = agent_reply_requests(agent, ["q"], n=4, max_new=32)
    assert list(req.prompt_ids or []) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert req.prefix_len == 2 and req.max_new_tokens == 32


def test_replies_without_a_tool_result_and_failed_episodes_are_skipped_and_n_caps() -> None:
    traces = [_trace(DIRECT), _trace(CALLED, error=True), _trace(CALLED), _trace(CALLED), _trace(CALLED)]
    agent: Any = FakeAgent(traces)
    reqs = agent_reply_requests(agent, ["a", "b", "c", "d", "e"], n=2, max_new=8)
    assert len(reqs) == 2 and agent.asked == ["a", "b", "c", "d", "e"]
    assert all(len(r.prompt_ids or []) == 11 for r in reqs)


def test_text_only_traces_give_no_prompt() -> None:
    spans = [("user", None, 0, "viewer"), ("tool_output", [1], 1, "tool"), ("reply", [2], 1, "model")]
    agent: Any = FakeAgent([_trace(spans)])  # type: ignore[arg-type]
    assert agent_reply_requests(agent, ["q"], n=1, max_new=8) == []
