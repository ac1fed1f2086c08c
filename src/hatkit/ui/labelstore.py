"""The labels file the labelling page writes: the JSONL rows `hatkit.judge.labels.load_labels`
reads, appended under a lock and replaced atomically, so a crash or two annotators saving at
once never leave a half-written or duplicated row."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..judge.agreement import DimensionAgreement, annotator_agreement
from ..judge.labels import REFERENCE, RUBRIC_ITEMS, Label, LabelError, check_row, load_labels
from ..judge.verdict import DIMENSIONS
from .files import read_lines

_THREAD_LOCK = threading.Lock()
_DIMS = frozenset((*DIMENSIONS, *RUBRIC_ITEMS))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with _THREAD_LOCK, open(path.with_name(path.name + ".lock"), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def read(path: Path) -> list[Label]:
    """Every label of the file ([] when it does not exist yet); LabelError names bad rows."""
    return load_labels(path) if path.is_file() else []


def _label(row: dict[str, Any]) -> Label:
    label, errors = check_row(row, "", _DIMS)
    if label is None:
        raise TypeError("; ".join(e.lstrip(": ") for e in errors) or "not a label")
    return label


def read_lenient(path: Path) -> tuple[list[Label], list[str]]:
    """The labels of the file's good rows and a message per bad row, for pages that show
    both (`append` still refuses a file with bad rows)."""
    try:
        return read(path), []
    except LabelError as exc:
        problems = str(exc).splitlines()
    except RecursionError:
        problems = []
    if path.suffix.lower() != ".jsonl":
        return [], problems
    labels, bad = read_lines(path, _label, "trace_id")
    return labels, problems or [str(b) for b in bad]


def append(path: Path, new: Sequence[Label]) -> None:
    """Add `new` to the file; LabelError (nothing written) if one repeats an existing label
    of the same trace, dimension and annotator, or the file already has bad rows."""
    with _locked(path):
        old = read(path)
        have = {(x.trace_id, x.dimension, x.annotator) for x in old}
        dup = [x for x in new if (x.trace_id, x.dimension, x.annotator) in have]
        if dup:
            raise LabelError(f"{path}: {dup[0].annotator} already labelled {dup[0].dimension} of "
                             f"{dup[0].trace_id}")
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if text and not text.endswith("\n"):
            text += "\n"
        text += "".join(json.dumps(asdict(x), ensure_ascii=False) + "\n" for x in new)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


def labelled_by(labels: Sequence[Label], annotator: str) -> set[str]:
    """Trace ids `annotator` labelled on both accuracy and effectiveness."""
    dims: dict[str, set[str]] = {}
    for x in labels:
        if x.annotator == annotator:
            dims.setdefault(x.trace_id, set()).add(x.dimension)
    return {t for t, d in dims.items() if set(DIMENSIONS) <= d}


@dataclass(frozen=True)
class PairAgreement:
    a: str
    b: str
    result: dict[str, DimensionAgreement]
    """dimension -> agreement on the items both labelled."""


def pair_agreements(labels: Sequence[Label]) -> list[PairAgreement]:
    """Agreement of every pair of people (reference labels left out) who share an item."""
    people = sorted({x.annotator for x in labels} - {REFERENCE})
    out = []
    for a, b in itertools.combinations(people, 2):
        result = annotator_agreement(labels, a, b)
        if any(r.n for r in result.values()):
            out.append(PairAgreement(a, b, result))
    return out
