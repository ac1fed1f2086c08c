"""A content hash of a harness folder that means "same harness", not "same bytes".

Stable across copies, file order, platform path separators, CRLF/LF and YAML key order;
changes when anything the model or the runtime would see changes (a rule value, a prompt
word, a tool's code).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import yaml

IGNORED_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
IGNORED_SUFFIXES = {".pyc", ".pyo", ".swp", ".orig", ".bak"}


def is_ignored_dir(name: str) -> bool:
    return name in IGNORED_DIRS or name.startswith(".")


def is_harness_path(rel: str) -> bool:
    """Whether a file at `rel` (posix, relative to the folder) is part of the harness.

    One rule for the hash, the loader and git: a file the hash skips (caches, editor litter,
    dot-files such as a crashed write's `.harness.yaml.tmp-<pid>`) is never loaded or committed.
    """
    *dirs, name = rel.split("/")
    return (not any(is_ignored_dir(d) for d in dirs) and not name.startswith(".")
            and Path(name).suffix not in IGNORED_SUFFIXES and not name.endswith("~"))


def harness_files(root: Path) -> list[Path]:
    """Files that make up a harness: everything except caches, editor litter and dot-files.

    Links to folders are not followed (the loader refuses them); links to files are listed.
    """
    out = []
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not is_ignored_dir(d)]
        for name in files:
            path = Path(top, name)
            if is_harness_path(path.relative_to(root).as_posix()) and path.is_file():
                out.append(path)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def canonical_bytes(rel: str, data: bytes) -> bytes:
    """The form of one file that the hash sees."""
    try:
        text = data.decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return data
    if rel.endswith((".yaml", ".yml")) and (data_json := _yaml_json(text)) is not None:
        return data_json.encode()
    if rel.endswith(".md") and text.startswith("---\n") and "\n---" in text[4:]:
        head, _, body = text[4:].partition("\n---")
        if (front := _yaml_json(head)) is not None:
            return (front + "\n---" + body).encode()
    return text.encode()


def _yaml_json(text: str) -> str | None:
    """YAML as sorted JSON; None for invalid YAML (hashed as text, the loader reports it) and
    for YAML with aliases, which a few nested `*refs` would expand to billions of values."""
    try:
        if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, yaml.SafeLoader)):
            return None
        return json.dumps(yaml.safe_load(text), sort_keys=True, default=str)
    except yaml.YAMLError:
        return None


def hash_files(files: Iterable[tuple[str, bytes]]) -> str:
    """sha256 over (relative posix path, canonical content), in path order."""
    digest = hashlib.sha256()
    for rel, data in sorted(files):
        body = canonical_bytes(rel, data)
        digest.update(f"{rel}\0{len(body)}\0".encode())
        digest.update(body)
    return digest.hexdigest()


def content_hash(root: Path) -> str:
    """The hash of every harness file under `root` (the loader hashes the bytes it read)."""
    return hash_files((p.relative_to(root).as_posix(), p.read_bytes()) for p in harness_files(root))
