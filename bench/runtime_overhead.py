"""Agent-loop overhead per turn: hatkit vs the OpenAI Agents SDK Runner, same scripted episode.

Neither side spends any model time: both models return a pre-scripted answer at once, so the
wall time of an episode is the loop's own cost (request building, parsing, hooks, tool dispatch,
feeding results back, trace/bookkeeping) plus the two in-process tools it calls.

The episode (3 model calls = 3 turns), identical on every row:
  viewer  "How much are the Pulse ANC earbuds (EL-001) today, and are they in stock?"
  turn 1  model calls get_promotions(product_id="EL-001")
  turn 2  model calls check_stock(product_id="EL-001")
  turn 3  model replies with a short text stating a price and stock (the claim hooks run and pass)

Overhead per turn = episode wall time / 3, measured with time.perf_counter_ns around the whole
episode (hatkit: `Agent.run`; SDK: `await Runner.run`). All rows run interleaved, episode by
episode, inside one asyncio event loop, so machine drift hits every row alike.

Rows:
  hatkit (inline tools)        InlineToolRunner: tools run on the calling thread, no timeout.
  hatkit (thread tools)        ThreadToolRunner (the default): a worker-thread hop per call,
                               which buys the harness's tool timeout.
  openai-agents (async tools)  `async def` function tools: awaited on the event loop, no timeout.
  openai-agents (sync tools)   plain `def` function tools: the SDK runs them via
                               asyncio.to_thread (a thread hop per call, like hatkit's thread
                               runner, but the SDK allows no timeout on sync tools).
The verdict compares like with like: inline <-> async tools, thread <-> sync tools.

What the peer does to match hatkit's work, and what it cannot match:
  * same system prompt (the rendered live_commerce harness) and same tool implementations
    (hatkit's ToolSpec.call, which validates arguments, with a fresh ShopState per episode);
  * tool results are serialised with hatkit's tool_result_text on both sides;
  * pre_tool: a tool input guardrail runs hatkit's check_call (argument + permission check)
    and the same enabled hooks through hatkit's run_hooks (hatkit does exactly this);
  * post_tool: a tool output guardrail runs the same hooks on the tool's text;
  * pre_reply: an output guardrail runs the same hooks (all five pre_reply rules: two
    forbidden-phrase rules, the price and stock claim rules, the reply-length rule) on the
    final text, with the tools that succeeded, as hatkit's PreReplyEvent has them.
  Not equivalent: an SDK output guardrail can only pass or trip; it cannot rewrite the reply or
  ask the model again as hatkit's pre_reply hooks do (in this episode no hook fires, so no such
  path runs on either side). hatkit's ScriptedModel writes tool calls as <tool_call> text that
  the loop parses; the SDK model hands over ready ResponseFunctionToolCall items (the SDK still
  parses their JSON arguments). hatkit records a full Trace (spans, timings); the SDK records
  its RunResult items. Tracing is disabled in the SDK (nothing is exported).

Run:  .venv/bin/python bench/runtime_overhead.py [--episodes 300] [--warmup 20] [--profile]
      .venv/bin/python bench/runtime_overhead.py --smoke   # 3 episodes a row; without the
      peer installed, the hatkit rows alone and no verdict (checks the bench runs, not its goal)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.metadata
import io
import json
import os
import platform
import pstats
import statistics
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import perf_counter_ns as time_ns
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

try:
    import agents
    from agents import (
        GuardrailFunctionOutput,
        RunConfig,
        RunContextWrapper,
        Runner,
        ToolGuardrailFunctionOutput,
        function_tool,
        output_guardrail,
        tool_input_guardrail,
        tool_output_guardrail,
    )
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    PEER_MISSING = ""
except ImportError as exc:  # pragma: no cover - depends on the environment
    PEER_MISSING = (f"runtime_overhead: the peer, openai-agents, is not installed ({exc}).\n"
                    "Install the benchmark extras:  pip install -e '.[bench]'")
    Model = object  # the peer's classes below are defined, never used

from hatkit import __version__ as HATKIT_VERSION
from hatkit.agent import Agent, InlineToolRunner, ThreadToolRunner, Trace
from hatkit.agent.hook_runner import run_hooks
from hatkit.agent.tool_runner import check_call
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import (
    Harness,
    PostToolEvent,
    PreReplyEvent,
    PreToolEvent,
    ToolContext,
    load_harness,
)
from hatkit.models.chat_format import tool_result_text
from hatkit.models.scripted import ScriptedModel

if not PEER_MISSING:
    agents.set_tracing_disabled(True)

QUESTION = "How much are the Pulse ANC earbuds (EL-001) today, and are they in stock?"
PRODUCT = "EL-001"
REPLY = ("The Pulse ANC Wireless Earbuds are $99 today, and they are in stock - "
         "tap the cart to grab a pair!")
TURNS = 3
TOOLS = ("get_promotions", "check_stock")


# ---------------------------------------------------------------- hatkit side
def hatkit_agent(harness: Harness, runner: Any) -> Agent:
    return Agent(harness, ScriptedModel(), state_factory=ShopState, tool_runner=runner)


def hatkit_episode(agent: Agent) -> Callable[[], Trace]:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    script = (ScriptedModel.call("get_promotions", product_id=PRODUCT),
              ScriptedModel.call("check_stock", product_id=PRODUCT), REPLY)

    def prepare() -> None:  # outside the timed region
        model.requests.clear()
        model.push(*script)

    def run() -> Trace:
        return agent.run(QUESTION)

    run.prepare = prepare  # type: ignore[attr-defined]
    return run


def check_hatkit(trace: Trace) -> None:
    problems = [f"{e.kind}: {e.data}" for e in trace.events]
    if trace.final_reply != REPLY:
        problems.append(f"final reply {trace.final_reply!r}")
    if [(t.name, t.error_type) for t in trace.tool_calls] != [(n, None) for n in TOOLS]:
        problems.append(f"tool calls {[(t.name, t.error) for t in trace.tool_calls]}")
    if trace.timings.model_calls != TURNS:
        problems.append(f"{trace.timings.model_calls} model calls")
    if problems:
        raise SystemExit("runtime_overhead: the hatkit episode did not go as scripted:\n  "
                         + "\n  ".join(problems))


# ---------------------------------------------------------------- peer side
@dataclass
class PeerContext:
    """The SDK run context: the episode's ShopState and the tools that returned a result."""

    state: ShopState = field(default_factory=ShopState)
    tools_ok: list[str] = field(default_factory=list)


