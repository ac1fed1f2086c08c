"""Turn a `--model` string into a backend, so every command accepts the same forms."""

from __future__ import annotations

from pathlib import Path

from .base import ChatModel
from .compiled_step import COMPILED_SUFFIX
from .precision import AUTO, PRECISIONS

MODEL_HELP = ("'local' (the embedded default model), a local checkpoint folder, or "
              "'openai:URL#MODEL' for an OpenAI-compatible server, e.g. "
              "openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-0.6B, or 'llamacpp:FILE.gguf' (a file "
              "written by `hatkit export gguf`, run by llama.cpp; needs the llamacpp extra); "
              "a local model takes a weight "
              "precision after '@': local@int8 or CKPT@int8 (int8 Linear layers on the CPU: fewer bytes "
              "per token, outputs differ slightly from fp32), @int8h (int8 with an fp32 output layer), "
              "@int8w (int8 weights rounded by GPTQ, bf16 inputs: needs a CPU with bf16 instructions), "
              "@bf16, @fp32 (the CPU default), or @auto (bf16 where the CPU multiplies bf16 in "
              "hardware or on a GPU, else fp32); a final '+compiled' (local@bf16+compiled) runs "
              "its decode steps compiled by torch.compile: 1.4-1.8x faster decoding in bf16 and "
              "int8w, 1.2x in fp32, after about a minute of compiling per batch size, in each process")


def split_precision(spec: str) -> tuple[str, str | None]:
    """'local@int8' -> ('local', 'int8'); a spec without a known precision suffix is unchanged
    (a path may contain '@')."""
    base, at, suffix = spec.rpartition("@")
    return (base, suffix) if at and (suffix in PRECISIONS or suffix == AUTO) else (spec, None)


def split_compiled(spec: str) -> tuple[str, bool]:
    """'local@bf16+compiled' -> ('local@bf16', True); any other spec -> (spec, False)."""
    return (spec.removesuffix(COMPILED_SUFFIX), True) if spec.endswith(COMPILED_SUFFIX) else (spec, False)


def load_model(spec: str = "local", *, prefix_cache: bool = True, max_batch: int = 8) -> ChatModel:
    """Build the backend named by `spec` (see MODEL_HELP); raises ValueError if unusable."""
    rest, compiled = split_compiled(spec)
    name, precision = split_precision(rest)
    local = {"prefix_cache": prefix_cache, "max_batch": max_batch, "precision": precision,
             "compiled": compiled}
    if compiled and name.startswith(("openai:", "llamacpp:")):
        raise ValueError(f"'{spec}': '{COMPILED_SUFFIX}' applies to a local model only (the embedded "
                         "default or a checkpoint folder)")
    if name == "local":
        from .local import LocalModel

        return LocalModel.default(**local)
    if name.startswith("openai:"):
        from .openai_compat import OpenAICompatibleModel

        if precision is not None:
            raise ValueError(f"'{spec}': a weight precision applies to a local model only (the "
                             "server chooses its own)")
        url, _, served = name.removeprefix("openai:").partition("#")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"'{spec}': expected openai:http(s)://HOST[:PORT]/v1#MODEL")
        return OpenAICompatibleModel(base_url=url, model=served or "default")
    if name.startswith("llamacpp:"):
        from .llamacpp import LlamaCppModel

        if precision is not None:
            raise ValueError(f"'{spec}': a GGUF file's precision is the one it was exported in "
                             "(hatkit export gguf --dtype)")
        return LlamaCppModel.from_spec(name)
    path = Path(name.removeprefix("local:"))
    if (path / "config.json").is_file():
        from .local import LocalModel

        return LocalModel.from_pretrained(path, **local)
    raise ValueError(f"unknown model '{spec}': use {MODEL_HELP}")
