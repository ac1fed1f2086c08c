"""llama.cpp as the decode bench's anchor (issue 18): the same default model, exported by
`hatkit export gguf` at the same precisions (f32, bf16, q8_0 against hatkit's int8), decoding
the same batch-1 prompt greedily on the same threads.

Optional: measured only where `llama_cpp` (the llama-cpp-python package, built from source;
not a hatkit dependency) imports. Its high-level API decodes one sequence, so the anchor is
batch 1 only. tokens/s counts the decode after the first token (the prompt's prefill apart,
as hatkit's prefix cache keeps it apart); `tokens` are its greedy tokens, for decode.py to
compare with hatkit's fp32 ones (a check of the export as much as of the numbers).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

DTYPES = {"fp32": "f32", "bf16": "bf16", "int8": "q8_0"}
"""hatkit precision -> the GGUF weight type it is compared with."""


def available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def anchor(checkpoint: Path, prompt: list[int], new: int, threads: int) -> dict[str, dict[str, Any]]:
    """{hatkit precision: {tokens_per_s, prefill_s, gguf_mb, tokens}} for each of DTYPES."""
    from llama_cpp import Llama

    from hatkit.export.gguf_export import export_gguf

    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="hatkit-anchor-") as tmp:
        for prec, dtype in DTYPES.items():
            path = Path(tmp) / f"model-{dtype}.gguf"
            export_gguf(checkpoint, path, dtype=dtype)
            llm = Llama(model_path=str(path), n_ctx=len(prompt) + new + 8, n_threads=threads,
                        n_threads_batch=threads, n_batch=512, verbose=False)
            tokens: list[int] = []
            first = 0.0
            start = time.perf_counter()
            for tok in llm.generate(prompt, top_k=1, temp=0.0, repeat_penalty=1.0, reset=True):
                if not tokens:
                    first = time.perf_counter()
                tokens.append(int(tok))
                if len(tokens) == new:
                    break
            end = time.perf_counter()
            out[prec] = {"tokens_per_s": round((len(tokens) - 1) / (end - first), 2),
                         "prefill_s": round(first - start, 3), "gguf_mb": round(path.stat().st_size / 1e6, 1),
                         "tokens": tokens}
            del llm
    return out
