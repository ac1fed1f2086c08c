"""SFT throughput: training tokens per second of hatkit's stage 1 (`hatkit.train.sft.train`)
against a plain TRL SFTTrainer script, on the same model, rows, steps, batch and max_length,
in one run (goal: ratio >= 0.95).

Both read the same `hatkit data build` rows (input_ids + loss mask as TRL's assistant_masks),
in the same order (same seed), fp32, no gradient checkpointing. Tokens/s = the tokens the
trainer consumed (TRL's `num_tokens`) / `train_runtime` (the training loop only: model loading
and the final save are outside it). With --repeats > 1 the two alternate and the best of each
is kept, so that neither profits from running second on a warm machine.

    .venv/bin/python bench/sft_throughput.py --smoke           # seconds, tiny random model
    .venv/bin/python bench/sft_throughput.py --steps 4         # the default model, runs/data

A run in which either trainer consumed no tokens stops before the verdict (an exception in
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


def hatkit_run(model: Path, data: Path, out: Path, args: argparse.Namespace) -> dict[str, float]:
    from hatkit.train import sft
    from hatkit.train.checkpoint import read_meta
    from hatkit.train.config import load_config

    config = load_config("sft", profile="quick", overrides={
        "model": str(model), "dataset_dir": str(data), "mode": args.mode,
        "output_dir": str(out), "max_steps": args.steps, "per_device_train_batch_size": args.batch,
        "max_length": args.max_length, "save_strategy": "no", "report_to": [],
        "allow_truncation": True,  # a speed test: cut rows exactly as the plain TRL run does
        "logging_steps": args.steps, "disable_tqdm": True, "seed": 0, "learning_rate": 1e-5})
    final = sft.train(config, resume=False)
    metrics = (read_meta(final) or {})["metrics"]
    return {"seconds": float(metrics["train_runtime"]), "tokens": float(metrics["num_tokens"])}


def plain_trl_run(model: Path, data: Path, out: Path, args: argparse.Namespace) -> dict[str, float]:
    """What a user would write with TRL alone."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    from hatkit.train.runtime import plain_config

    rows = Dataset.from_parquet(str(data / args.mode / "train.parquet"))
    rows = rows.select_columns(["input_ids", "loss_mask"]).rename_column("loss_mask", "assistant_masks")
    tok = AutoTokenizer.from_pretrained(model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    # plain_config only drops the stale GGUF quantization_config of the embedded model's cache
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32, config=plain_config(model))
    config = SFTConfig(output_dir=str(out), max_steps=args.steps,
                       per_device_train_batch_size=args.batch, max_length=args.max_length,
                       bf16=False, activation_checkpointing=False, use_cpu=True,
                       save_strategy="no", report_to=[], logging_steps=args.steps, disable_tqdm=True,
                       seed=0, learning_rate=1e-5)
    trainer = SFTTrainer(model=lm, args=config, train_dataset=rows, processing_class=tok)
    result = trainer.train()
    tokens = [h["num_tokens"] for h in trainer.state.log_history if "num_tokens" in h]
    return {"seconds": float(result.metrics["train_runtime"]), "tokens": float(tokens[-1])}


def tiny_setup(root: Path) -> tuple[Path, Path]:
    """A tiny random-weight checkpoint and a tiny dataset (from the test helpers)."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    sys.path[:0] = [str(tests), str(tests / "train")]
    from train_helpers import make_dataset, save_tiny_checkpoint

    return save_tiny_checkpoint(root / "model"), make_dataset(root / "data", n=16)


def add_sft_arguments(parser: argparse.ArgumentParser, *, steps: int, max_length: int) -> None:
    """The arguments every SFT bench takes: the model, its data and mode, steps, max_length."""
    parser.add_argument("--model", default="local", help="'local' or a checkpoint folder")
    parser.add_argument("--data", type=Path, default=Path("runs/data"), help="hatkit data build output")
    parser.add_argument("--mode", default="hsa", choices=("hsa", "fixed"))
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--max-length", type=int, default=max_length)


def sft_inputs(root: Path, tiny: bool, args: argparse.Namespace) -> tuple[Path, Path]:
    """(model, data) to train: the tiny ones (max_length capped at 256) or `--model`/`--data`."""
    from hatkit.train.checkpoint import resolve_model

    if tiny:
        args.max_length = min(args.max_length, 256)
        return tiny_setup(root)
    return resolve_model(args.model), args.data


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", "--tiny", dest="tiny", action="store_true",
                        help="tiny random model and data (seconds)")
    add_sft_arguments(parser, steps=4, max_length=1792)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="alternate runs; best of each kept")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="hatkit-sft-bench-") as tmp:
        root = Path(tmp)
        model, data = sft_inputs(root, args.tiny, args)
        best: dict[str, dict[str, float]] = {}
        started = time.perf_counter()
        for i in range(args.repeats):
            order = [("hatkit", hatkit_run), ("plain_trl", plain_trl_run)]
            for name, fn in order if i % 2 == 0 else order[::-1]:
                got = fn(model, data, root / f"{name}-{i}", args)
                got["tokens_per_s"] = got["tokens"] / max(got["seconds"], 1e-9)
                if name not in best or got["tokens_per_s"] > best[name]["tokens_per_s"]:
                    best[name] = got
    check_work("sft_throughput", **{f"{n} tokens": r["tokens"] for n, r in best.items()},
               **{f"{n} seconds": r["seconds"] for n, r in best.items()})
    ratio = best["hatkit"]["tokens_per_s"] / best["plain_trl"]["tokens_per_s"]
    print(f"{'trainer':<12}{'steps':>6}{'tokens':>9}{'seconds':>9}{'tokens/s':>10}")
    for name, r in best.items():
        print(f"{name:<12}{args.steps:>6}{r['tokens']:>9.0f}{r['seconds']:>9.2f}{r['tokens_per_s']:>10.1f}")
    print(f"ratio hatkit / plain TRL: {ratio:.3f} (goal >= 0.95)")
    result: dict[str, Any] = {
        "bench": "sft_throughput", "model": "tiny" if args.tiny else args.model,
        "mode": args.mode, "steps": args.steps, "batch": args.batch, "max_length": args.max_length,
        "repeats": args.repeats, "hatkit_tokens_per_s": round(best["hatkit"]["tokens_per_s"], 2),
        "plain_trl_tokens_per_s": round(best["plain_trl"]["tokens_per_s"], 2),
        "tokens": best["hatkit"]["tokens"], "ratio": round(ratio, 4), "goal": 0.95,
        "ok": ratio >= 0.95, "wall_s": round(time.perf_counter() - started, 1),
        "machine": platform.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
