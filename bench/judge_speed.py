"""Programmatic judge speed: milliseconds per trace on clean oracle episodes (every question
category, en and zh) under the default harness and two train-family variants, per-harness
caches warm, as evaluation and RL reward use it. Floor: under 2 ms a trace (this was a test's
wall-clock assertion; speed lives here so a busy machine cannot fail the test tier).

A run whose episodes hit a backend error, or that judged nothing, stops before the verdict.
`--smoke`: 4 questions per harness and locale, one round (seconds; not the floor).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import check_episodes, check_work

from hatkit import __version__
from hatkit.agent import Agent, InlineToolRunner, Trace
from hatkit.agent.loop import drive
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.questions import generate_questions
from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge
from hatkit.harness import Harness, load_harness
from hatkit.sim.augment import make_variant
from hatkit.sim.runner import ask_all

BENCH = "judge_speed"
FLOOR_MS = 2.0


def oracle_traces(harness: Harness, n: int, seed: int, locale: str) -> list[Trace]:
    questions = generate_questions(harness.rules, n=n, seed=seed, split="train", locale=locale)
    agent = Agent(harness, LC.oracle(harness, questions), locale=locale,
                  tool_runner=InlineToolRunner())
    episodes = [agent.episode() for _ in questions]
    drive(agent.model, [ask_all(e, [t.text for t in q.turns])
                        for e, q in zip(episodes, questions, strict=True)])
    return check_episodes(BENCH, [e.trace for e in episodes], f"{harness.name}/{locale}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=14, help="per harness and locale")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over all traces")
    ap.add_argument("--smoke", action="store_true", help="4 questions, one round (seconds)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.questions, args.rounds = min(args.questions, 4), 1

    with tempfile.TemporaryDirectory(prefix="hatkit-judge-bench-") as tmp:
        harnesses = [load_harness("live_commerce")] + [
            make_variant("live_commerce", Path(tmp) / f"v{s}", family="train", hsa=LC.hsa, seed=s)
            for s in (1, 3)]
        cases = [(t, h) for i, h in enumerate(harnesses) for loc in ("en", "zh")
                 for t in oracle_traces(h, args.questions, i, loc)]
    judge = ProgrammaticJudge()
    verdicts = [judge.judge(t, h) for t, h in cases]  # warms the per-harness caches
    errors = [v.error for v in verdicts if v.error]
    check_work(BENCH, traces=len(cases), judged=len(verdicts) - len(errors))
    started = time.perf_counter()
    for _ in range(args.rounds):
        for t, h in cases:
            judge.judge(t, h)
    per_trace_ms = (time.perf_counter() - started) * 1000 / (args.rounds * len(cases))
    passed = sum(v.passed("accuracy") for v in verdicts)
    print(f"{'traces':>7} {'rounds':>7} {'ms/trace':>9} {'accurate':>9}")
    print(f"{len(cases):7d} {args.rounds:7d} {per_trace_ms:9.3f} {passed:>5}/{len(cases)}")
    met = per_trace_ms < FLOOR_MS
    print(f"floor < {FLOOR_MS:g} ms a trace: {'met' if met else 'NOT met'} ({per_trace_ms:.3f} ms)")
    print(json.dumps({"bench": BENCH, "smoke": args.smoke, "traces": len(cases),
                      "rounds": args.rounds, "ms_per_trace": round(per_trace_ms, 4),
                      "accurate": passed, "judge_errors": len(errors), "floor_ms": FLOOR_MS,
                      "met": met, "hatkit": __version__, "python": platform.python_version()}))


if __name__ == "__main__":
    main()
