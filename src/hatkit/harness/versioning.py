"""Git versioning of a harness folder: commit, log, tag, materialise, rollback.

Each commit carries the harness content hash as a `Harness-Hash:` trailer, so a release can
be traced from a hash to a commit and back. Rollback writes the blobs of the chosen commit
back byte for byte (mode included) and removes files that commit did not have.
"""

from __future__ import annotations

import re
import shutil
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import git

from .hashing import IGNORED_DIRS, content_hash, harness_files
from .loader import load_harness

TRAILER = "Harness-Hash"
_TRAILER_RE = re.compile(rf"^{TRAILER}: ([0-9a-f]{{64}})$", re.MULTILINE)


class VersioningError(RuntimeError):
    """A versioning request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class LogEntry:
    sha: str
    when: datetime
    author: str
    subject: str
    harness_hash: str | None
    tags: tuple[str, ...]


class HarnessRepo:
    """A harness folder inside a git work tree."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder).resolve()
        if not (self.folder / "harness.yaml").is_file():
            raise VersioningError(f"{self.folder} is not a harness folder (no harness.yaml)")
        try:
            self.repo = git.Repo(self.folder, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise VersioningError(
                f"{self.folder} is not inside a git repository; run 'git init' there first"
            ) from None
        if self.repo.working_tree_dir is None:
            raise VersioningError("bare repositories are not supported")
        self.root = Path(self.repo.working_tree_dir).resolve()
        self.rel = self.folder.relative_to(self.root).as_posix()
        if self.rel == ".":
            self.rel = ""

    # -- queries --
    def resolve(self, rev: str) -> git.Commit:
        try:
            return self.repo.commit(rev)
        except (git.BadName, ValueError, git.GitCommandError):
            raise VersioningError(f"unknown revision '{rev}'") from None

    def is_dirty(self) -> bool:
        return self.repo.is_dirty(path=self.rel or ".", untracked_files=True)

    def log(self, limit: int | None = None) -> list[LogEntry]:
        if not self.repo.head.is_valid():
            return []
        tags: dict[str, list[str]] = {}
        for t in self.repo.tags:
            tags.setdefault(t.commit.hexsha, []).append(t.name)
        out = []
        for c in self.repo.iter_commits(paths=self.rel or ".", max_count=limit):
            message = str(c.message)
            m = _TRAILER_RE.search(message)
            out.append(LogEntry(c.hexsha, c.committed_datetime, str(c.author.name),
                                message.splitlines()[0] if message else "",
                                m.group(1) if m else None, tuple(sorted(tags.get(c.hexsha, [])))))
        return out

    # -- changes --
    def commit(self, message: str, allow_empty: bool = False) -> LogEntry:
        """Validate, then commit exactly this folder (nothing else staged goes in)."""
        harness = load_harness(self.folder)  # refuses an invalid harness with its errors
        if not message.strip():
            raise VersioningError("a commit message is required")
        pathspec = self.rel or "."
        self.repo.git.add("-A", "--", pathspec)
        if not allow_empty and self.repo.head.is_valid() and not self.repo.index.diff(
                "HEAD", paths=pathspec):
            raise VersioningError("nothing to commit: the harness is unchanged since HEAD")
        body = f"{message.strip()}\n\nHarness-Name: {harness.name}\n{TRAILER}: {harness.content_hash}"
        args = ["-m", body, "--allow-empty"] if allow_empty else ["-m", body]
        self.repo.git.commit(*args, "--", pathspec)  # other staged files stay staged
        return self.log(limit=1)[0]

    def tag(self, name: str, rev: str = "HEAD", message: str | None = None) -> str:
        commit = self.resolve(rev)
        if name in [t.name for t in self.repo.tags]:
            raise VersioningError(f"tag '{name}' already exists")
        m = _TRAILER_RE.search(str(commit.message))
        text = message or f"harness {self.rel or '.'} at {commit.hexsha[:12]}"
        if m:
            text += f"\n\n{TRAILER}: {m.group(1)}"
        self.repo.create_tag(name, ref=commit, message=text)
        return commit.hexsha

    def materialize(self, rev: str, dest: Path) -> Path:
        """Write the folder as it was at `rev` into `dest` (byte for byte, modes included)."""
        commit = self.resolve(rev)
        try:
            tree = commit.tree / self.rel if self.rel else commit.tree
            assert isinstance(tree, git.Tree)
        except (KeyError, AssertionError):
            raise VersioningError(f"the harness folder did not exist at {rev}") from None
        dest.mkdir(parents=True, exist_ok=True)
        for blob in tree.traverse():
            if not isinstance(blob, git.Blob):
                continue
            rel = Path(blob.path).relative_to(self.rel) if self.rel else Path(blob.path)
            path = dest / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob.data_stream.read())
            if blob.mode & stat.S_IXUSR:
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return dest

    def rollback(self, rev: str, force: bool = False, commit: bool = True) -> str:
        """Restore the folder to `rev` exactly; returns the restored content hash."""
        target = self.resolve(rev)
        if self.is_dirty() and not force:
            raise VersioningError("the harness folder has uncommitted changes; commit them or "
                                  "pass --force to discard them")
        for path in harness_files(self.folder):
            path.unlink()
        for d in sorted((p for p in self.folder.rglob("*") if p.is_dir()), reverse=True):
            if d.name not in IGNORED_DIRS and not any(d.iterdir()):
                d.rmdir()
        for cache in self.folder.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        self.materialize(rev, self.folder)
        restored = content_hash(self.folder)
        if commit and self.is_dirty():
            self.repo.git.add("-A", "--", self.rel or ".")
            self.repo.git.commit(
                "-m", f"Roll back harness to {target.hexsha[:12]}\n\n{TRAILER}: {restored}",
                "--", self.rel or ".")
        return restored