def _usage() -> Usage:
    return Usage(requests=1, input_tokens=1500, output_tokens=30, total_tokens=1530)


class PeerScriptedModel(Model):
    """Returns the three scripted responses in turn, instantly; `reset` before each episode.

    Mirrors the SDK's own agents.testing.ScriptedModel output items (function_call /
    assistant_message helpers), minus its per-call deep copies of the input, so the peer is
    not charged for test bookkeeping. The responses are built once and reused.
    """

    def __init__(self) -> None:
        self.script = [
            ModelResponse(output=[ResponseFunctionToolCall(
                id="fc_1", call_id="call_1", type="function_call", name="get_promotions",
                arguments=json.dumps({"product_id": PRODUCT}))], usage=_usage(), response_id=None),
            ModelResponse(output=[ResponseFunctionToolCall(
                id="fc_2", call_id="call_2", type="function_call", name="check_stock",
                arguments=json.dumps({"product_id": PRODUCT}))], usage=_usage(), response_id=None),
            ModelResponse(output=[ResponseOutputMessage(
                id="msg_3", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(text=REPLY, type="output_text", annotations=[],
                                            logprobs=[])])], usage=_usage(), response_id=None),
        ]
        self.turn = 0

    def reset(self) -> None:
        self.turn = 0

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,  # type: ignore[no-untyped-def]
                           handoffs, tracing, *, previous_response_id, conversation_id, prompt):
        response = self.script[self.turn]
        self.turn += 1
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this benchmark runs the SDK without streaming")


