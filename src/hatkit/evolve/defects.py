"""Claim 4 of the published system: with the model frozen, harness evolution reduces HAT's
test error about 3x as much as fixed-harness SFT's. Measured here on a defective starting
harness whose defects are written down before the run (a domain's `defects.yaml`): each model
evolves its own copy of it (rule-based proposer, auto-approval, the same sizes and seeds), and
the two test-error reductions are compared on the same test questions, as a difference with a
paired bootstrap interval (never a ratio of two small numbers).
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..harness import load_harness
from ..harness.hashing import harness_files


@dataclass(frozen=True)
class Defect:
    id: str
    file: str
    find: str
    replace: str
    why: str
    fixed_by: str = ""


def load_defects(path: Path) -> list[Defect]:
    data = yaml.safe_load(path.read_text("utf-8")) or {}
    return [Defect(**d) for d in data.get("defects", [])]


def plant_defects(base: Path, dest: Path, defects: Sequence[Defect]) -> Path:
    """A git repository at `dest` whose `harness/` is `base` with `defects` applied (each must
    match exactly once) and committed; returns the harness folder."""
    harness = dest / "harness"
    if dest.exists():
        raise FileExistsError(f"{dest} exists; plant the defects into a new folder")
    for path in harness_files(base):
        (harness / path.relative_to(base)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, harness / path.relative_to(base))
    for d in defects:
        target = harness / d.file
        text = target.read_text("utf-8")
        if text.count(d.find) != 1:
            raise ValueError(
                f"defect '{d.id}': {d.file} holds '{d.find}' {text.count(d.find)} times, not once"
            )
        target.write_text(text.replace(d.find, d.replace), "utf-8")
    load_harness(harness)  # still a valid harness: the defects are in what it says, not its form
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [
            "-c",
            "user.name=hatkit",
            "-c",
            "user.email=hatkit@localhost",
            "commit",
            "-q",
            "-m",
            "defective starting harness: " + ", ".join(d.id for d in defects),
        ],
    ):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return harness


def error_reduction_difference(
    reports: Mapping[str, Mapping[str, Any]], a: str, b: str, *, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """(b's test-error reduction) - (a's), paired by test question, with a 95% bootstrap
    interval. A reduction is error before minus error after, in points of error rate."""
    items_a, items_b = reports[a]["test_items"], reports[b]["test_items"]
    if [x["question_id"] for x in items_a] != [x["question_id"] for x in items_b]:
        raise ValueError("the two evolution runs were tested on different questions")
    n = len(items_a)

    def reduction(items: Sequence[Mapping[str, Any]], idx: Sequence[int]) -> float:
        return sum(int(not items[i]["before"]) - int(not items[i]["after"]) for i in idx) / len(idx)

    every = range(n)
    diff = reduction(items_b, every) - reduction(items_a, every)
    rng = random.Random(seed)
    draws = sorted(
        reduction(items_b, s) - reduction(items_a, s)
        for s in ([rng.randrange(n) for _ in every] for _ in range(resamples))
    )
    return {
        "a": a,
        "b": b,
        "n": n,
        "reduction_a": round(reduction(items_a, every), 4),
        "reduction_b": round(reduction(items_b, every), 4),
        "difference": round(diff, 4),
        "lo": round(draws[int(0.025 * resamples)], 4),
        "hi": round(draws[int(0.975 * resamples) - 1], 4),
    }
