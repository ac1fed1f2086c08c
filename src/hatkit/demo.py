"""`hatkit agent demo`: a domain's sample user messages
through the real agent loop on the default model, with replies, tool calls and latency."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .agent import Agent, write_traces
from .agent.render import trace_summary
from .domain import Domain, domain_of, get_domain
from .harness import load_harness


def run_demo(harness_ref: str | Path | None = None, questions: list[str] | None = None,
             model_spec: str = "local", locale: str | None = None, show_prompt: bool = False,
             runs_dir: Path | None = Path("runs"), console: Console | None = None,
             domain: Domain | str | None = None) -> list[object]:
    """`questions` (default: the domain's sample messages) through the agent on `harness_ref`
    (default: the domain's harness)."""
    from .models.select import load_model

    console = console or Console()
    harness = load_harness(harness_ref) if harness_ref else get_domain(domain).harness()
    dom = domain_of(harness, domain)
    started = time.perf_counter()
    with console.status("loading the model (the first run converts the default model once)..."):
        model = load_model(model_spec)
    agent = Agent(harness, model, locale=locale)
    console.print(Text(f"harness {harness.name} {harness.short_hash} ({agent.locale}), model "
                       f"{model.model_id} loaded in {time.perf_counter() - started:.1f} s; "
                       f"system prompt {len(agent.system.content)} chars"
                       + (f", {len(agent.prefix_ids)} tokens" if agent.prefix_ids else "")))
    if show_prompt:
        console.print(Panel(Text(agent.system.content), title="what the model sees", expand=False))
    qs = questions or list(dom.sample_messages)
    t0 = time.perf_counter()
    with console.status(f"answering {len(qs)} viewer questions (episodes batched together)..."):
        traces = agent.run_many(qs)
    wall = time.perf_counter() - t0
    for q, trace in zip(qs, traces, strict=True):
        console.print(Text.assemble(("viewer: ", "bold"), q))
        console.print(trace_summary(trace))
    table = Table("#", "model calls", "tool calls", "latency s", "first token s", "events",
                  title="per question (episodes ran concurrently, so latencies overlap)")
    for i, t in enumerate(traces, 1):
        kinds = sorted({e.kind for e in t.events})
        table.add_row(str(i), str(t.timings.model_calls), str(len(t.tool_calls)),
                      f"{t.timings.total_s:.1f}", f"{t.timings.ttft_s or 0:.1f}", ", ".join(kinds))
    console.print(table)
    console.print(f"{len(qs)} questions in {wall:.1f} s ({len(qs) / wall:.2f} episodes/s)")
    if runs_dir is not None:
        out = runs_dir / f"demo-{datetime.now():%Y%m%d-%H%M%S}" / "traces.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        write_traces(out, traces)
        console.print(Text(f"traces written to {out}"))
    console.print("[dim]The default model has not been trained on this harness yet, so it rarely "
                  "calls tools and its claims are often blocked by the hooks; training fixes that.[/]")
    return list(traces)