def peer_agent(harness: Harness, system_prompt: str, model: PeerScriptedModel, *,
               sync_tools: bool) -> agents.Agent[PeerContext]:
    """The SDK agent: same prompt, same tool code, the same hooks as guardrails."""
    specs = {n: harness.tools[n] for n in TOOLS}
    rules = harness.rules
    permissions = frozenset(harness.spec.permissions)
    hooks = harness.enabled_hooks()

    def call_tool(ctx: RunContextWrapper[PeerContext], name: str, args: dict[str, Any]) -> str:
        result = specs[name].call(args, ToolContext(ctx.context.state, rules, permissions))
        ctx.context.tools_ok.append(name)
        return tool_result_text(result)

    @tool_input_guardrail
    def pre_tool(data: Any) -> ToolGuardrailFunctionOutput:
        name, args = data.context.tool_name, json.loads(data.context.tool_arguments)
        spec = specs[name]
        try:
            args = check_call(spec, args, permissions)
        except Exception as exc:  # noqa: BLE001 - a bad call is fed back, as in hatkit
            return ToolGuardrailFunctionOutput.reject_content(str(exc))
        out = run_hooks(hooks, PreToolEvent(name, args, permissions, spec.permission))
        if out.veto is not None:
            return ToolGuardrailFunctionOutput.reject_content(out.veto.reason)
        return ToolGuardrailFunctionOutput.allow()

    @tool_output_guardrail
    def post_tool(data: Any) -> ToolGuardrailFunctionOutput:
        args = json.loads(data.context.tool_arguments)
        out = run_hooks(hooks, PostToolEvent(data.context.tool_name, args, str(data.output)))
        if out.veto is not None:
            return ToolGuardrailFunctionOutput.reject_content(out.veto.reason)
        return ToolGuardrailFunctionOutput.allow()

    @output_guardrail
    def pre_reply(ctx: RunContextWrapper[PeerContext], agent: Any, output: Any) -> GuardrailFunctionOutput:
        out = run_hooks(hooks, PreReplyEvent(str(output), tuple(ctx.context.tools_ok)))
        return GuardrailFunctionOutput(output_info=out, tripwire_triggered=out.veto is not None)

    if sync_tools:
        def get_promotions(ctx: RunContextWrapper[PeerContext], product_id: str) -> str:
            """Promotions and coupon codes valid today for a product.

            Args:
                product_id: The product id.
            """
            return call_tool(ctx, "get_promotions", {"product_id": product_id})

        def check_stock(ctx: RunContextWrapper[PeerContext], product_id: str) -> str:
            """Units in stock per variant (size, colour) of a product.

            Args:
                product_id: The product id.
            """
            return call_tool(ctx, "check_stock", {"product_id": product_id})
        funcs: list[Callable[..., Any]] = [get_promotions, check_stock]
    else:
        async def get_promotions_async(ctx: RunContextWrapper[PeerContext], product_id: str) -> str:
            """Promotions and coupon codes valid today for a product.

            Args:
                product_id: The product id.
            """
            return call_tool(ctx, "get_promotions", {"product_id": product_id})

        async def check_stock_async(ctx: RunContextWrapper[PeerContext], product_id: str) -> str:
            """Units in stock per variant (size, colour) of a product.

            Args:
                product_id: The product id.
            """
            return call_tool(ctx, "check_stock", {"product_id": product_id})
        funcs = [get_promotions_async, check_stock_async]

    tools = [function_tool(f, name_override=name, tool_input_guardrails=[pre_tool],
                           tool_output_guardrails=[post_tool])
             for f, name in zip(funcs, TOOLS, strict=True)]
    return agents.Agent(name="live_commerce", instructions=system_prompt, tools=tools, model=model,
                        output_guardrails=[pre_reply])


