"""Where hatkit keeps converted model checkpoints: $HATKIT_HOME, else the XDG cache dir."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def hatkit_home() -> Path:
    """`$HATKIT_HOME`, else `$XDG_CACHE_HOME/hatkit`, else `~/.cache/hatkit`."""
    if env := os.environ.get("HATKIT_HOME"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "hatkit"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
