"""`hatkit demo | ask | chat`: the agent loop on one harness and model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ..agent import Agent, write_traces
from ..agent.loop import generate_safely
from ..agent.render import trace_lines, trace_summary
from ..models.default_model import DefaultModelError
from ..models.select import load_model
from ._common import (
    DomainOpt,
    HarnessOpt,
    LocaleOpt,
    ModelOpt,
    _domain,
    _fail,
    _harness_for,
    _say,
    app,
    console,
    err,
)


def _agent(harness: str | None, model: str, locale: str | None, domain: str | None = None) -> Agent:
    h = _harness_for(harness, domain)
    try:
        with err.status("loading the model..."):
            backend = load_model(model)
        return Agent(h, backend, locale=locale)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


@app.command("demo")
def demo(
    harness: HarnessOpt = None,
    domain: DomainOpt = None,
    question: Annotated[list[str] | None, typer.Option(
        "--question", "-q", help="A user message (repeat for several); default: the domain's samples.",
    )] = None,
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    show_prompt: Annotated[bool, typer.Option(help="Print the rendered system prompt.")] = False,
) -> None:
    """Quick start: viewer questions through the agent loop, with tool calls and latency."""
    from ..demo import run_demo

    h = _harness_for(harness, domain)
    try:
        run_demo(h.root, question, model, locale, show_prompt, console=console, domain=_domain(domain, h))
    except (DefaultModelError, ValueError) as exc:
        raise _fail(str(exc)) from None


@app.command("ask")
def ask(
    question: Annotated[str, typer.Argument(help="The viewer message.")],
    harness: HarnessOpt = None,
    domain: DomainOpt = None,
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    trace: Annotated[Path | None, typer.Option(help="Append the trace to this JSONL file.")] = None,
) -> None:
    """Answer one viewer message; print the reply and a summary of the trace."""
    agent = _agent(harness, model, locale, domain)
    result = agent.run(question)
    console.print(trace_summary(result))
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        write_traces(trace, [result])
        _say(f"trace appended to {trace}")


@app.command("chat")
def chat(
    harness: HarnessOpt = None,
    domain: DomainOpt = None,
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    trace: Annotated[Path | None, typer.Option(help="Write the conversation's trace here on exit.")] = None,
) -> None:
    """Talk to the agent as a viewer; tool calls are shown as they happen. Ctrl-D to quit."""
    agent = _agent(harness, model, locale, domain)
    episode = agent.episode()
    _say(f"[bold]{agent.harness.name}[/] on {agent.model.model_id}. Type a message; Ctrl-D quits.")
    while True:
        try:
            text = console.input("[bold]viewer> [/]")
        except (EOFError, KeyboardInterrupt):
            break
        if not text.strip():
            continue
        step = episode.ask(text)
        seen = len(episode.trace.spans)
        try:
            request = next(step)
            while True:
                out = generate_safely(agent.model, [request])[0]
                request = step.send(out)
                for line in trace_lines(episode.trace.spans[seen:]):
                    console.print(line)
                seen = len(episode.trace.spans)
        except StopIteration as done:
            for line in trace_lines(episode.trace.spans[seen:]):
                console.print(line)
            console.print(Text.assemble(("host: ", "bold green"), str(done.value)))
    if trace is not None:
        write_traces(trace, [episode.trace])
        _say(f"trace written to {trace}")