def peer_episode(harness: Harness, system_prompt: str, *, sync_tools: bool,
                 ) -> Callable[[], Awaitable[Any]]:
    model = PeerScriptedModel()
    agent = peer_agent(harness, system_prompt, model, sync_tools=sync_tools)
    run_config = RunConfig(tracing_disabled=True)
    max_turns = harness.spec.limits.max_turns

    async def run() -> Any:
        context = PeerContext()
        result = await Runner.run(agent, QUESTION, context=context, max_turns=max_turns,
                                  run_config=run_config)
        return result, context

    run.prepare = model.reset  # type: ignore[attr-defined]
    return run


def check_peer(outcome: tuple[Any, PeerContext]) -> None:
    result, context = outcome
    problems = []
    if result.final_output != REPLY:
        problems.append(f"final output {result.final_output!r}")
    if context.tools_ok != list(TOOLS):
        problems.append(f"tools that ran: {context.tools_ok}")
    if len(result.raw_responses) != TURNS:
        problems.append(f"{len(result.raw_responses)} model calls")
    if any(g.output.tripwire_triggered for g in result.output_guardrail_results):
        problems.append("an output guardrail tripped")
    if problems:
        raise SystemExit("runtime_overhead: the openai-agents episode did not go as scripted:\n  "
                         + "\n  ".join(problems))


