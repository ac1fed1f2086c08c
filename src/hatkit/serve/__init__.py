"""HTTP serving of a harness agent: OpenAI-compatible chat, live messages, metrics, hot swap."""
