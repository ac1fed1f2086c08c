"""Shared pieces of the training tests: a tiny checkpoint on disk and a tiny `hatkit data
build`-shaped dataset whose rows come from real Trace training views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hatkit.agent.trace import Span, Trace
from hatkit.train.dataset import trace_row
from tiny import tiny_llama, tiny_tokenizer

HASHES = {"hsa": ["a" * 64, "b" * 64], "fixed": ["f" * 64]}


def save_tiny_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A tiny random-weight Llama + the tiny tokenizer, saved like a real checkpoint."""
    tok = tiny_tokenizer()
    model = tiny_llama(len(tok), seed=seed)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def make_trace(i: int, tok: Any, harness_hash: str) -> Trace:
    """One short episode with every segment: system, user, think_tool, tool_call,
    tool_output, think_reply, reply (ids tokenised span by span, as a backend feeds them)."""
    parts = [
        ("system", "harness", f"<|im_start|>system\nYou host shop {i}.<|im_end|>\n"),
        ("user", "viewer", f"<|im_start|>user\nPrice of item {i}?<|im_end|>\n<|im_start|>assistant\n"),
        ("think_tool", "model", f"<think>look up {i}</think>"),
        ("tool_call", "model",
         f'<tool_call>{{"name":"price","arguments":{{"id":{i}}}}}</tool_call><|im_end|>\n'),
        ("tool_output", "tool",
         f'<|im_start|>tool\n{{"price": {10 + i}}}<|im_end|>\n<|im_start|>assistant\n'),
        ("think_reply", "model", "<think>answer</think>"),
        ("reply", "model", f"It costs {10 + i} dollars.<|im_end|>\n"),
    ]
    spans = [Span(segment=seg, text=text, token_ids=tok.encode(text, add_special_tokens=False),
                  turn=0 if seg in ("system", "user", "think_tool", "tool_call") else 1, source=src)
             for seg, src, text in parts]
    return Trace(harness_name="tiny", harness_hash=harness_hash, model_id="tiny", spans=spans,
                 final_reply=parts[-1][2], meta={"question_id": f"q{i}", "split": "train"})


def make_dataset(folder: Path, n: int = 8) -> Path:
    """`<folder>/{hsa,fixed}/train.parquet` + manifest.json, like `hatkit data build`."""
    from datasets import Dataset

    tok = tiny_tokenizer()
    manifest: dict[str, Any] = {"seed": 0, "modes": {}}
    for mode, hashes in HASHES.items():
        rows = [trace_row(make_trace(i, tok, hashes[i % len(hashes)]), []) for i in range(n)]
        (folder / mode).mkdir(parents=True, exist_ok=True)
        Dataset.from_list(rows).to_parquet(str(folder / mode / "train.parquet"))
        manifest["modes"][mode] = {"train": {"path": f"{mode}/train.parquet", "rows": n,
                                             "harness_hashes": hashes}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def tiny_sft_overrides(tmp: Path, model: Path, data: Path, **extra: Any) -> dict[str, Any]:
    """Config overrides that make stage 1 run in about a second on the tiny model."""
    return {"model": str(model), "dataset_dir": str(data), "output_dir": str(tmp / "sft"),
            "max_steps": 3, "per_device_train_batch_size": 2, "learning_rate": 1e-2,
            "max_length": 256, "logging_steps": 1, "save_steps": 2, "warmup_steps": 0,
            "report_to": [], **extra}
