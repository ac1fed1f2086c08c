"""What lies under the runs folder: runs, and the kind of each JSONL file in them.

Every path a page receives is relative to the runs folder and resolved through `inside`, so a
request can never read a file outside it (`../`, absolute paths and symlinks out are refused).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fastapi import HTTPException
from pydantic import ValidationError

KINDS = ("traces", "verdicts", "journal", "labels", "jsonl")
JOURNAL_NAME = "journal.jsonl"
REPORTS = ("report.html", "report.md")
T = TypeVar("T")


def inside(root: Path, rel: str) -> Path:
    """`root / rel`, refused (404) unless it stays inside `root` after resolving links."""
    if not rel or "\x00" in rel:
        raise HTTPException(404, "no such file")
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise HTTPException(404, "no such file")
    return path


def _first_record(path: Path, lines: int = 50) -> dict[str, Any]:
    """The first line (of the first `lines`) that is a JSON object, or {}: one bad line at
    the top must not hide what the file is."""
    try:
        with path.open("rb") as fh:
            for raw in itertools.islice(fh, lines):
                try:
                    data = json.loads(raw.decode("utf-8")) if raw.strip() else None
                except (ValueError, RecursionError):
                    continue
                if isinstance(data, dict):
                    return data
    except OSError:
        pass
    return {}


def kind_of(path: Path) -> str:
    """traces, verdicts, journal, labels or jsonl, from the file's name and first record."""
    if path.name == JOURNAL_NAME:
        return "journal"
    data = _first_record(path)
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


@dataclass(frozen=True)
class BadLine:
    """A line of a run file that cannot be shown, and why (listed on the page, never fatal)."""

    file: str
    line: int
    message: str
    record_id: str = ""
    """The line's episode or trace id, when it has a readable one."""

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.message}"


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def unpaired(data: Any) -> None:
    """ValueError if a string in `data` holds a lone UTF-16 surrogate (JSON can escape one;
    no page can encode it)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone UTF-16 surrogate (an escape like \\ud800)") from None


def why_invalid(exc: ValidationError) -> str:
    errors = exc.errors()
    parts = [f"{'.'.join(str(x) for x in e['loc']) or 'record'}: {e['msg']}" for e in errors[:3]]
    return "; ".join(parts) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")


def read_lines(path: Path, check: Callable[[dict[str, Any]], T],
               id_key: str) -> tuple[list[T], list[BadLine]]:
    """Every line of a JSONL file that `check` accepts, and a BadLine for each other one."""
    good: list[T] = []
    bad: list[BadLine] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            rid = ""
            try:
                data = json.loads(raw.decode("utf-8"))
                if not isinstance(data, dict):
                    raise TypeError("not a JSON object")
                rid = str(data[id_key]) if isinstance(data.get(id_key), str) else ""
                if _SURROGATE.search(raw):
                    unpaired(data)
                good.append(check(data))
                continue
            except UnicodeDecodeError:
                why = "not UTF-8 text"
            except RecursionError:
                why = "nested too deeply"
            except ValidationError as exc:
                why = why_invalid(exc)
            except json.JSONDecodeError as exc:
                why = f"not JSON ({exc})"
            except (TypeError, ValueError) as exc:
                why = str(exc)
            bad.append(BadLine(path.name, lineno, why, rid))
    return good, bad
