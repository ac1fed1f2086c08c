"""Harness versions for the pages: find the commit of a harness content hash and read the
harness files as they were at that commit (straight from git, nothing written to disk)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from ..harness.versioning import HarnessRepo, LogEntry, VersioningError
from .config import UIConfig


def harness_folder(cfg: UIConfig) -> Path | None:
    """The configured harness folder, else the first `harness.yaml` folder in a git work tree
    directly under the runs folder or one level deeper (e.g. `runs/<run>/harness`)."""
    if cfg.harness is not None:
        return cfg.harness
    for pattern in ("*/harness.yaml", "*/*/harness.yaml"):
        for found in sorted(cfg.runs.glob(pattern)):
            if "variants" not in found.parts:
                try:
                    HarnessRepo(found.parent)
                except VersioningError:
                    continue
                return found.parent
    return None


def open_repo(cfg: UIConfig) -> HarnessRepo | None:
    folder = harness_folder(cfg)
    if folder is None:
        return None
    try:
        return HarnessRepo(folder)
    except VersioningError:
        return None


def commit_of(repo: HarnessRepo, harness_hash: str) -> LogEntry | None:
    """The newest commit whose Harness-Hash trailer starts with `harness_hash`."""
    if len(harness_hash) < 6:
        return None
    return next((e for e in repo.log() if e.harness_hash and e.harness_hash.startswith(harness_hash)), None)


@dataclass(frozen=True)
class VersionFile:
    path: str
    text: str


def files_at(repo: HarnessRepo, sha: str) -> list[VersionFile]:
    """Every text file of the harness folder at `sha` (binary files are named, not shown)."""
    commit = repo.resolve(sha)
    tree = commit.tree / repo.rel if repo.rel else commit.tree
    out = []
    for item in tree.traverse():
        if isinstance(item, git.Blob):
            rel = Path(str(item.path)).relative_to(repo.rel).as_posix() if repo.rel else str(item.path)
            data = item.data_stream.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = f"(binary, {len(data)} bytes)"
            out.append(VersionFile(rel, text))
    return sorted(out, key=lambda f: f.path)
