"""What lies under the runs folder: runs, and the kind of each JSONL file in them.

Every path a page receives is relative to the runs folder and resolved through `inside`, so a
request can never read a file outside it (`../`, absolute paths and symlinks out are refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import HTTPException

KINDS = ("traces", "verdicts", "journal", "labels", "jsonl")
JOURNAL_NAME = "journal.jsonl"
REPORTS = ("report.html", "report.md")


def inside(root: Path, rel: str) -> Path:
    """`root / rel`, refused (404) unless it stays inside `root` after resolving links."""
    if not rel or "\x00" in rel:
        raise HTTPException(404, "no such file")
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise HTTPException(404, "no such file")
    return path


def kind_of(path: Path) -> str:
    """traces, verdicts, journal, labels or jsonl, from the file's name and first record."""
    if path.name == JOURNAL_NAME:
        return "journal"
    try:
        with path.open(encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        data = json.loads(first) if first else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return "jsonl"
    if not isinstance(data, dict):
        return "jsonl"
    if "spans" in data and "harness_hash" in data:
        return "traces"
    if "judge_hash" in data and "trace_id" in data:
        return "verdicts"
    if {"trace_id", "dimension", "label", "annotator"} <= data.keys():
        return "labels"
    return "jsonl"


@dataclass
class Run:
    """One folder under the runs folder that holds something to look at."""

    name: str
    """Its path relative to the runs folder (POSIX)."""
    reports: list[str] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)
    """kind -> paths relative to the runs folder."""

    def of(self, kind: str) -> list[str]:
        return self.files.get(kind, [])


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def scan_run(root: Path, folder: Path) -> Run:
    run = Run(_rel(root, folder) if folder != root else ".")
    run.reports = [_rel(root, folder / r) for r in REPORTS if (folder / r).is_file()]
    for path in sorted(folder.glob("*.jsonl")):
        run.files.setdefault(kind_of(path), []).append(_rel(root, path))
    return run


def list_runs(root: Path, max_depth: int = 3) -> list[Run]:
    """Folders (to `max_depth` below `root`) with a report or a JSONL file, newest first.

    Harness variant folders and hidden folders are skipped: they hold no run artefacts.
    """
    found: list[tuple[float, Run]] = []
    if not root.is_dir():
        return []
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        run = scan_run(root, folder)
        if run.reports or run.files:
            found.append((folder.stat().st_mtime, run))
        if depth < max_depth:
            stack.extend((d, depth + 1) for d in folder.iterdir()
                         if d.is_dir() and not d.name.startswith(".") and d.name != "variants"
                         and not (d / "harness.yaml").is_file())
    return [r for _, r in sorted(found, key=lambda x: (-x[0], x[1].name))]


def sibling_verdicts(traces: Path) -> list[Path]:
    """Verdict files beside a traces file (where `hatkit judge run --out` is usually pointed)."""
    return [p for p in sorted(traces.parent.glob("*.jsonl")) if p != traces and kind_of(p) == "verdicts"]
