"""End-to-end turn latency of the agent (p50/p95/p99, time to first token, tokens/s at
concurrency 1, 2, 4, 8, peak RSS) and decoding modes side by side (greedy, prompt-lookup
speculative decoding, and assisted decoding with a draft model via --draft-model PATH or
--draft-layers N); `--url` measures a running server over SSE. The same as
`hatkit bench latency`. Last line: one JSON object."""

from hatkit.serve.latency import main

if __name__ == "__main__":
    main()
