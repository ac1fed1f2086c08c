"""A programmatic judge's version: its judge harness AND the code that reads it.

A judge written as code changes when its rubric code changes even if its harness folder does
not, so its hash covers both; calibration rounds, verdicts and reports then tell the two
judges apart (an LLM judge's behaviour lives in its harness, so its hash is the harness's).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=16)
def _code_digest(code_dir: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(code_dir).rglob("*.py")):
        digest.update(path.relative_to(code_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def rubric_hash(harness_hash: str, code_dir: Path | str) -> str:
    """sha256 over the judge harness's content hash and every .py file under `code_dir`."""
    code = _code_digest(str(Path(code_dir).resolve()))
    return hashlib.sha256(f"{harness_hash}\0{code}".encode()).hexdigest()
