"""lengths: how long the model reasons before tool calls and before replies (live_qa traces).

Counted per model call, the unit the published numbers use (290.6 -> 171.2 tokens for
tool-call reasoning, 93.6 -> 37.0 for reply reasoning):
- `think_tool`: reasoning tokens of each model call that made a tool call;
- `think_reply`: reasoning tokens of each model call that produced the reply.
A call without reasoning counts 0, so a model that stops thinking shows it. Tokens are the
trace's own token ids (local backends); traces without ids (HTTP or scripted backends) count
whitespace-separated words instead, and `details.unit` says which. Vetoed generations count
too: the model produced them. Metrics: `think_tool_mean/p50/p95`, `think_reply_mean/p50/p95`
and a bootstrap 95% interval of each mean (`think_tool_mean_lo/hi`, `think_reply_mean_lo/hi`);
details keep the raw per-call lists and per-episode totals (the report plots them).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..agent.trace import Trace
from . import live_qa
from .context import SuiteContext
from .result import SuiteResult
from .stats import mean_interval, summary

NAME = "lengths"


def _size(text: str, ids: list[int] | None) -> int:
    return len(ids) if ids is not None else len(text.split())


def call_lengths(trace: Trace) -> tuple[list[int], list[int]]:
    """(think_tool per tool-calling model call, think_reply per replying model call)."""
    calls: dict[int, dict[str, int]] = {}
    for s in trace.spans:
        if s.source != "model":
            continue
        seg = calls.setdefault(s.turn, {})
        seg[s.segment] = seg.get(s.segment, 0) + _size(s.text, s.token_ids)
    tool, reply = [], []
    for seg in calls.values():
        if "tool_call" in seg:
            tool.append(seg.get("think_tool", 0))
        elif "reply" in seg or "think_reply" in seg:
            reply.append(seg.get("think_reply", 0))
    return tool, reply


def measure(traces: Sequence[Trace]) -> tuple[dict[str, float], dict[str, object]]:
    tool_all: list[int] = []
    reply_all: list[int] = []
    per_episode = []
    for t in traces:
        tool, reply = call_lengths(t)
        tool_all += tool
        reply_all += reply
        per_episode.append({"episode_id": t.episode_id, "think_tool": sum(tool), "think_reply": sum(reply),
                            "tool_calls": len(tool), "replies": len(reply)})
    metrics = {**summary("think_tool", tool_all), **summary("think_reply", reply_all)}
    for name, values in (("think_tool", tool_all), ("think_reply", reply_all)):
        _, metrics[f"{name}_mean_lo"], metrics[f"{name}_mean_hi"] = mean_interval(values)
    unit = "tokens" if traces and all(t.has_tokens() for t in traces) else "words"
    details: dict[str, object] = {"unit": unit, "think_tool": tool_all, "think_reply": reply_all,
                                  "per_episode": per_episode}
    return metrics, details


def run(ctx: SuiteContext) -> SuiteResult:
    return live_qa.from_live_qa(NAME, ctx, measure)
