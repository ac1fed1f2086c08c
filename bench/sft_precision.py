"""SFT precision on the CPU: trained rows (and tokens) per second of hatkit's stage 1 in fp32
and under bf16 autocast over fp32 weights (`cpu_bf16`), on the same model, rows, order, steps
and max_length, in one run; and how far the bf16 run's per-step losses stray from fp32's.

Both runs go through `hatkit.train.sft.train` (quick profile, no save), differing only in
`cpu_bf16`. Rows/s = rows trained (steps x batch) / `train_runtime` (the training loop only);
tokens/s = the rows' tokens (TRL's `num_tokens`) / `train_runtime`. A CPU without bf16 matrix
instructions (no AMX, no AVX512-BF16) runs fp32 in both: the bench says so and stops.

    .venv/bin/python bench/sft_precision.py --smoke        # seconds, tiny random model
    .venv/bin/python bench/sft_precision.py --steps 8      # the default model, runs/data

Prints a table, then one JSON object as the last line.
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


class _Losses:
    """A TrainerCallback that keeps each logged step's loss."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        outer = self
        self.values: list[float] = []

        class Keep(TrainerCallback):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
                if logs and "loss" in logs:
                    outer.values.append(float(logs["loss"]))

        self.callback = Keep()


def run(model: Path, data: Path, out: Path, args: argparse.Namespace, bf16: bool) -> dict[str, Any]:
    from hatkit.train import sft
    from hatkit.train.checkpoint import read_meta
    from hatkit.train.config import load_config

    config = load_config("sft", profile="quick", overrides={
        "model": str(model), "dataset_dir": str(data), "mode": args.mode,
        "output_dir": str(out), "max_steps": args.steps, "per_device_train_batch_size": 1,
        "max_length": args.max_length, "save_strategy": "no", "report_to": [],
        "allow_truncation": True, "logging_steps": 1, "disable_tqdm": True, "seed": 0,
        "learning_rate": 2e-4, "cpu_bf16": bf16})
    losses = _Losses()
    final = sft.train(config, resume=False, callbacks=[losses.callback])
    metrics = (read_meta(final) or {})["metrics"]
    return {"seconds": float(metrics["train_runtime"]), "tokens": float(metrics["num_tokens"]),
            "rows": float(args.steps), "bf16": bool(config.bf16), "losses": losses.values}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny random model and data (seconds)")
    add_sft_arguments(parser, steps=8, max_length=3072)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0 = torch's default; 1 steadies a busy machine)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from hatkit.models.precision import cpu_has_bf16_matmul

    if not cpu_has_bf16_matmul():
        print(json.dumps({"bench": "sft_precision", "skipped": "this CPU has no bf16 matrix "
                          "instructions (AMX, AVX512-BF16): cpu_bf16 trains in fp32 here"}))
        return
    with tempfile.TemporaryDirectory(prefix="hatkit-sft-precision-bench-") as tmp:
        root = Path(tmp)
        model, data = sft_inputs(root, args.smoke, args)
        started = time.perf_counter()
        got = {name: run(model, data, root / name, args, bf16)
               for name, bf16 in (("fp32", False), ("bf16", True))}
    assert not got["fp32"]["bf16"] and got["bf16"]["bf16"], "cpu_bf16 did not switch the precision"
    check_work("sft_precision", **{f"{n} {k}": r[k] for n, r in got.items()
                                   for k in ("rows", "tokens", "seconds")})
    for r in got.values():
        r["rows_per_s"] = r["rows"] / r["seconds"]
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
    pairs = list(zip(got["fp32"]["losses"], got["bf16"]["losses"], strict=False))
    rel = [abs(b - a) / max(abs(a), 1e-9) for a, b in pairs]
    speedup = got["bf16"]["rows_per_s"] / got["fp32"]["rows_per_s"]
    print(f"{'run':<6}{'steps':>6}{'tokens':>9}{'seconds':>9}{'rows/s':>9}{'tokens/s':>10}{'last loss':>11}")
    for name, r in got.items():
        print(f"{name:<6}{args.steps:>6}{r['tokens']:>9.0f}{r['seconds']:>9.2f}{r['rows_per_s']:>9.3f}"
              f"{r['tokens_per_s']:>10.1f}{r['losses'][-1] if r['losses'] else float('nan'):>11.4f}")
    print(f"speed-up bf16 / fp32: {speedup:.3f}; per-step loss, bf16 vs fp32: mean relative "
          f"difference {sum(rel) / max(len(rel), 1):.4f}, largest {max(rel, default=0.0):.4f}")
    result: dict[str, Any] = {
        "bench": "sft_precision", "model": "tiny" if args.smoke else args.model, "mode": args.mode,
        "steps": args.steps, "max_length": args.max_length, "threads": args.threads,
        "fp32_tokens_per_s": round(got["fp32"]["tokens_per_s"], 2),
        "bf16_tokens_per_s": round(got["bf16"]["tokens_per_s"], 2),
        "speedup": round(speedup, 4), "tokens": got["fp32"]["tokens"],
        "loss_rel_diff_mean": round(sum(rel) / max(len(rel), 1), 5),
        "loss_rel_diff_max": round(max(rel, default=0.0), 5),
        "fp32_losses": [round(x, 4) for x in got["fp32"]["losses"]],
        "bf16_losses": [round(x, 4) for x in got["bf16"]["losses"]],
        "wall_s": round(time.perf_counter() - started, 1), "machine": platform.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
