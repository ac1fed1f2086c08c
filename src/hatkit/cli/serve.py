"""`hatkit serve` and `hatkit bench ...`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..harness import Harness
from ..models.default_model import DefaultModelError
from ._common import (
    DomainOpt,
    HarnessOpt,
    ModelOpt,
    _fail,
    _harness_for,
    _load,
    app,
)

bench_app = typer.Typer(help="Benchmarks that ship with hatkit.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("latency", context_settings={"allow_extra_args": True,
                                                "ignore_unknown_options": True})
def bench_latency(ctx: typer.Context) -> None:
    """Turn latency (p50/p95/p99, first token, tokens/s, peak RSS) at concurrency 1-8, and
    greedy vs prompt-lookup vs draft-model decoding (--draft-model PATH). Options are passed
    through: `hatkit bench latency -- --help`."""
    from ..serve import latency_main

    latency_main(list(ctx.args))


@app.command("serve")
def serve_cmd(
    harness: HarnessOpt = None,
    domain: DomainOpt = None,
    model: ModelOpt = "local",
    host: Annotated[str, typer.Option(help="Bind address (loopback unless --allow-remote).")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    allow_remote: Annotated[bool, typer.Option(help="Allow a non-loopback bind address.")] = False,
    max_concurrency: Annotated[int, typer.Option(help="Turns run at once; beyond: 429.")] = 4,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds (504).")] = 60.0,
    release: Annotated[list[str] | None, typer.Option(help="NAME=DIR of another harness release "
                                                      "for hot swap / rollback (repeat).")] = None,
    stream_policy: Annotated[str, typer.Option(
        help="How streamed replies meet pre_reply hooks: auto (sentences if the harness has "
             "reply hooks, else tokens), sentences, tokens, or hold (send after the hooks).")] = "auto",
    speculative: Annotated[str | None, typer.Option(
        help="Local model only: prompt_lookup, draft (with --draft-model), or mtp (the draft "
             "heads `hatkit train draft` saved in the checkpoint).")] = None,
    draft_model: Annotated[str | None, typer.Option(
        help="Checkpoint folder of a small draft model with the same tokenizer (assisted "
             "decoding; implies --speculative draft).")] = None,
    max_history_messages: Annotated[int, typer.Option(
        help="Chat messages a request may send before its last one; beyond: 413.")] = 256,
) -> None:
    """Serve the harness agent over HTTP: OpenAI-compatible chat completions, live messages,
    health, Prometheus metrics, bounded concurrency and harness hot swap."""
    from ..serve import serve

    releases: dict[str, str | Harness] = {}
    for item in release or []:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise _fail(f"--release expects NAME=DIR, got '{item}'")
        releases[name] = _load(folder)
    from ..serve import STREAM_POLICIES

    if stream_policy not in STREAM_POLICIES:
        raise _fail(f"--stream-policy must be one of {', '.join(STREAM_POLICIES)}")
    try:
        serve(_harness_for(harness, domain), model, host=host, port=port, allow_remote=allow_remote,
              max_concurrency=max_concurrency, request_timeout_s=timeout, harnesses=releases or None,
              stream_policy=stream_policy, speculative=speculative,  # type: ignore[arg-type]
              draft_model=draft_model, max_history_messages=max_history_messages)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


