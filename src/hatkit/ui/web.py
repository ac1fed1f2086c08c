"""Shared plumbing of the pages: the jinja2 environment (autoescape ON for every template,
whatever its name) and small helpers to render, load traces and verdicts, and redirect.

Run files are untrusted: each line is read and type-checked on its own, so a bad line is
named on the page and the rest of the file is still shown. Every text a template outputs
passes `neutralise`, so characters that reorder or hide text cannot spoof what a reviewer
reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup
from pydantic import TypeAdapter

from ..agent.trace import Trace
from ..judge.verdict import Verdict
from .config import UIConfig
from .files import BadLine, inside, kind_of, read_lines

TEMPLATES = Path(__file__).parent / "templates"

# Bidi controls (U+202A-E, U+2066-9, marks), zero-width and other invisible format characters,
# tag characters (invisible "ASCII smuggling"), variation selectors 17-256, Hangul fillers, and
# C0/C1 controls other than tab and line ends, and lone surrogates (a file name that is not
# UTF-8). ZWJ/ZWNJ and VS1-16 stay: emoji and scripts need them, and they neither reorder
# nor hide text.
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4"
                     "\u17b5\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
                     "\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef\ud800-\udfff]")
_SHOWN = re.compile(r"⟦U\+([0-9A-F]{4,6})⟧")


def neutralise(text: str) -> str:
    """`text` with every spoofing character shown as a visible escape, e.g. ⟦U+202E⟧."""
    return _HIDDEN.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)


def restore(text: str) -> str:
    """The inverse of `neutralise`, for text a page showed escaped and a form sends back."""
    def back(m: re.Match[str]) -> str:
        cp = int(m.group(1), 16)
        ok = cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF and _HIDDEN.fullmatch(chr(cp))
        return chr(cp) if ok else m.group(0)
    return _SHOWN.sub(back, text)


class Exact(str):
    """A value a template must output unchanged (hidden form fields, option values): the
    browser does not display it, and the form must send back exactly what it was."""


def _finalize(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Exact):
        return str(value)
    if isinstance(value, Markup):
        return Markup(neutralise(str(value)))
    return neutralise(value if isinstance(value, str) else str(value))


# autoescape=True (not select_autoescape): every template escapes, even ones named *.j2.
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          finalize=_finalize)
_env.filters["exact"] = Exact


def _urlencode(value: Any) -> str:
    """Jinja's urlencode, except that a name that is not UTF-8 (a surrogate-escaped file
    name) is quoted byte for byte instead of raising."""
    if isinstance(value, str):
        return quote(value.encode("utf-8", "surrogateescape"), safe="/")
    return str(jinja2.filters.do_urlencode(value))


_env.filters["urlencode"] = _urlencode


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


@dataclass(frozen=True)
class TraceFile:
    traces: tuple[Trace, ...]
    bad: tuple[BadLine, ...]


_TRACE = TypeAdapter(Trace)
_VERDICT = TypeAdapter(Verdict)


@lru_cache(maxsize=16)
def _traces(path: Path, mtime_ns: int, size: int) -> TraceFile:
    good, bad = read_lines(path, _TRACE.validate_python, "episode_id")
    return TraceFile(tuple(good), tuple(bad))


def load_traces(path: Path) -> TraceFile:
    """Every readable trace of a file, and its unreadable lines; cached until the file changes."""
    st = path.stat()
    return _traces(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=16)
def _verdicts(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, Verdict], tuple[BadLine, ...]]:
    good, bad = read_lines(path, _VERDICT.validate_python, "trace_id")
    return {v.trace_id: v for v in good}, tuple(bad)


def load_verdicts(paths: list[Path]) -> tuple[dict[str, tuple[str, Verdict]], list[BadLine]]:
    """trace id -> (verdict file name, verdict), from every file given (later files win), and
    the lines that could not be read."""
    out: dict[str, tuple[str, Verdict]] = {}
    bad: list[BadLine] = []
    for p in paths:
        st = p.stat()
        found, unread = _verdicts(p, st.st_mtime_ns, st.st_size)
        out.update({k: (p.name, v) for k, v in found.items()})
        bad += unread
    return out, bad


def find_trace(tf: TraceFile, episode: str) -> tuple[int, Trace]:
    for i, t in enumerate(tf.traces):
        if t.episode_id == episode:
            return i, t
    if bad := next((b for b in tf.bad if b.record_id == episode), None):
        raise HTTPException(422, f"episode {episode} is on a line this viewer cannot read: {bad}")
    raise HTTPException(404, f"no episode {episode} in this file")