# ---------------------------------------------------------------- measurement
@dataclass
class Row:
    label: str
    run: Callable[[], Any]
    check: Callable[[Any], None]
    is_async: bool
    samples_ns: list[int] = field(default_factory=list)

    async def once(self, keep: bool) -> None:
        self.run.prepare()  # type: ignore[attr-defined]
        if self.is_async:
            t0 = time_ns()
            outcome = await self.run()
            elapsed = time_ns() - t0
        else:
            t0 = time_ns()
            outcome = self.run()
            elapsed = time_ns() - t0
        self.check(outcome)
        if keep:
            self.samples_ns.append(elapsed)

    def stats(self) -> dict[str, float]:
        per_turn_ms = sorted(s / TURNS / 1e6 for s in self.samples_ns)
        return {"p50_ms": percentile(per_turn_ms, 50), "p95_ms": percentile(per_turn_ms, 95),
                "mean_ms": statistics.fmean(per_turn_ms), "episodes": len(per_turn_ms)}


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    k = (len(sorted_values) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


async def measure(rows: list[Row], episodes: int, warmup: int) -> None:
    for i in range(warmup + episodes):
        if i == warmup:
            gc.collect()
        shift = i % len(rows)  # rotate the order so no row always runs right after another
        for row in rows[shift:] + rows[:shift]:
            await row.once(keep=i >= warmup)


def profile_hatkit(agent: Agent, episodes: int) -> str:
    run = hatkit_episode(agent)
    prof = cProfile.Profile()
    for _ in range(episodes):
        run.prepare()  # type: ignore[attr-defined]
        prof.enable()
        run()
        prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
    return buf.getvalue()


def print_table(results: dict[str, dict[str, float]]) -> None:
    header = f"{'':32} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'episodes':>9}"
    print("Agent-loop overhead per turn (scripted model, in-process tools, hooks on)")
    print(header)
    print("-" * len(header))
    for label, s in results.items():
        print(f"{label:32} {s['p50_ms']:8.3f} {s['p95_ms']:8.3f} {s['mean_ms']:8.3f} "
              f"{s['episodes']:9d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Measure the agent loop's own overhead per turn (p50/p95/mean) with a scripted "
                    "model, in-process tools and hooks on: hatkit (inline and thread tool runners) "
                    "side by side with the OpenAI Agents SDK Runner (async and sync tools) on the "
                    "same 3-turn live_commerce episode. Nothing touches the network. Goal: hatkit "
                    "p50 <= 1 ms per turn and <= half the peer's (like for like). The last line "
                    "printed is one JSON object with every figure.")
    parser.add_argument("--episodes", type=int, default=300,
                        help="measured episodes per row (default 300); each episode is 3 turns")
    parser.add_argument("--warmup", type=int, default=20,
                        help="unmeasured warm-up episodes per row (default 20)")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile the hatkit inline episode and print the top costs")
    parser.add_argument("--smoke", action="store_true",
                        help="3 episodes a row; the hatkit rows alone when the peer is missing")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.warmup < 0:
        parser.error("--episodes must be >= 1 and --warmup >= 0")
    if args.smoke:
        args.episodes, args.warmup = min(args.episodes, 3), min(args.warmup, 1)
    if PEER_MISSING and not args.smoke:
        sys.exit(PEER_MISSING)

    harness = load_harness("live_commerce")
    inline_agent = hatkit_agent(harness, InlineToolRunner())
    thread_agent = hatkit_agent(harness, ThreadToolRunner())
    system_prompt = inline_agent.rendered.system_prompt  # what hatkit's text-tool model sees

    rows = [
        Row("hatkit (inline tools)", hatkit_episode(inline_agent), check_hatkit, False),
        Row("hatkit (thread tools)", hatkit_episode(thread_agent), check_hatkit, False),
    ]
    if not PEER_MISSING:
        rows += [
            Row("openai-agents (async tools)", peer_episode(harness, system_prompt, sync_tools=False),
                check_peer, True),
            Row("openai-agents (sync tools)", peer_episode(harness, system_prompt, sync_tools=True),
                check_peer, True),
        ]
    asyncio.run(measure(rows, args.episodes, args.warmup))
    results = {r.label: r.stats() for r in rows}
    print_table(results)
    if PEER_MISSING:  # --smoke only: nothing to compare against
        print(f"{PEER_MISSING}\nverdict: none (no peer)")
        print(json.dumps({"bench": "runtime_overhead", "unit": "ms per turn", "smoke": True,
                          "turns_per_episode": TURNS, "episodes": args.episodes,
                          "results": results, "peer": None}, separators=(",", ":")))
        return 0

    peer_for = {"hatkit (inline tools)": "openai-agents (async tools)",
                "hatkit (thread tools)": "openai-agents (sync tools)"}
    verdicts: dict[str, dict[str, Any]] = {}
    for ours, theirs in peer_for.items():
        p50, peer = results[ours]["p50_ms"], results[theirs]["p50_ms"]
        verdicts[ours] = {"vs": theirs, "ratio": p50 / peer, "under_1ms": p50 <= 1.0,
                          "under_half_peer": p50 <= peer / 2,
                          "met": p50 <= 1.0 and p50 <= peer / 2}
    print()
    for ours, v in verdicts.items():
        theirs = v["vs"]
        print(f"{ours}: p50 {results[ours]['p50_ms']:.3f} ms vs {theirs} "
              f"{results[theirs]['p50_ms']:.3f} ms (x{v['ratio']:.2f}) -> goal "
              f"{'MET' if v['met'] else 'NOT MET'} (<= 1 ms: {'yes' if v['under_1ms'] else 'no'}, "
              f"<= half the peer's: {'yes' if v['under_half_peer'] else 'no'})")
    overall = all(v["met"] for v in verdicts.values())
    print(f"verdict: goal {'met' if overall else 'not met'} "
          f"(hatkit p50 <= 1 ms per turn and <= half the peer's, inline and thread variants)")

    if args.profile:
        print()
        print(profile_hatkit(inline_agent, args.episodes))

    summary = {
        "bench": "runtime_overhead", "unit": "ms per turn", "turns_per_episode": TURNS,
        "episodes": args.episodes, "warmup": args.warmup, "smoke": args.smoke,
        "results": {k: {m: round(v, 4) if isinstance(v, float) else v for m, v in s.items()}
                    for k, s in results.items()},
        "goal": {k: {"vs": v["vs"], "ratio": round(v["ratio"], 3), "met": v["met"]}
                 for k, v in verdicts.items()} | {"met": overall},
        "versions": {"hatkit": HATKIT_VERSION,
                     "openai-agents": importlib.metadata.version("openai-agents"),
                     "python": platform.python_version()},
    }
    print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
