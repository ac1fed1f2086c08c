"""Shared-prefix SFT: trained rows (and tokens) per second of hatkit's stage 1 with
`share_prefix` off and on, on the same model, rows, steps, batch and max_length, in one run.

Both runs go through `hatkit.train.sft.train` (quick profile, fp32, no save), differing only
in `share_prefix`; the batches of both are ordered by harness (the share_prefix order would
otherwise also change which rows are read), so the two read the same rows. Rows/s = rows
trained (steps x batch) / `train_runtime` (the training loop only); tokens/s = the rows'
tokens (TRL's `num_tokens`, a shared prefix counted once per row) / `train_runtime`. With
--repeats > 1 the two alternate and the best of each is kept.

    .venv/bin/python bench/sft_shared_prefix.py --smoke       # seconds, tiny random model

(The tiny model measures per-call overhead, not compute: share_prefix makes 2 forward calls per
group, so on a busy machine its smoke speed-up is below 1; only the real model's counts.)
    .venv/bin/python bench/sft_shared_prefix.py --steps 4     # the default model, runs/data

A run in which either trained no rows or tokens stops before the figures (an exception in
either propagates). Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import check_work
from sft_throughput import add_sft_arguments, sft_inputs  # the throughput bench's tiny model and data


def run(model: Path, data: Path, out: Path, args: argparse.Namespace, share: bool) -> dict[str, float]:
    from hatkit.train import sft
    from hatkit.train.checkpoint import read_meta
    from hatkit.train.config import load_config

    config = load_config("sft", profile="quick", overrides={
        "model": str(model), "dataset_dir": str(data), "mode": args.mode,
        "output_dir": str(out), "max_steps": args.steps, "per_device_train_batch_size": args.batch,
        "max_length": args.max_length, "save_strategy": "no", "report_to": [],
        "allow_truncation": True, "logging_steps": args.steps, "disable_tqdm": True, "seed": 0,
        "learning_rate": 1e-5, "share_prefix": share,
        "share_prefix_min_tokens": args.min_shared})
    if share:
        final = sft.train(config, resume=False)
    else:  # the same rows in the same order: keep harness_hash, sample as share_prefix does
        import copy

        from hatkit.train import shared_prefix

        load_rows, build_trainer = sft.load_rows, sft.build_trainer
        with_hash = copy.copy(config)
        with_hash.share_prefix = True

        def build(config: Any, model: Any, tok: Any, rows: Any, callbacks: Any = None) -> Any:
            trainer = build_trainer(config, model, tok, rows, callbacks)
            keys = shared_prefix.dataset_keys(trainer.train_dataset)  # after TRL's preparation
            trainer._get_train_sampler = lambda train_dataset=None: (
                shared_prefix.HarnessGroupedSampler(keys, config.per_device_train_batch_size,
                                                    config.seed))
            return trainer

        sft.load_rows = lambda c, raw=None: load_rows(with_hash, raw)  # type: ignore[assignment]
        sft.build_trainer = build  # type: ignore[assignment]
        try:
            final = sft.train(config, resume=False)
        finally:
            sft.load_rows, sft.build_trainer = load_rows, build_trainer  # type: ignore[assignment]
    metrics = (read_meta(final) or {})["metrics"]
    return {"seconds": float(metrics["train_runtime"]), "tokens": float(metrics["num_tokens"]),
            "rows": float(args.steps * args.batch)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny random model and data (seconds)")
    add_sft_arguments(parser, steps=4, max_length=3072)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--min-shared", type=int, default=128, help="share_prefix_min_tokens")
    parser.add_argument("--repeats", type=int, default=1, help="alternate runs; best of each kept")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0 = torch's default; 1 steadies a busy machine)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="hatkit-sft-prefix-bench-") as tmp:
        root = Path(tmp)
        model, data = sft_inputs(root, args.smoke, args)
        if args.smoke:
            args.min_shared = min(args.min_shared, 8)
        best: dict[str, dict[str, float]] = {}
        started = time.perf_counter()
        for i in range(args.repeats):
            order = [("plain", False), ("share_prefix", True)]
            for name, share in order if i % 2 == 0 else order[::-1]:
                got = run(model, data, root / f"{name}-{i}", args, share)
                got["rows_per_s"] = got["rows"] / max(got["seconds"], 1e-9)
                got["tokens_per_s"] = got["tokens"] / max(got["seconds"], 1e-9)
                if name not in best or got["rows_per_s"] > best[name]["rows_per_s"]:
                    best[name] = got
    check_work("sft_shared_prefix", **{f"{n} {k}": r[k] for n, r in best.items()
                                       for k in ("rows", "tokens", "seconds")})
    speedup = best["share_prefix"]["rows_per_s"] / best["plain"]["rows_per_s"]
    print(f"{'run':<14}{'steps':>6}{'rows':>6}{'tokens':>9}{'seconds':>9}{'rows/s':>9}{'tokens/s':>10}")
    for name, r in best.items():
        print(f"{name:<14}{args.steps:>6}{r['rows']:>6.0f}{r['tokens']:>9.0f}{r['seconds']:>9.2f}"
              f"{r['rows_per_s']:>9.3f}{r['tokens_per_s']:>10.1f}")
    print(f"speed-up share_prefix / plain: {speedup:.3f}")
    result: dict[str, Any] = {
        "bench": "sft_shared_prefix", "model": "tiny" if args.smoke else args.model,
        "mode": args.mode, "steps": args.steps, "batch": args.batch, "max_length": args.max_length,
        "min_shared": args.min_shared, "repeats": args.repeats, "threads": args.threads,
        "plain_rows_per_s": round(best["plain"]["rows_per_s"], 4),
        "share_prefix_rows_per_s": round(best["share_prefix"]["rows_per_s"], 4),
        "plain_tokens_per_s": round(best["plain"]["tokens_per_s"], 2),
        "share_prefix_tokens_per_s": round(best["share_prefix"]["tokens_per_s"], 2),
        "tokens": best["share_prefix"]["tokens"], "speedup": round(speedup, 4),
        "wall_s": round(time.perf_counter() - started, 1), "machine": platform.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
