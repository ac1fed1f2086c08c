"""History replay: the time to turn N chat-history messages into prompt ids, as the server
does for each /v1/chat/completions request (`Runner.turn` feeds them one by one through
`Episode._feed`), with the windowed rendering (now) and the full rendering (before: each
message re-rendered the whole conversation, so N messages cost O(N^2) template work).

The default model's tokenizer and the live_commerce harness; no model call. Rows alternate
mode per size; each figure is the best of --repeats. "rendered" counts the messages the chat
template rendered in total (the work, independent of the machine).

    .venv/bin/python bench/history_replay.py [--sizes 16,64,256,1001] [--full-upto 256]
    .venv/bin/python bench/history_replay.py --smoke     # the tests' tiny tokenizer, seconds

Both renderings must give the same prompt, else it stops with exit status 1. Prints a table,
then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hatkit.agent import Agent
from hatkit.harness import load_harness
from hatkit.models.base import ChatMessage
from hatkit.models.chat_format import ChatTemplateFormat


class RenderOnly:
    """Just enough of a token-level backend for an Agent to build prompts."""

    model_id = "render-only"
    native_tools = False

    def __init__(self, fmt: ChatTemplateFormat) -> None:
        self.fmt = fmt

    def token_format(self) -> ChatTemplateFormat:
        return self.fmt

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        raise RuntimeError("render only")


def replay(agent: Agent, n: int) -> tuple[float, int, int]:
    """Seconds, rendered messages and prompt tokens for n one-character history messages."""
    fmt = agent.format
    assert isinstance(fmt, ChatTemplateFormat)
    rendered = [0]
    real = fmt.tok.apply_chat_template

    def counting(messages: list[Any], **kw: Any) -> Any:
        rendered[0] += len(messages)
        return real(messages, **kw)

    fmt.tok.apply_chat_template = counting
    try:
        started = time.perf_counter()
        episode = agent.episode()
        for i in range(n):
            msg = ChatMessage("user", "x") if i % 2 == 0 else ChatMessage("assistant", "x")
            episode._feed(msg, "user" if msg.role == "user" else "reply", "history")
        step = episode.ask("hi")
        prompt = next(step).prompt_ids or []
        step.close()
        return time.perf_counter() - started, rendered[0], len(prompt)
    finally:
        fmt.tok.apply_chat_template = real


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,64,256,1001", help="history lengths")
    parser.add_argument("--full-upto", type=int, default=256,
                        help="longest history timed with full rendering (it is quadratic)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny tokenizer, sizes 8 and 32")
    args = parser.parse_args(argv)
    if args.smoke:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from tiny import tiny_tokenizer

        tok, args.sizes, args.full_upto, args.repeats = tiny_tokenizer(), "8,32", 32, 1
    else:
        from transformers import AutoTokenizer

        from hatkit.models.default_model import ensure_default_model

        tok = AutoTokenizer.from_pretrained(ensure_default_model())
    fmt = ChatTemplateFormat(tok, native_tools=False)
    agent = Agent(load_harness("live_commerce"), RenderOnly(fmt))  # type: ignore[arg-type]
    rows: list[dict[str, Any]] = []
    for n in (int(s) for s in args.sizes.split(",")):
        for windowed in (True, False):
            if not windowed and n > args.full_upto:
                continue
            fmt.windowed = windowed
            runs = [replay(agent, n) for _ in range(args.repeats)]
            secs = min(r[0] for r in runs)
            rows.append({"messages": n, "rendering": "window" if windowed else "full",
                         "seconds": round(secs, 4), "ms_per_message": round(1000 * secs / n, 3),
                         "rendered": runs[0][1], "prompt_tokens": runs[0][2]})
    fmt.windowed = True
    for n in {r["messages"] for r in rows}:
        if len({r["prompt_tokens"] for r in rows if r["messages"] == n}) != 1 or not all(
                r["rendered"] for r in rows):
            sys.exit(f"history_replay: the renderings disagree or did no work at {n} messages")
    print(f"{'messages':>9}{'rendering':>10}{'seconds':>10}{'ms/msg':>9}{'rendered':>10}{'tokens':>8}")
    for r in rows:
        print(f"{r['messages']:>9}{r['rendering']:>10}{r['seconds']:>10.3f}{r['ms_per_message']:>9.3f}"
              f"{r['rendered']:>10}{r['prompt_tokens']:>8}")
    window = [r for r in rows if r["rendering"] == "window"]
    growth = window[-1]["ms_per_message"] / max(window[0]["ms_per_message"], 1e-9)
    work = [r["rendered"] / r["messages"] for r in (window[0], window[-1])]
    print(f"window, from {window[0]['messages']} to {window[-1]['messages']} messages: ms per "
          f"message x{growth:.2f}, rendered per message {work[0]:.1f} -> {work[1]:.1f} (linear: flat)")
    print(json.dumps({"bench": "history_replay", "rows": rows, "window_growth": round(growth, 3),
                      "rendered_per_message": [round(w, 2) for w in work],
                      "machine": platform.machine()}))


if __name__ == "__main__":
    main()
