"""Labels: one annotator's 0/1 call on one dimension of one trace, imported from CSV or JSONL,
and the simulator's own *reference labels*, computed from its ground truth.

A reference label is what the simulator knows to be true of a trace (the facts, the forbidden
patterns and the rule values of its question under the agent's harness, and any error that
was planted on purpose). It is not a human label; calibration against people uses the same
`Label` rows, imported with `load_labels`, under the annotator's own name.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hatkit.agent.trace import Trace
from hatkit.harness import Harness
from hatkit.sim.truth import Question

from .verdict import DIMENSIONS

RUBRIC_ITEMS = ("compliance", "injection_resistance", "grounding", "tool_use", "persona", "length")
"""Rubric items a label may name besides accuracy and effectiveness (see `load_labels`)."""
REFERENCE = "reference"
"""Annotator name of labels computed from a simulator's ground truth (a domain's `reference_labels`)."""
FIELDS = ("trace_id", "dimension", "label", "annotator", "note")
REQUIRED = FIELDS[:4]


@dataclass(frozen=True)
class Label:
    trace_id: str
    dimension: str
    """accuracy, effectiveness, or a rubric item."""
    label: int
    """1: the trace passes on this dimension; 0: it fails."""
    annotator: str
    """Who labelled it: a person's name, or "reference" for the simulator's ground truth."""
    note: str = ""
    """Why (for reference labels: the planted error or the check that failed)."""


@dataclass
class LabelledItem:
    """One trace with the ground truth it is judged against."""

    trace: Trace
    question: Question
    """The user's question, with facts under the agent harness's rules."""
    harness: Harness
    """The harness the agent ran under (what a judge gets as agent_harness)."""
    labels: list[Label]
    """Reference labels: accuracy and effectiveness."""

    @property
    def trace_id(self) -> str:
        return self.trace.episode_id

    @property
    def planted(self) -> str | None:
        value = self.trace.meta.get("planted")
        return str(value) if value else None

    def label(self, dimension: str) -> int:
        return next(x.label for x in self.labels if x.dimension == dimension)


class LabelError(ValueError):
    """Bad rows of a label file; the message names every one as file:line."""


# ---- import / export ---------------------------------------------------------------------------
def check_row(row: dict[str, Any], where: str, dims: frozenset[str]) -> tuple[Label | None, list[str]]:
    errors = []
    missing = [k for k in REQUIRED if row.get(k) is None or str(row.get(k)).strip() == ""]
    if missing:
        errors.append(f"{where}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    extra = sorted(str(k) for k in row if k not in FIELDS)
    if extra:
        errors.append(f"{where}: unknown field{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
    dim = str(row.get("dimension") or "").strip()
    if dim and dim not in dims:
        errors.append(f"{where}: unknown dimension '{dim}' (known: {', '.join(sorted(dims))})")
    raw = row.get("label")
    value: int | None = None
    if isinstance(raw, bool) or raw is None:
        value = None
    elif isinstance(raw, int) or (isinstance(raw, str) and raw.strip() in ("0", "1")):
        value = int(raw)
    if raw is not None and str(raw).strip() != "" and value not in (0, 1):
        errors.append(f"{where}: label must be 0 or 1, got {raw!r}")
    if errors or value is None:
        return None, errors
    note = row.get("note")
    return Label(str(row["trace_id"]).strip(), dim, value, str(row["annotator"]).strip(),
                 "" if note is None else str(note)), []


def _rows(path: Path) -> Iterable[tuple[int, dict[str, Any] | str]]:
    """(line, row) pairs; a row that cannot be read at all is a message instead."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines(keepends=True))
        header = reader.fieldnames or []
        if missing := [k for k in REQUIRED if k not in header]:
            yield 1, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} in the header"
            return
        for row in reader:
            if None in row:
                yield reader.line_num, f"{len(header) + len(row[None])} fields, the header has {len(header)}"
                continue
            yield reader.line_num, {k: v for k, v in row.items() if k is not None}
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            yield lineno, f"not JSON ({exc})"
            continue
        yield lineno, data if isinstance(data, dict) else "expected a JSON object"


def load_labels(path: Path | str, *, dimensions: Iterable[str] | None = None) -> list[Label]:
    """Labels from a CSV (header trace_id,dimension,label,annotator[,note]) or JSONL file.

    Every bad row is reported as file:line (unknown dimension, a label other than 0/1, a
    missing column, one trace labelled twice by one annotator); nothing is returned unless
    every row is good. `dimensions` replaces the known dimensions (default: accuracy,
    effectiveness and RUBRIC_ITEMS).
    """
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".jsonl", ".json"):
        raise LabelError(f"{path}: labels are read from .csv or .jsonl files")
    dims = frozenset(dimensions) if dimensions is not None else frozenset((*DIMENSIONS, *RUBRIC_ITEMS))
    labels: list[Label] = []
    errors: list[str] = []
    seen: dict[tuple[str, str, str], int] = {}
    for lineno, row in _rows(path):
        where = f"{path}:{lineno}"
        if isinstance(row, str):
            errors.append(f"{where}: {row}")
            continue
        label, bad = check_row(row, where, dims)
        errors += bad
        if label is None:
            continue
        key = (label.trace_id, label.dimension, label.annotator)
        if key in seen:
            errors.append(f"{where}: {label.annotator} already labelled {label.dimension} of "
                          f"{label.trace_id} at line {seen[key]}")
            continue
        seen[key] = lineno
        labels.append(label)
    if errors:
        raise LabelError("\n".join(errors))
    return labels


def save_labels(labels: Iterable[Label], path: Path | str) -> int:
    """Write labels as CSV or JSONL (by the suffix); returns how many were written."""
    path = Path(path)
    rows = [asdict(x) for x in labels]
    if path.suffix.lower() == ".csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(FIELDS))
            writer.writeheader()
            writer.writerows(rows)
    elif path.suffix.lower() in (".jsonl", ".json"):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    else:
        raise LabelError(f"{path}: labels are written to .csv or .jsonl files")
    return len(rows)


# ---- reading traces ----------------------------------------------------------------------------
def turn_replies(trace: Trace) -> list[str]:
    """The reply that ended each viewer turn (vetoed attempts skipped; the last turn's is the
    final reply, after any hook rewrite)."""
    replies: list[str] = []
    for s in trace.spans:
        if s.segment == "user" and s.source == "viewer":
            replies.append("")
        elif s.segment == "reply" and not s.vetoed and replies:
            replies[-1] = s.text.strip()
    if replies and trace.final_reply:
        replies[-1] = trace.final_reply.strip()
    return replies or [trace.final_reply.strip()]


def labels_by_trace(labels: Sequence[Label]) -> dict[tuple[str, str], list[Label]]:
    """(trace_id, dimension) -> its labels, in file order."""
    out: dict[tuple[str, str], list[Label]] = {}
    for x in labels:
        out.setdefault((x.trace_id, x.dimension), []).append(x)
    return out
