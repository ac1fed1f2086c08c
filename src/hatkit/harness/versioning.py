"""Git versioning of a harness folder: commit, log, tag, materialise, rollback.

Each commit carries the harness content hash as a `Harness-Hash:` trailer, so a release can
be traced from a hash to a commit and back. A commit stores exactly the files that hash covers
(never a crashed write's temp file or editor litter). Rollback writes the blobs of the chosen
commit back byte for byte (mode and links included) and removes files that commit did not have.
"""

from __future__ import annotations

import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import git

from .hashing import IGNORED_DIRS, content_hash, harness_files, is_harness_path
from .loader import load_harness

TRAILER = "Harness-Hash"
_TRAILER_RE = re.compile(rf"^{TRAILER}: ([0-9a-f]{{64}})$", re.MULTILINE)


class VersioningError(RuntimeError):
    """A versioning request that cannot be carried out; the message says why."""


@contextmanager
def _git_refusals() -> Iterator[None]:
    """git's own refusals (no user.email, a failing hook, a bad tag name) as a VersioningError
    with git's message, not a traceback."""
    try:
        yield
    except git.GitCommandError as exc:
        lines = [ln.strip().removeprefix("stderr: ").strip("'") for ln in str(exc.stderr).splitlines()]
        detail = " ".join(ln for ln in lines if ln) or f"exit status {exc.status}"
        raise VersioningError(f"git {exc.command[1] if len(exc.command) > 1 else ''} failed: "
                              f"{detail}") from None


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
        """Whether a harness file differs from HEAD; litter the hash skips does not count."""
        out = self.repo.git.status("--porcelain", "-z", "--no-renames", "--untracked-files=all",
                                   "--ignored", "--", self.rel or ".")
        prefix = f"{self.rel}/" if self.rel else ""
        return any(is_harness_path(entry[3:].removeprefix(prefix))
                   for entry in out.split("\0") if entry)

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
        body = f"{message.strip()}\n\nHarness-Name: {harness.name}\n{TRAILER}: {harness.content_hash}"
        with _git_refusals():
            self._commit_folder(body, allow_empty)
        return self.log(limit=1)[0]

    def _commit_folder(self, message: str, allow_empty: bool = False) -> None:
        """Commit the folder's harness files, the set the content hash covers, and nothing else.

        A private index (HEAD, then this folder's harness files added or removed) keeps out
        what `git add -A` took in (a crashed write's `.x.tmp-<pid>`, caches, editor litter) and
        what the user staged elsewhere. Files git tracks that are not harness files (say a
        `.gitattributes`) stay as HEAD has them; gitignored harness files go in, as the hash
        covers them.
        """
        git_ = self.repo.git
        pathspec, prefix = self.rel or ".", f"{self.rel}/" if self.rel else ""
        head = self.repo.head.commit if self.repo.head.is_valid() else None
        with tempfile.TemporaryDirectory(prefix="hatkit-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if head is not None:
                git_.read_tree("HEAD", env=env)
            tracked = git_.ls_files("-z", "--", pathspec, env=env).split("\0")
            paths = {t for t in tracked if t and is_harness_path(t.removeprefix(prefix))}
            paths |= {f.relative_to(self.root).as_posix() for f in harness_files(self.folder)}
            if paths:  # -A: a harness file gone from the folder is removed
                git_.add("-A", "-f", "--", *(f":(literal){p}" for p in sorted(paths)), env=env)
            if not allow_empty and head is not None and git_.write_tree(env=env) == head.tree.hexsha:
                raise VersioningError("nothing to commit: the harness is unchanged since HEAD")
            git_.commit("-q", "-m", message, *(["--allow-empty"] if allow_empty else []), env=env)
        git_.reset("-q", "HEAD", "--", pathspec)  # the real index: this folder as committed

    def tag(self, name: str, rev: str = "HEAD", message: str | None = None) -> str:
        commit = self.resolve(rev)
        if name in [t.name for t in self.repo.tags]:
            raise VersioningError(f"tag '{name}' already exists")
        m = _TRAILER_RE.search(str(commit.message))
        text = message or f"harness {self.rel or '.'} at {commit.hexsha[:12]}"
        if m:
            text += f"\n\n{TRAILER}: {m.group(1)}"
        with _git_refusals():
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
            if not path.parent.resolve().is_relative_to(dest.resolve()):
                raise VersioningError(f"{rel.parent} in {dest} is a link out of the folder")
            if path.is_symlink():
                path.unlink()  # never write through a link
            if blob.mode == blob.link_mode:  # git stores a link as its target path
                path.symlink_to(blob.data_stream.read().decode())
                continue
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
            with _git_refusals():
                self._commit_folder(f"Roll back harness to {target.hexsha[:12]}\n\n"
                                    f"{TRAILER}: {restored}")
        return restored
