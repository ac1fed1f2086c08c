"""Harness edits: what a proposer returns, and how one is applied without trusting it.

A proposal is untrusted text (an LLM may write it). It is only ever applied to a private
working copy of the harness: every path must stay inside the harness folder (no absolute
paths, no `..`, no dot-files, no symlinks followed out), the result must load and validate,
and only then is it shown at the Confirm gate. The real harness folder changes only when a
release commits it (see release.py).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..harness import Harness, HarnessError, load_harness
from ..harness.hashing import IGNORED_DIRS, harness_files

CODE_SUFFIXES = (".py",)
MAX_FILE_BYTES = 256_000


class EditError(ValueError):
    """An edit that cannot be applied; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Edit:
    """A set of whole-file writes (content) or deletions (None) inside a harness folder."""

    files: Mapping[str, str | None]
    """Harness-relative posix path -> new full content, or None to delete the file."""
    rationale: str = ""
    """Why: which failures it answers and how (shown at the gate and in the report)."""
    cluster: Mapping[str, Any] = field(default_factory=dict)
    """The diagnosis cluster it answers (key, category, error_type, count, examples)."""
    proposer: str = ""

    @property
    def edit_id(self) -> str:
        """Stable id from the content, so a re-proposed identical edit is recognised."""
        body = json.dumps({"files": dict(self.files)}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode()).hexdigest()[:12]

    @property
    def needs_human(self) -> bool:
        """Python hook or tool code: always needs explicit human approval."""
        return any(p.endswith(CODE_SUFFIXES) for p in self.files)

    def to_record(self) -> dict[str, Any]:
        return {"edit_id": self.edit_id, "files": dict(self.files), "rationale": self.rationale,
                "cluster": dict(self.cluster), "proposer": self.proposer,
                "needs_human": self.needs_human}

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Edit:
        return cls(dict(rec["files"]), str(rec.get("rationale", "")), dict(rec.get("cluster") or {}),
                   str(rec.get("proposer", "")))


def check_path(rel: str) -> PurePosixPath:
    """Refuse any path that could leave the harness folder or hide in it."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise EditError(f"{rel!r}: not a relative posix path")
    p = PurePosixPath(rel)
    if p.is_absolute() or any(part in ("", ".", "..") for part in p.parts):
        raise EditError(f"{rel}: path leaves the harness folder")
    if any(part.startswith(".") or part in IGNORED_DIRS for part in p.parts):
        raise EditError(f"{rel}: hidden or cache paths cannot be edited")
    return p


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that a crash leaves either the old or the new content, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def apply_to(edit: Edit, folder: Path) -> None:
    """Apply `edit` in place to `folder` (callers pass a working copy)."""
    root = folder.resolve()
    for rel, content in sorted(edit.files.items()):
        p = check_path(rel)
        target = root / p
        if not target.resolve().is_relative_to(root):  # a symlinked directory inside the copy
            raise EditError(f"{rel}: resolves outside the harness folder")
        if content is None:
            if target.is_file():
                target.unlink()
            continue
        if len(content.encode()) > MAX_FILE_BYTES:
            raise EditError(f"{rel}: {len(content.encode())} bytes is over the {MAX_FILE_BYTES} limit")
        write_atomic(target, content)


def working_copy(base: Path, dest: Path) -> Path:
    """A fresh copy of the harness files (no caches, no dot-files) at `dest`."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in harness_files(base):
        out = dest / f.relative_to(base)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, out)
    return dest


def build_candidate(base: Path, edit: Edit, dest: Path) -> Harness:
    """Working copy of `base` + `edit`, validated. Raises EditError (with the harness's
    file:line problems) if the edit is unsafe or leaves an invalid harness."""
    working_copy(base, dest)
    apply_to(edit, dest)
    try:
        return load_harness(dest)
    except HarnessError as exc:
        raise EditError("the edited harness does not validate:\n" +
                        "\n".join(f"  {p}" for p in exc.problems)) from None


def unified_diff(base: Path, edit: Edit) -> str:
    """The edit as a unified diff against `base` (what the Confirm gate shows)."""
    out: list[str] = []
    for rel, content in sorted(edit.files.items()):
        old_path = base / rel
        old = old_path.read_text(encoding="utf-8") if old_path.is_file() else ""
        new = content or ""
        out.extend(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            f"a/{rel}" if old_path.is_file() else "/dev/null",
            f"b/{rel}" if content is not None else "/dev/null"))
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)
