"""The evolution journal: an append-only JSONL file that is the loop's single source of truth.

Contract (the web UI reads and writes it too):

* `Journal(path)` opens `<run_dir>/journal.jsonl`. Each line is one JSON record with `seq`
  (0, 1, 2, ...), `ts` (unix seconds), `kind`, `round`, plus kind-specific fields. Kinds:
  `start`, `round_start`, `diagnosis`, `proposal`, `decision`, `evaluation`, `regression`,
  `release`, `round_end`, `stop`.
* Every append takes an exclusive `fcntl` lock on `journal.lock`, re-reads the file, writes one
  line and fsyncs it, so records from several processes (the loop, the CLI, the UI) interleave
  whole. A torn last line (the writer was killed mid-write) is ignored by `records()` and cut
  off by the next append.
* `pending()` lists proposals with no decision yet; `decide()` records a human decision exactly
  as the CLI does and returns False when the edit was already decided (checked under the lock,
  so two concurrent approvals cannot both land). A loop waiting at the Confirm gate polls the
  journal and picks the decision up.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Decision = Literal["approve", "reject"]
KINDS = ("start", "round_start", "diagnosis", "proposal", "decision", "evaluation", "regression",
         "release", "round_end", "stop")


@dataclass(frozen=True)
class PendingEdit:
    """A proposed edit waiting at the Confirm gate (what the CLI and the UI show)."""

    edit_id: str
    round: int
    files: list[str]
    """Harness-relative paths the edit writes or deletes."""
    diff: str
    """Unified diff of the edit against the round's base harness."""
    rationale: str
    cluster: dict[str, Any]
    """The diagnosis cluster it answers: key, category, error_type, count, example trace ids."""
    needs_human: bool
    """True when the edit touches Python hook or tool code: never approved automatically."""
    dev_delta: float | None = None
    """After evaluation: candidate dev pass rate minus the base's (None before)."""
    category_deltas: dict[str, float] = field(default_factory=dict)


class Journal:
    """Append-only, fsync'ed, lock-protected JSONL of everything the loop did."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.lock_path, "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    # -- reading --
    def _read(self) -> tuple[list[dict[str, Any]], int]:
        """(whole records, byte length of the good prefix); a torn tail is left out."""
        if not self.path.exists():
            return [], 0
        data = self.path.read_bytes()
        out: list[dict[str, Any]] = []
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # torn last line: the writer died before the newline
            try:
                rec = json.loads(line)
            except ValueError:
                break
            if not isinstance(rec, dict):
                break
            out.append(rec)
            good += len(line)
        return out, good

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        recs, _ = self._read()
        return [r for r in recs if kind is None or r.get("kind") == kind]

    # -- writing --
    def _append_locked(self, kind: str, round_: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        return self._write_locked([(kind, round_, fields)])[0]

    def _write_locked(self, items: list[tuple[str, int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
        recs, good = self._read()
        out = [{"seq": len(recs) + i, "ts": round(time.time(), 3), "kind": kind, "round": rnd, **f}
               for i, (kind, rnd, f) in enumerate(items)]
        data = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in out).encode()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, good)  # repair a torn tail before writing after it
            os.lseek(fd, good, os.SEEK_SET)
            while data:  # one write call in practice; a torn tail is cut by the next append
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        return out

    def append_many(self, kind: str, round: int, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Several records of one kind in one write: a round's proposals land together or
        not at all (a torn tail is dropped whole on read, as the seq numbers then show)."""
        if kind not in KINDS:
            raise ValueError(f"unknown journal record kind {kind!r}")
        with self._locked():
            return self._write_locked([(kind, round, f) for f in items])

    def append(self, kind: str, round: int, **fields: Any) -> dict[str, Any]:
        """Write one record (fsync'ed) and return it with its `seq` and `ts`."""
        if kind not in KINDS:
            raise ValueError(f"unknown journal record kind {kind!r} (one of {', '.join(KINDS)})")
        with self._locked():
            return self._append_locked(kind, round, fields)

    # -- the Confirm gate --
    def decision_for(self, edit_id: str) -> dict[str, Any] | None:
        return next((r for r in self.records("decision") if r.get("edit_id") == edit_id), None)

    def decide(self, edit_id: str, decision: Decision, *, by: str, comment: str = "",
               edited: dict[str, str] | None = None) -> bool:
        """Record a decision on a proposed edit; False (nothing written) if already decided.

        `edited` maps harness-relative paths to replacement contents: the human's own version
        of the edit, which the loop applies (and validates) instead of the proposal's files.
        """
        if decision not in ("approve", "reject"):
            raise ValueError(f"decision must be 'approve' or 'reject', not {decision!r}")
        with self._locked():
            recs, _ = self._read()
            prop = next((r for r in recs if r["kind"] == "proposal" and r.get("edit_id") == edit_id),
                        None)
            if prop is None:
                raise KeyError(f"no proposed edit {edit_id!r} in {self.path}")
            if any(r["kind"] == "decision" and r.get("edit_id") == edit_id for r in recs):
                return False
            self._append_locked("decision", int(prop["round"]), {
                "edit_id": edit_id, "decision": decision, "by": by, "comment": comment,
                "edited": dict(edited) if edited else None})
            return True

    def pending(self) -> list[PendingEdit]:
        """Proposals without a decision, oldest first (with dev deltas if evaluated)."""
        recs = self.records()
        decided = {r.get("edit_id") for r in recs if r["kind"] == "decision"}
        evals = {r.get("edit_id"): r for r in recs if r["kind"] == "evaluation"}
        out = []
        for r in recs:
            if r["kind"] != "proposal" or r.get("edit_id") in decided or r.get("edit_id") == "none":
                continue
            ev = evals.get(r["edit_id"], {})
            out.append(PendingEdit(
                edit_id=r["edit_id"], round=int(r["round"]), files=sorted(r.get("files", {})),
                diff=r.get("diff", ""), rationale=r.get("rationale", ""),
                cluster=dict(r.get("cluster") or {}), needs_human=bool(r.get("needs_human")),
                dev_delta=ev.get("dev_delta"), category_deltas=dict(ev.get("category_deltas", {}))))
        return out
