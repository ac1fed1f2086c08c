"""Show traces to people (rich). Every piece of viewer, model and tool text is wrapped in
`Text`, so markup inside it is shown, never interpreted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from .trace import Span, Trace


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def span_line(span: Span) -> Text | None:
    """One line for a tool call, a tool result or a runtime note; None for other spans."""
    if span.segment == "tool_call":
        return Text.assemble(("  → ", "cyan"), (_short(span.text.replace("<tool_call>", "")
                                                        .replace("</tool_call>", "")), "cyan"))
    if span.segment == "tool_output":
        style = "red" if span.source == "runtime" else "green"
        return Text.assemble(("  ← ", style), (_short(span.text), style))
    if span.segment == "user" and span.source in ("hook", "runtime"):
        return Text.assemble(("  ! ", "yellow"), (_short(span.text), "yellow"))
    return None


def trace_lines(spans: Sequence[Span]) -> list[Text]:
    return [line for s in spans if (line := span_line(s)) is not None]


def trace_summary(trace: Trace) -> RenderableType:
    """Reply, tool calls, notable events and timings of one episode."""
    t = trace.timings
    events = [e for e in trace.events if e.kind != "repair"]
    parts: list[RenderableType] = [*trace_lines(trace.spans)]
    for e in events:
        parts.append(Text(f"  • {e.kind}: {_short(json.dumps(e.data, ensure_ascii=False), 140)}",
                          style="magenta"))
    parts.append(Text.assemble(("  reply: ", "bold"), trace.final_reply))
    repairs = len(trace.events_of("repair"))
    parts.append(Text(
        f"  {t.model_calls} model call(s), {len(trace.tool_calls)} tool call(s), {repairs} repair(s); "
        f"{t.total_s:.2f} s total, model {t.model_s:.2f} s, tools {t.tools_s * 1000:.1f} ms, "
        f"first token {t.ttft_s or 0:.2f} s", style="dim"))
    return Group(*parts)
