"""End-to-end turn latency of the agent (p50/p95/p99, time to first token, tokens/s at
concurrency 1, 2, 4, 8, peak RSS) and decoding modes side by side (greedy, prompt-lookup
speculative decoding, and assisted decoding with a draft model via --draft-model PATH or
--draft-layers N); `--url` measures a running server over SSE. The same as
`hatkit bench latency`. `--smoke`: every path (in-process with a draft, then `--url` against
an in-process server) on a tiny random-weight model, small sizes. Last line: one JSON object."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from _common import tiny_local_model

from hatkit.serve.latency import main as latency_main

SMOKE = ["--questions", "2", "--concurrency", "1,2", "--max-new-tokens", "6", "--domain-prompts",
         "1", "--domain-tokens", "6", "--draft-layers", "1", "--reply-prompts", "0"]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--smoke" not in args:
        latency_main(args)
        return
    args.remove("--smoke")
    model = tiny_local_model()
    import tempfile

    from hatkit.models.mtp import MTPHeads

    with tempfile.TemporaryDirectory() as tmp:  # untrained MTP heads: the mtp path runs too
        heads = MTPHeads.for_target(model.model, range(model.model.config.vocab_size), num_heads=2)
        latency_main([*SMOKE, "--heads", str(heads.save(Path(tmp) / "heads")), "--compare-confidence", "0",
                      *args], base=model)

    from hatkit.harness import load_harness
    from hatkit.serve.app import create_app
    from hatkit.sim.tool_server import running_app

    with running_app(create_app(load_harness("live_commerce"), model)) as url:
        latency_main(["--url", url, "--questions", "2", "--concurrency", "1,2", *args])


if __name__ == "__main__":
    main()
