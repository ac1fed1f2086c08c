"""The simulation environment: viewer simulator, sandboxed tools with fault injection,
harness-state augmentation, the oracle policy and the episode runner."""
