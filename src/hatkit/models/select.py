"""Turn a `--model` string into a backend, so every command accepts the same forms."""

from __future__ import annotations

from pathlib import Path

from .base import ChatModel

MODEL_HELP = ("'local' (the embedded default model), a local checkpoint folder, or "
              "'openai:URL#MODEL' for an OpenAI-compatible server, e.g. "
              "openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-0.6B")


def load_model(spec: str = "local", *, prefix_cache: bool = True, max_batch: int = 8) -> ChatModel:
    """Build the backend named by `spec` (see MODEL_HELP); raises ValueError if unusable."""
    if spec == "local":
        from .local import LocalModel

        return LocalModel.default(prefix_cache=prefix_cache, max_batch=max_batch)
    if spec.startswith("openai:"):
        from .openai_compat import OpenAICompatibleModel

        url, _, served = spec.removeprefix("openai:").partition("#")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"'{spec}': expected openai:http(s)://HOST[:PORT]/v1#MODEL")
        return OpenAICompatibleModel(base_url=url, model=served or "default")
    path = Path(spec.removeprefix("local:"))
    if (path / "config.json").is_file():
        from .local import LocalModel

        return LocalModel.from_pretrained(path, prefix_cache=prefix_cache, max_batch=max_batch)
    raise ValueError(f"unknown model '{spec}': use {MODEL_HELP}")
