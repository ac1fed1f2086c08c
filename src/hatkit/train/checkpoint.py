"""Checkpoint helpers shared by the three training stages (sft, opd, rl).

Every stage ends in `output_dir/final`: a plain Hugging Face model folder (LoRA merged) plus
tokenizer, with `hatkit_checkpoint.json` beside the weights, so that any checkpoint says which
model it came from, which data and harnesses trained it, and with which config. The final
folder is written under a temporary name and renamed into place: a killed run never leaves a
half-written `final/` that a later run would mistake for a finished stage.

Intermediate checkpoints are TRL/transformers' own `checkpoint-N` folders; `last_checkpoint`
finds the newest one for `trainer.train(resume_from_checkpoint=...)`.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..models.cache import sha256_file

META_FILE = "hatkit_checkpoint.json"
FINAL = "final"
LOCAL = "local"


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]


def is_hub_id(spec: str) -> bool:
    """`org/name` that is not an existing local path (e.g. Qwen/Qwen3-0.6B)."""
    return bool(_HUB_ID.match(spec)) and not Path(spec).exists()


def resolve_model(spec: str) -> Path:
    """The folder a stage config's `model` names: "local" = the embedded default model
    (converted once into the cache); "local:PATH" or PATH = a checkpoint folder with a
    config.json; "org/name" = a Hugging Face hub model, fetched into the HF cache once (the
    full profile's Qwen3; needs network access the first time). Raises ValueError with what
    to pass instead."""
    if spec == LOCAL:
        from ..models.default_model import ensure_default_model

        return ensure_default_model()
    if is_hub_id(spec):
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(spec, allow_patterns=_HUB_FILES))
        except Exception as exc:  # noqa: BLE001 - hub/network errors have many types; all mean "not usable"
            raise ValueError(f"model '{spec}': cannot fetch it from the Hugging Face hub "
                             f"({type(exc).__name__}: {exc}); download it where there is "
                             "network access and pass its folder") from None
    path = Path(spec.removeprefix("local:")).expanduser()
    if not (path / "config.json").is_file():
        raise ValueError(f"model '{spec}': no config.json in {path}; pass 'local' (the embedded "
                         "default model), a checkpoint folder (e.g. runs/sft/final) or a hub id")
    return path


def final_dir(output_dir: str | Path) -> Path:
    """Where a stage writes its final checkpoint."""
    return Path(output_dir) / FINAL


def finished_checkpoint(output_dir: str | Path) -> Path | None:
    """`output_dir/final` if the stage finished there (its metadata file exists), else None."""
    final = final_dir(output_dir)
    return final if (final / META_FILE).is_file() else None


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest complete `checkpoint-N` folder transformers saved in `output_dir` (None if
    none), for `trainer.train(resume_from_checkpoint=...)`. Complete = it has
    trainer_state.json, which the Trainer writes last: a folder half-written by a killed run
    is passed over in favour of the one before it."""
    out = Path(output_dir)
    if not out.is_dir():
        return None
    found = []
    for child in out.iterdir():
        match = re.fullmatch(r"checkpoint-(\d+)", child.name)
        if match and child.is_dir() and (child / "trainer_state.json").is_file():
            found.append((int(match.group(1)), child))
    return str(max(found)[1]) if found else None


def read_meta(checkpoint: str | Path) -> dict[str, Any] | None:
    """The `hatkit_checkpoint.json` of a checkpoint folder, or None (e.g. the base model)."""
    path = Path(checkpoint) / META_FILE
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def lineage(model_spec: str, model_path: Path) -> tuple[str, str | None]:
    """(base_model, parent): the original base model of a chain of stages, and the checkpoint
    this stage starts from (None when it starts from the base model itself)."""
    meta = read_meta(model_path)
    if meta is None:
        named = model_spec == LOCAL or is_hub_id(model_spec)
        return (model_spec if named else str(model_path)), None
    return str(meta.get("base_model") or model_path), str(model_path)


def data_manifest(dataset_dir: str | Path, mode: str | None = None,
                  split: str = "train") -> dict[str, Any]:
    """{path, sha256, harness_hashes} of a `hatkit data build` manifest; the harness hashes are
    those of `mode`/`split` (all modes when `mode` is None)."""
    path = Path(dataset_dir) / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; build the data with `hatkit data build`")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    modes: Mapping[str, Any] = manifest.get("modes", {})
    hashes: set[str] = set()
    for name, splits in modes.items():
        if mode is None or name == mode:
            hashes.update(splits.get(split, {}).get("harness_hashes", []))
    return {"path": str(path.resolve()), "sha256": sha256_file(path), "harness_hashes": sorted(hashes)}


def config_dict(config: Any) -> dict[str, Any]:
    """A JSON-safe dict of a TrainingArguments-derived config (tokens and enums as strings)."""
    raw: dict[str, Any] = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))
    return json.loads(json.dumps(raw, default=str))  # type: ignore[no-any-return]


def save_final(model: Any, tokenizer: Any, output_dir: str | Path, *, stage: str,
               model_spec: str, model_path: Path, config: Any, steps: int,
               metrics: Mapping[str, Any], data: Mapping[str, Any] | None = None,
               extra: Mapping[str, Any] | None = None) -> Path:
    """Write `output_dir/final` atomically: weights (a PEFT model is merged first), tokenizer,
    and `hatkit_checkpoint.json` = {stage, base_model, parent, config, data (manifest path +
    sha256), harness_hashes, steps, metrics, created_at, **extra}. Returns the folder."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    base, parent = lineage(model_spec, model_path)
    data = dict(data or {})
    meta = {
        "stage": stage, "base_model": base, "parent": parent, "config": config_dict(config),
        "data": {k: data[k] for k in ("path", "sha256") if k in data} or None,
        "harness_hashes": list(data.get("harness_hashes", [])), "steps": int(steps),
        "metrics": json.loads(json.dumps(dict(metrics), default=str)),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"), **dict(extra or {}),
    }
    final = final_dir(output_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".final-", dir=final.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
        if final.exists():  # an unfinished final (no metadata) from an earlier crash
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
