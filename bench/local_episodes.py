"""Episodes per second of the real default model through the agent loop: naive against
prefix caching plus batching, in one run.

naive      a fresh transformers `generate` per model call: the whole prompt (the ~1,500-token
           rendered harness included) is prefilled every time; episodes run one by one.
cached     LocalModel: the harness prefix's KV cache is computed once and copied into each
           call; episodes run concurrently (Agent.run_many) and their model calls decode in
           one batch with hatkit's decoder. Measured twice: cold (the prefix prefill is paid
           in the run) and warm (it was cached by an earlier run, as in a long-lived server).

Both run the same viewer questions greedily, so replies should match; the script counts the
identical ones and shows the first difference of any that are not (batched fp32 matmuls can
round differently, which flips a near-tie argmax now and then). Goal: at least 4x.
Before any verdict the script checks that every episode ran without a backend error (a baseline
that raises would otherwise be timed as instant fallback replies). `--smoke`: a tiny
random-weight model, two questions, a few tokens (seconds; checks the bench runs, not its goal).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence

from _common import check_episodes, check_work, tiny_local_model

from hatkit import __version__
from hatkit.agent import Agent
from hatkit.agent.trace import Trace
from hatkit.domain import get_domain
from hatkit.harness import load_harness
from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.local import LocalModel
from hatkit.models.streaming import TextSink

BENCH = "local_episodes"

SAMPLE = list(get_domain().sample_messages)
"""The default domain's sample user messages (what the demo asks)."""


class GenerateModel(LocalModel):
    """The naive baseline: plain `model.generate` per request, nothing cached."""

    def _generate_batch(self, reqs: list[ModelRequest],
                        sinks: Sequence[TextSink | None] = ()) -> list[ModelOutput]:
        import torch

        if any(s is not None for s in sinks):
            raise ValueError("the naive baseline does not stream")
        outs = []
        for r in reqs:
            prompt = torch.tensor([list(r.prompt_ids or [])], device=self.model.device)
            t0 = time.perf_counter()
            with torch.inference_mode():
                seq = self.model.generate(prompt, max_new_tokens=r.max_new_tokens, do_sample=False,
                                          pad_token_id=self.pad_id, stop_strings=list(r.stop) or None,
                                          tokenizer=self.tok)
            ids = seq[0, prompt.shape[1]:].tolist()
            eos = self.token_format().eos_id
            if eos in ids:
                ids = ids[: ids.index(eos) + 1]
            outs.append(ModelOutput(self.tok.decode(ids, skip_special_tokens=True), token_ids=ids,
                                    total_s=time.perf_counter() - t0))
        return outs


def _run(model: LocalModel, questions: list[str], batched: bool, max_new_tokens: int,
         what: str) -> tuple[float, list[Trace]]:
    """Seconds for all episodes, and their traces (checked: no backend errors, tokens generated)."""
    harness = load_harness("live_commerce")
    agent = Agent(harness, model)
    object.__setattr__(harness.spec.model, "max_new_tokens", max_new_tokens)  # bench-only override
    started = time.perf_counter()
    traces = agent.run_many(questions) if batched else [agent.run(q) for q in questions]
    seconds = time.perf_counter() - started
    check_episodes(BENCH, traces, what)
    check_work(BENCH, **{f"{what} generated tokens": sum(map(_generated, traces))})
    return seconds, traces


def _generated(trace: Trace) -> int:
    return sum(trace.segment_tokens(s) for s in ("reply", "think_reply", "think_tool", "tool_call"))


def _first_diff(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at char {i}: {a[max(0, i - 20):i + 20]!r} vs {b[max(0, i - 20):i + 20]!r}"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=10, help="how many sample questions (max 10)")
    ap.add_argument("--max-new-tokens", type=int, default=128, help="per model call")
    ap.add_argument("--max-batch", type=int, default=16, help="rows decoded together (cached)")
    ap.add_argument("--smoke", action="store_true", help="tiny random model, 2 questions (seconds)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.questions, args.max_new_tokens = min(args.questions, 2), min(args.max_new_tokens, 8)
    questions = SAMPLE[: max(1, min(args.questions, len(SAMPLE)))]

    import torch

    base = tiny_local_model() if args.smoke else LocalModel.default()
    naive_model = GenerateModel(base.model, base.tok, base.model_id, prefix_cache=False, max_batch=1)
    fast_model = LocalModel(base.model, base.tok, base.model_id, prefix_cache=True,
                            max_batch=args.max_batch)
    naive_s, naive_traces = _run(naive_model, questions, False, args.max_new_tokens, "naive")
    fast_s, fast_traces = _run(fast_model, questions, True, args.max_new_tokens, "cached cold")
    warm_s, warm_traces = _run(fast_model, questions, True, args.max_new_tokens, "cached warm")

    same = [a.final_reply == b.final_reply for a, b in zip(naive_traces, fast_traces, strict=True)]
    gen_naive = sum(map(_generated, naive_traces))
    rows = [("naive (fresh generate, one by one)", naive_s, naive_traces),
            ("prefix cache + batching, cold", fast_s, fast_traces),
            ("prefix cache + batching, warm", warm_s, warm_traces)]
    print(f"{'mode':36} {'seconds':>8} {'episodes/s':>11} {'model calls':>12}")
    for name, secs, traces in rows:
        calls = sum(t.timings.model_calls for t in traces)
        print(f"{name:36} {secs:8.1f} {len(traces) / secs:11.3f} {calls:12d}")
    speedup, warm_speedup = naive_s / fast_s, naive_s / warm_s
    print(f"speed-up cold {speedup:.2f}x, warm {warm_speedup:.2f}x (goal >= 4x: cold "
          f"{'met' if speedup >= 4 else 'NOT met'}, warm {'met' if warm_speedup >= 4 else 'NOT met'}); "
          f"identical greedy replies {sum(same)}/{len(same)}")
    for q, ok, a, b in zip(questions, same, naive_traces, fast_traces, strict=True):
        if not ok:
            print(f"  differs: {q[:50]!r} {_first_diff(a.final_reply, b.final_reply)}")
    print(json.dumps({
        "bench": BENCH, "model": base.model_id, "device": str(base.model.device),
        "questions": len(questions), "max_new_tokens": args.max_new_tokens,
        "naive_s": round(naive_s, 2), "cached_batched_s": round(fast_s, 2),
        "naive_eps": round(len(questions) / naive_s, 4),
        "cached_batched_eps": round(len(questions) / fast_s, 4),
        "cached_batched_warm_s": round(warm_s, 2), "speedup": round(speedup, 2),
        "speedup_warm": round(warm_speedup, 2), "identical_replies": sum(same),
        "generated_tokens_naive": gen_naive,
        "generated_tokens_cached": sum(map(_generated, fast_traces)),
        "model_calls_naive": sum(t.timings.model_calls for t in naive_traces),
        "prefix_tokens": len(Agent(load_harness("live_commerce"), fast_model).prefix_ids or []),
        "hatkit": __version__, "torch": torch.__version__, "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
