"""Shared plumbing of the pages: the jinja2 environment (autoescape ON for every template,
whatever its name) and small helpers to render, load traces and verdicts, and redirect."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse

from ..agent.trace import Trace, read_traces
from ..judge.verdict import Verdict
from .config import UIConfig
from .files import inside, kind_of

TEMPLATES = Path(__file__).parent / "templates"

# autoescape=True (not select_autoescape): every template escapes, even ones named *.j2.
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) of a unified diff, so the template can colour it (still escaped)."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append((cls, line))
    return out


def semantic_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) of a semantic harness diff (`+ added`, `- removed`, `~ changed`)."""
    marks = {"+": "add", "-": "del", "~": "chg"}
    return [(marks.get(line.lstrip()[:1], "ctx"), line) for line in diff.splitlines()]


_env.globals["diff_lines"] = diff_lines
_env.globals["semantic_lines"] = semantic_lines


def config(request: Request) -> UIConfig:
    cfg: UIConfig = request.app.state.config
    return cfg


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page from `templates/<name>`, with the session's CSRF token and the current path."""
    html = _env.get_template(name).render(csrf=request.state.csrf, path=request.url.path,
                                          **context)
    return HTMLResponse(html, status_code=status_code)


def run_file(request: Request, rel: str, kind: str | None = None) -> Path:
    """A file under the runs folder (404 when missing or outside; 400 if of another kind)."""
    path = inside(config(request).runs, rel)
    if not path.is_file():
        raise HTTPException(404, f"no file {rel} under the runs folder")
    if kind is not None and kind_of(path) != kind:
        raise HTTPException(400, f"{rel} is not a {kind} file")
    return path


@lru_cache(maxsize=16)
def _traces(path: Path, mtime_ns: int, size: int) -> tuple[Trace, ...]:
    return tuple(read_traces(path))


def load_traces(path: Path) -> tuple[Trace, ...]:
    """Every trace of a file, cached until the file changes; a bad line is a 400 naming it."""
    st = path.stat()
    try:
        return _traces(path, st.st_mtime_ns, st.st_size)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


@lru_cache(maxsize=16)
def _verdicts(path: Path, mtime_ns: int, size: int) -> dict[str, Verdict]:
    import json

    out: dict[str, Verdict] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            v = Verdict.from_dict(json.loads(line))
            out[v.trace_id] = v
    return out


def load_verdicts(paths: list[Path]) -> dict[str, tuple[str, Verdict]]:
    """trace id -> (verdict file name, verdict), from every file given (later files win)."""
    out: dict[str, tuple[str, Verdict]] = {}
    for p in paths:
        st = p.stat()
        try:
            found = _verdicts(p, st.st_mtime_ns, st.st_size)
        except (ValueError, TypeError):
            continue  # a verdict file this version cannot read is skipped, not fatal
        out.update({k: (p.name, v) for k, v in found.items()})
    return out


def find_trace(traces: tuple[Trace, ...], episode: str) -> tuple[int, Trace]:
    for i, t in enumerate(traces):
        if t.episode_id == episode:
            return i, t
    raise HTTPException(404, f"no episode {episode} in this file")
