"""End-to-end turn latency of the agent (p50/p95/p99, time to first token, tokens/s at
concurrency 1, 2, 4, 8) and decoding modes side by side (greedy vs prompt-lookup speculative
decoding); the same as `hatkit bench latency`. Last line: one JSON object."""

from hatkit.serve.latency import main

if __name__ == "__main__":
    main()
