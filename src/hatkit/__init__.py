"""hatkit: Harness-Aware Training of tool-calling agents."""

__version__ = "0.1.0"
