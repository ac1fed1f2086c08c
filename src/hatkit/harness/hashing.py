"""A content hash of a harness folder that means "same harness", not "same bytes".

Stable across copies, file order, platform path separators, CRLF/LF and YAML key order;
changes when anything the model or the runtime would see changes (a rule value, a prompt
word, a tool's code).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

IGNORED_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
IGNORED_SUFFIXES = {".pyc", ".pyo", ".swp", ".orig", ".bak"}


def harness_files(root: Path) -> list[Path]:
    """Files that make up a harness: everything except caches, editor litter and dot-files."""
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in IGNORED_DIRS or part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and path.suffix not in IGNORED_SUFFIXES and not path.name.endswith("~"):
            out.append(path)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def canonical_bytes(rel: str, data: bytes) -> bytes:
    """The form of one file that the hash sees."""
    try:
        text = data.decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return data
    if rel.endswith((".yaml", ".yml")):
        try:
            return json.dumps(yaml.safe_load(text), sort_keys=True, default=str).encode()
        except yaml.YAMLError:
            pass  # invalid YAML is hashed as text; the loader reports it
    if rel.endswith(".md") and text.startswith("---\n") and "\n---" in text[4:]:
        head, _, body = text[4:].partition("\n---")
        try:
            front = json.dumps(yaml.safe_load(head), sort_keys=True, default=str)
            return (front + "\n---" + body).encode()
        except yaml.YAMLError:
            pass
    return text.encode()


def content_hash(root: Path) -> str:
    """sha256 over (relative posix path, canonical content) of every harness file."""
    digest = hashlib.sha256()
    for path in harness_files(root):
        rel = path.relative_to(root).as_posix()
        body = canonical_bytes(rel, path.read_bytes())
        digest.update(f"{rel}\0{len(body)}\0".encode())
        digest.update(body)
    return digest.hexdigest()
