"""Simulation throughput: episodes per second with the oracle policy and no model, on one
core, so the environment is never what slows RL or evaluation down (goal: >= 2,000/s).

Rows, all on the same questions (mixed categories, dev split) and the default harness:
  in-process, inline tools       the loop + oracle + tools on the calling thread
  in-process, thread tools       the default runner (a worker-thread hop per call: timeouts)
  in-process, faults 10%         inline tools behind the fault injector
  HTTP sandbox server            tools through the FastAPI sandbox on loopback
The HTTP row also gives the server's per-episode overhead against the inline row.
A run with a backend error in any episode stops before the verdict. `--smoke`: a few episodes
per row, all cores (seconds; checks the bench runs, not its goal).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from typing import Any

from _common import check_episodes, check_work

from hatkit import __version__
from hatkit.agent import Agent, InlineToolRunner, ThreadToolRunner, ToolRunner, Trace
from hatkit.agent.loop import drive
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.questions import generate_questions
from hatkit.harness import Harness, load_harness
from hatkit.sim.faults import FaultConfig, FaultInjectingRunner
from hatkit.sim.runner import ask_all
from hatkit.sim.truth import Question

BENCH = "sim_throughput"


def run(harness: Harness, questions: Sequence[Question], runner: Any,
        state_factory: Any = None, batch: int = 64, what: str = "warm-up") -> tuple[float, int]:
    """Seconds for all episodes, and how many ended with a fallback (should be 0); stops the
    bench if an episode hit a backend error."""
    agent = Agent(harness, LC.oracle(harness, questions), tool_runner=runner,
                  state_factory=state_factory)
    traces: list[Trace] = []
    started = time.perf_counter()
    for i in range(0, len(questions), batch):
        chunk = questions[i:i + batch]
        episodes = [agent.episode() for _ in chunk]
        steps = [ask_all(e, [t.text for t in q.turns]) for e, q in zip(episodes, chunk, strict=True)]
        drive(agent.model, steps)
        traces += [e.trace for e in episodes]
    seconds = time.perf_counter() - started
    check_episodes(BENCH, traces, what)
    check_work(BENCH, **{f"{what} model calls": sum(t.timings.model_calls for t in traces)})
    fallbacks = sum(1 for t in traces if t.events_of("fallback"))
    return seconds, fallbacks


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3000)
    ap.add_argument("--http-episodes", type=int, default=300, help="episodes through the HTTP server")
    ap.add_argument("--all-cores", action="store_true", help="do not pin to one core")
    ap.add_argument("--smoke", action="store_true", help="a few episodes, all cores (seconds)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.episodes, args.http_episodes = min(args.episodes, 40), min(args.http_episodes, 8)
        args.all_cores = True  # never pin the calling process (a test run) to one core
    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    harness = load_harness("live_commerce")
    questions = generate_questions(harness.rules, n=args.episodes, seed=0, split="dev")
    run(harness, questions[:200], InlineToolRunner())  # warm-up
    rows: list[tuple[str, int, float, int]] = []
    runners: list[tuple[str, ToolRunner]] = [
        ("in-process, inline tools", InlineToolRunner()),
        ("in-process, thread tools", ThreadToolRunner()),
        ("in-process, faults 10%", FaultInjectingRunner(
            FaultConfig(rates={"timeout": 0.05, "server_error": 0.05}, seed=1, first_call_only=True),
            InlineToolRunner())),
    ]
    for name, runner in runners:
        secs, fb = run(harness, questions, runner, what=name)
        rows.append((name, len(questions), secs, fb))
    http = _http_row(harness, questions[: args.http_episodes])
    if http is not None:
        rows.append(http)
    print(f"{'mode':30} {'episodes':>9} {'seconds':>8} {'episodes/s':>11} {'fallbacks':>10}")
    for name, n, secs, fb in rows:
        print(f"{name:30} {n:9d} {secs:8.2f} {n / secs:11.0f} {fb:10d}")
    inline_eps = rows[0][1] / rows[0][2]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    result: dict[str, Any] = {"bench": BENCH, "cores": cores,
              "rows": {name: {"episodes": n, "seconds": round(secs, 3), "episodes_per_s": round(n / secs, 1),
                              "fallbacks": fb} for name, n, secs, fb in rows},
              "goal_2000_eps_met": inline_eps >= 2000,
              "hatkit": __version__, "python": platform.python_version()}
    if http is not None:
        per_http = http[2] / http[1] - rows[0][2] / rows[0][1]
        result["http_overhead_ms_per_episode"] = round(per_http * 1000, 3)
        print(f"HTTP sandbox overhead: {per_http * 1000:.2f} ms per episode")
    print(f"goal >= 2,000 episodes/s on one core (inline): {'met' if inline_eps >= 2000 else 'NOT met'} "
          f"({inline_eps:.0f}/s)")
    print(json.dumps(result))


def _http_row(harness: Harness, questions: Sequence[Question]) -> tuple[str, int, float, int] | None:
    from hatkit.sim.tool_server import HttpToolRunner, running_server

    with running_server(harness) as base_url, HttpToolRunner(base_url) as runner:
        secs, fb = run(harness, questions, runner, state_factory=runner.state_factory(), batch=16,
                       what="HTTP sandbox server")
    return ("HTTP sandbox server", len(questions), secs, fb)


if __name__ == "__main__":
    main()
