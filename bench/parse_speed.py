"""Tool-call parser speed on untrusted model text: `parse_output` (plus labelling every 4th
character by segment, as the loop does per token) at 1k, 4k and 16k characters.

Inputs are adversarial (text made only of `{`, open keys, escaped quotes, many blocks or
reasoning spans) plus two ordinary ones (a call, a prose reply with braces) so a fix for the
worst case is seen not to slow the usual case. Linear parsing keeps the time per character
flat from 1k to 16k; quadratic parsing multiplies it by 16.

`--baseline REV` times the parser of another git revision beside the current one, e.g. the
commit before the linear-time parser: `--baseline 7ad7454` (then `{` x 4k took 1.8 s). A
baseline series stops once one size takes longer than `--max-s`.

Run:  .venv/bin/python bench/parse_speed.py [--baseline REV] [--repeats 5] [--max-s 5] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hatkit import __version__
from hatkit.agent import parsing

BENCH = "parse_speed"
SIZES = (1_000, 4_000, 16_000)
CALL = '{"name": "get_promotions", "arguments": {"product_id": "EL-001"}}'
INPUTS: dict[str, Callable[[int], str]] = {
    "open_braces": lambda n: "{" * n,
    "open_braces_in_call": lambda n: "<tool_call>" + "{" * n + "</tool_call>",
    "brace_quote": lambda n: "{'" * (n // 2),
    "open_keys": lambda n: '{"a": ' * (n // 6),
    "escaped_quotes_in_call": lambda n: '<tool_call>{"' + '\\"' * (n // 2) + "</tool_call>",
    "many_blocks": lambda n: f"<tool_call>{CALL}</tool_call>" * (n // 90),
    "think_blocks": lambda n: "<think>a</think>" * (n // 16),
    "ordinary_call": lambda n: "<think>" + "x" * (n - 100) + f"</think><tool_call>{CALL}</tool_call>",
    "ordinary_reply": lambda n: "The {price} is fine, isn't it? " * (n // 32),
}


def load_baseline(rev: str) -> types.ModuleType:
    """parsing.py as it was at `rev`, imported inside hatkit.agent (its relative imports work)."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{rev}:src/hatkit/agent/parsing.py"], cwd=root,
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("hatkit.agent._parsing_baseline")
    module.__package__ = "hatkit.agent"
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    exec(compile(source, f"{rev}:parsing.py", "exec"), module.__dict__)
    return module


def seconds(module: Any, text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = module.parse_output(text)
        for pos in range(0, len(text), 4):
            out.segment_at(pos)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="git revision whose parser to time beside the current one")
    ap.add_argument("--repeats", type=int, default=5, help="best of this many runs per cell")
    ap.add_argument("--max-s", type=float, default=5.0, help="stop a baseline series past this")
    ap.add_argument("--smoke", action="store_true", help="small sizes, one run each (seconds)")
    args = ap.parse_args(argv)
    sizes = (100, 400) if args.smoke else SIZES
    repeats = 1 if args.smoke else args.repeats
    parsers: dict[str, Any] = {"current": parsing}
    if args.baseline:
        parsers[f"baseline {args.baseline}"] = load_baseline(args.baseline)
    rows: dict[str, dict[str, dict[str, float | None]]] = {}
    calls: dict[str, int] = {}
    print(f"{'input':24} {'parser':20}" + "".join(f"{n:>12,}" for n in sizes)
          + f"   ms per 1k chars, {sizes[0]:,} -> {sizes[-1]:,}")
    for name, make in INPUTS.items():
        out = parsing.parse_output(make(sizes[-1]))
        calls[name] = len(out.tool_calls) + len(out.bad_calls)
        for label, module in parsers.items():
            cells: dict[str, float | None] = {}
            slow = False
            for n in sizes:
                secs = None if slow else seconds(module, make(n), repeats if label == "current" else 1)
                slow = slow or (secs is not None and secs > args.max_s)
                cells[str(n)] = None if secs is None else round(secs * 1000, 3)
            rows.setdefault(name, {})[label] = cells
            shown = "".join(f"{'skipped':>12}" if v is None else f"{v:>10.2f}ms" for v in cells.values())
            first, last = cells[str(sizes[0])], cells[str(sizes[-1])]
            per_k = "" if first is None or last is None else \
                f"   {first / (sizes[0] / 1000):.3f} -> {last / (sizes[-1] / 1000):.3f}"
            print(f"{name:24} {label:20}{shown}{per_k}")
    worst = max(rows[name]["current"][str(sizes[-1])] or 0.0 for name in INPUTS)
    print(f"current parser, slowest input at {sizes[-1]:,} characters: {worst:.1f} ms")
    print(json.dumps({"bench": BENCH, "sizes": sizes, "ms": rows, "calls": calls,
                      "hatkit": __version__, "python": platform.python_version()}))


if __name__ == "__main__":
    main()
