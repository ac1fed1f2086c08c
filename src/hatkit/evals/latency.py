"""latency: end-to-end wall time of the agent loop, per viewer turn and per episode.

Read from the live_qa traces: `meta.turn_s` holds each viewer turn's wall time from the
message arriving to the final reply (model calls, tools, hooks and, since evaluation decodes
`batch_size` episodes together, the wait for the rest of the batch: this is latency under
that batched load, not of a lone request). Traces written elsewhere without `turn_s` fall back
to `timings.total_s` split evenly over their viewer turns. Metrics: `turn_p50_s`, `turn_p95_s`,
`episode_p50_s`, `episode_p95_s`; details add means, the model's share of the time, and the
raw per-turn and per-episode lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..agent.trace import Trace
from . import live_qa
from .context import SuiteContext
from .result import SuiteResult
from .stats import percentile

NAME = "latency"


def turn_times(trace: Trace) -> list[float]:
    """Wall seconds of each viewer turn of the episode."""
    recorded = trace.meta.get("turn_s")
    if isinstance(recorded, list) and recorded:
        return [float(x) for x in recorded]
    n = sum(1 for s in trace.spans if s.segment == "user" and s.source == "viewer") or 1
    return [trace.timings.total_s / n] * n


def measure(traces: Sequence[Trace]) -> tuple[dict[str, float], dict[str, object]]:
    turns: list[float] = []
    episodes: list[float] = []
    model_s = 0.0
    for t in traces:
        ts = turn_times(t)
        turns += ts
        episodes.append(sum(ts))
        model_s += t.timings.model_s
    metrics = {"turn_p50_s": percentile(turns, 50), "turn_p95_s": percentile(turns, 95),
               "episode_p50_s": percentile(episodes, 50), "episode_p95_s": percentile(episodes, 95)}
    total = sum(episodes)
    details: dict[str, object] = {
        "turn_mean_s": total / len(turns) if turns else 0.0, "turn_s": turns, "episode_s": episodes,
        "model_share": model_s / total if total else 0.0,
        "model_calls_mean": sum(t.timings.model_calls for t in traces) / max(1, len(traces))}
    return metrics, details


def run(ctx: SuiteContext) -> SuiteResult:
    return live_qa.from_live_qa(NAME, ctx, measure, batch_size=ctx.settings.batch_size)
