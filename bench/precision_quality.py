"""Is a cheaper weight precision "not worse"? A trained checkpoint's live_qa in fp32 and in each
cheaper precision (int8w, int8, bf16, int8h) on the same cases, paired case by case (issue 18).

For each precision: live_qa success, its paired difference from fp32 with the bootstrap 95%
interval (`hatkit.evals.paired`), cases won and lost, the share of replies identical to fp32's,
the share of fp32's reply tokens that lead identically (tokens of the checkpoint's tokenizer up
to the first difference, over all replies), and the suite's wall time per item (what an
evaluation saves). "Not worse" (the issue's bar): the interval's lower bound >= -0.05.
Greedy decoding, the cpu profile's evaluation settings (batches of 16, the same token caps).
`--gguf FILE` adds the checkpoint exported by `hatkit export gguf` (f32, bf16, q8_0), decoded
by llama.cpp: whether the file a llama.cpp or Ollama user deploys answers as well.

`--parallel` runs the rows side by side, one process and one thread each.
`--smoke`: the tests' tiny random-weight model and 2 cases (checks the bench runs, not the bar).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import check_work, tiny_local_model

from hatkit import __version__
from hatkit.agent import Trace, read_traces
from hatkit.evals import run_suites
from hatkit.evals.paired import compare
from hatkit.evals.result import CPU_SETTINGS
from hatkit.models.select import load_model

BENCH = "precision_quality"
BAR = -0.05
"""The lowest acceptable lower bound of the paired success difference against fp32."""


def _replies(trace: Trace) -> str:
    return "\n".join(s.text for s in trace.spans if s.segment == "reply")


def leading_agreement(tok: Any, base: Sequence[str], other: Sequence[str]) -> float:
    """Share of `base`'s reply tokens that `other` repeats before the first difference."""
    same = total = 0
    for a, b in zip(base, other, strict=True):
        ta, tb = tok.encode(a, add_special_tokens=False), tok.encode(b, add_special_tokens=False)
        total += len(ta)
        k = 0
        while k < min(len(ta), len(tb)) and ta[k] == tb[k]:
            k += 1
        same += k
    return same / total if total else 1.0


def run_one(model: Any, n: int, out: Path) -> tuple[dict[str, Any], list[str], float]:
    start = time.perf_counter()
    run_suites(["live_qa"], model, sizes={"live_qa": n}, out_dir=out, settings=CPU_SETTINGS)
    seconds = time.perf_counter() - start
    result = json.loads((out / "live_qa.json").read_text())
    replies = [_replies(t) for t in read_traces(out / "live_qa.traces.jsonl")]
    return result, replies, seconds


def _evaluate(prec: str, model_spec: str | None, n: int, out: Path, threads: int) -> tuple[Any, ...]:
    """One row: load the model in `prec` and run live_qa (in a worker process with --parallel)."""
    if threads:
        import torch

        torch.set_num_threads(threads)
    if model_spec is None:
        model = tiny_local_model(precision=prec, max_batch=CPU_SETTINGS.batch_size)
    elif prec.startswith("llamacpp:"):
        model = load_model(prec)
    else:
        model = load_model(f"{model_spec}@{prec}", max_batch=CPU_SETTINGS.batch_size)
    return run_one(model, n, out)


def _tokenizer(spec: str) -> Any:
    from transformers import AutoTokenizer

    from hatkit.models.default_model import ensure_default_model

    folder = ensure_default_model(log=lambda _m: None) if spec == "local" else Path(spec)
    return AutoTokenizer.from_pretrained(folder)


def _short(row: str) -> str:
    """A row's label: the precision, or a GGUF file's name."""
    return Path(row.removeprefix("llamacpp:")).name if row.startswith("llamacpp:") else row


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="a trained checkpoint folder (its final/), or 'local'")
    ap.add_argument("--precisions", default="int8w,int8,bf16", help="compared with fp32, comma-separated "
                    "('' for none, e.g. with --gguf)")
    ap.add_argument("--gguf", action="append", default=[], metavar="FILE",
                    help="also a GGUF file of the same checkpoint (`hatkit export gguf`) run by "
                    "llama.cpp (`--model llamacpp:FILE`; needs the llamacpp extra); repeatable")
    ap.add_argument("--n", type=int, default=60, help="live_qa cases")
    ap.add_argument("--parallel", action="store_true", help="evaluate the precisions side by side, "
                    "one process with one thread each (seconds per item stay comparable; needs a "
                    "core per precision)")
    ap.add_argument("--smoke", action="store_true", help="tiny random-weight model, 2 cases")
    args = ap.parse_args(argv)
    if not args.smoke and not args.model:
        ap.error("--model CKPT is required (or --smoke)")
    precisions = ["fp32"] + [p.strip() for p in args.precisions.split(",") if p.strip() not in ("", "fp32")]
    precisions += [f"llamacpp:{f}" for f in args.gguf]
    n = 2 if args.smoke else args.n

    spec = None if args.smoke else args.model
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hatkit-precision-") as tmp:
        jobs = [(prec, spec, n, Path(tmp) / f"run{i}", 1 if args.parallel else 0)
                for i, prec in enumerate(precisions)]
        if args.parallel:
            ctx = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(len(jobs), mp_context=ctx) as pool:
                rows = dict(zip(precisions, pool.map(_evaluate, *zip(*jobs, strict=True)), strict=True))
        else:
            rows = {job[0]: _evaluate(*job) for job in jobs}
    tok = tiny_local_model().tok if args.smoke else _tokenizer(args.model)
    base, base_replies, base_s = rows["fp32"]
    check_work(BENCH, cases=base["n"], replies=sum(bool(r) for r in base_replies))

    out: dict[str, Any] = {"bench": BENCH, "smoke": args.smoke, "model": args.model or "tiny", "n": n,
                           "fp32": {"success": base["metrics"]["success"], "s_per_item": base_s / n},
                           "bar": BAR, "hatkit": __version__, "python": platform.python_version()}
    print(f"{'precision':>9} {'success':>8} {'diff vs fp32':>22} {'won':>4} {'lost':>4} {'identical':>9} "
          f"{'lead tokens':>11} {'s/item':>7} {'speed-up':>8}")
    print(f"{'fp32':>9} {base['metrics']['success']:8.3f} {'':>22} {'':>4} {'':>4} {'':>9} {'':>11} "
          f"{base_s / n:7.2f} {'':>8}")
    for prec in precisions[1:]:
        result, replies, seconds = rows[prec]
        p = compare(base, result)
        same = sum(a == b for a, b in zip(base_replies, replies, strict=True)) / len(replies)
        lead = leading_agreement(tok, base_replies, replies)
        print(f"{_short(prec):>9} {p.other_rate:8.3f} {p.diff:+7.3f} [{p.lo:+.3f}, {p.hi:+.3f}] "
              f"{p.other_only:4d} {p.base_only:4d} {same:9.2f} {lead:11.2f} {seconds / n:7.2f} "
              f"{base_s / seconds:7.2f}x")
        out[prec] = {"success": p.other_rate, "diff": p.diff, "lo": p.lo, "hi": p.hi, "won": p.other_only,
                     "lost": p.base_only, "identical_replies": same, "leading_token_agreement": lead,
                     "s_per_item": seconds / n, "speedup": base_s / seconds, "not_worse": p.lo >= BAR}
    verdicts = {prec: out[prec]["not_worse"] for prec in precisions[1:]}
    said = ", ".join(f"{_short(k)} {'yes' if v else 'NO'}" for k, v in verdicts.items())
    print(f"not worse (lower bound >= {BAR:+.2f}): {said}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
