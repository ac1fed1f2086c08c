"""Releases: an accepted harness as a git commit + an annotated tag `release/<name>` that binds
the harness commit, its content hash, the model checkpoint and the report that admitted it.

Contract (the web UI uses it too):

* `list_releases(repo_path) -> list[Release]`, oldest first; `repo_path` is the harness
  folder or any path inside its git work tree;
* `show_release(name, repo_path) -> Release` (with the admitting report embedded);
* `diff_releases(a, b, repo_path) -> str`, the semantic harness diff (harness/diff.py);
* `rollback(name, repo_path, force=False) -> str` restores the harness folder of a release
  byte for byte (a new commit) and returns the restored content hash.

The tag message is a first line plus a JSON object, so a release is read back from git alone
(no side files): the report travels with the repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import git

from ..harness import load_harness
from ..harness.diff import diff_harnesses
from ..harness.hashing import harness_files
from ..harness.versioning import HarnessRepo, VersioningError
from .edits import write_atomic

TAG_PREFIX = "release/"
MARKER = "hatkit-release"
EDIT_TRAILER = "Evolve-Edit"


@dataclass(frozen=True)
class Release:
    name: str
    tag: str
    harness_commit: str
    harness_hash: str
    harness_path: str
    """The harness folder relative to the git work tree root."""
    model: str
    """The model checkpoint the release was evaluated with (frozen during evolution)."""
    report_path: str
    report_sha256: str
    created: str
    """ISO 8601 UTC."""
    edit_id: str = ""
    report: Mapping[str, Any] = field(default_factory=dict)
    """The report that admitted it (dev and regression figures, the edit, the decision)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _git(repo_path: Path | str) -> git.Repo:
    try:
        return git.Repo(Path(repo_path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise VersioningError(f"{repo_path} is not inside a git repository") from None


def _parse(tag: git.TagReference) -> Release | None:
    obj = tag.tag
    if obj is None or not str(obj.message).startswith(MARKER):
        return None
    try:
        data = json.loads(str(obj.message).split("\n", 1)[1])
        return Release(**data)
    except (ValueError, TypeError, IndexError):
        return None


def list_releases(repo_path: Path | str) -> list[Release]:
    repo = _git(repo_path)
    out = [r for t in repo.tags if t.name.startswith(TAG_PREFIX) and (r := _parse(t))]
    return sorted(out, key=lambda r: (r.created, r.name))


def show_release(name: str, repo_path: Path | str) -> Release:
    tag = name if name.startswith(TAG_PREFIX) else TAG_PREFIX + name
    for r in list_releases(repo_path):
        if r.tag == tag:
            return r
    raise VersioningError(f"no release named '{name}' (see 'hatkit release list')")


def _harness_repo(r: Release, repo_path: Path | str) -> HarnessRepo:
    root = Path(str(_git(repo_path).working_tree_dir))
    return HarnessRepo(root / r.harness_path if r.harness_path else root)


def diff_releases(a: str, b: str, repo_path: Path | str) -> str:
    ra, rb = show_release(a, repo_path), show_release(b, repo_path)
    repo = _harness_repo(rb, repo_path)
    with tempfile.TemporaryDirectory(prefix="hatkit-release-diff-") as tmp:
        ha = load_harness(repo.materialize(ra.harness_commit, Path(tmp) / "a"))
        hb = load_harness(repo.materialize(rb.harness_commit, Path(tmp) / "b"))
        return "\n".join(diff_harnesses(ha, hb).lines())


def rollback(name: str, repo_path: Path | str, force: bool = False) -> str:
    r = show_release(name, repo_path)
    return _harness_repo(r, repo_path).rollback(r.tag, force=force)


def find_edit_commit(repo: HarnessRepo, edit_id: str) -> str | None:
    """HEAD's sha if HEAD is the commit of this edit (a release interrupted after commit)."""
    if not repo.repo.head.is_valid():
        return None
    head = repo.repo.head.commit
    return head.hexsha if f"{EDIT_TRAILER}: {edit_id}" in str(head.message) else None


def sync_folder(src: Path, dest: Path) -> None:
    """Make `dest`'s harness files equal to `src`'s (each file written atomically)."""
    want = {f.relative_to(src).as_posix(): f for f in harness_files(src)}
    for f in harness_files(dest):
        if f.relative_to(dest).as_posix() not in want:
            f.unlink()
    for rel, f in want.items():
        target = dest / rel
        data = f.read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            if _is_text(data):
                write_atomic(target, data.decode("utf-8"))
            else:
                _copy(f, target)
        shutil.copymode(f, target)


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


def make_release(repo: HarnessRepo, candidate: Path, *, name: str, edit_id: str, model: str,
                 report: Mapping[str, Any], report_path: Path, message: str,
                 on_swapped: Callable[[], None] | None = None) -> Release:
    """Swap the candidate into the harness folder, commit, tag. Idempotent: a rerun after a
    crash at any point finishes the same release (never a second commit or a half state)."""
    text = json.dumps(dict(report), indent=1, sort_keys=True, ensure_ascii=False, default=str)
    write_atomic(report_path, text + "\n")
    sha = find_edit_commit(repo, edit_id)
    if sha is None:
        if repo.is_dirty():  # a swap that died half-way: back to HEAD, then redo it whole
            repo.rollback("HEAD", force=True, commit=False)
        sync_folder(candidate, repo.folder)
        if on_swapped:
            on_swapped()
        repo.commit(f"{message}\n\n{EDIT_TRAILER}: {edit_id}")
        sha = repo.repo.head.commit.hexsha
    tag = TAG_PREFIX + name
    existing = next((t for t in repo.repo.tags if t.name == tag), None)
    if existing is not None and (r := _parse(existing)) is not None:
        return r
    rel = Path(repo.folder).relative_to(repo.root).as_posix()
    r = Release(name=name, tag=tag, harness_commit=sha, harness_hash=load_harness(repo.folder).content_hash,
                harness_path="" if rel == "." else rel, model=model, report_path=str(report_path),
                report_sha256=hashlib.sha256((text + "\n").encode()).hexdigest(),
                created=datetime.now(UTC).isoformat(timespec="seconds"), edit_id=edit_id,
                report=dict(json.loads(text)))
    repo.repo.create_tag(tag, ref=sha, message=f"{MARKER}\n" + json.dumps(r.to_dict(), sort_keys=True,
                                                                       ensure_ascii=False))
    return r
