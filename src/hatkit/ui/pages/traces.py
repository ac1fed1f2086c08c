"""Trace viewer: the episodes of a traces file, one episode with its segments coloured by
kind, faults and hook events marked, its judge verdict with evidence, and the harness
version (by content hash) it ran under."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from ...agent.trace import Trace
from ...harness.versioning import VersioningError
from ..files import sibling_verdicts
from ..versions import commit_of, files_at, open_repo
from ..web import config, find_trace, load_traces, load_verdicts, render, run_file

router = APIRouter()
FAULT_EVENTS = frozenset({"fault_injected", "tool_error", "model_error"})
HOOK_EVENTS = frozenset({"hook_veto", "hook_rewrite", "hook_error"})


def first_viewer(t: Trace) -> str:
    return next((s.text for s in t.spans if s.segment == "user"), "")


@router.get("/traces", response_class=HTMLResponse)
def traces_page(request: Request, file: str) -> Response:
    path = run_file(request, file, "traces")
    tf = load_traces(path)
    verdicts, bad_verdicts = load_verdicts(sibling_verdicts(path))
    rows = [(t, first_viewer(t), verdicts.get(t.episode_id, ("", None))[1]) for t in tf.traces]
    return render(request, "traces.html.j2", file=file, rows=rows, faults=FAULT_EVENTS,
                  hooks=HOOK_EVENTS, bad=[*tf.bad, *bad_verdicts])


@router.get("/trace", response_class=HTMLResponse)
def trace_page(request: Request, file: str, id: str) -> Response:
    path = run_file(request, file, "traces")
    tf = load_traces(path)
    traces = tf.traces
    index, trace = find_trace(tf, id)
    verdicts, bad_verdicts = load_verdicts(sibling_verdicts(path))
    source, verdict = verdicts.get(trace.episode_id, ("", None))
    repo = open_repo(config(request))
    version = commit_of(repo, trace.harness_hash) if repo else None
    prev_id = traces[index - 1].episode_id if index > 0 else None
    next_id = traces[index + 1].episode_id if index + 1 < len(traces) else None
    return render(request, "trace.html.j2", file=file, t=trace, index=index, total=len(traces),
                  verdict=verdict, verdict_file=source, version=version, prev_id=prev_id,
                  next_id=next_id, faults=FAULT_EVENTS, hooks=HOOK_EVENTS,
                  bad=[*tf.bad, *bad_verdicts])


@router.get("/harness/{harness_hash}", response_class=HTMLResponse)
def harness_page(request: Request, harness_hash: str) -> Response:
    """The harness as it was at the commit recording this content hash."""
    repo = open_repo(config(request))
    if repo is None:
        return render(request, "harness.html.j2", harness_hash=harness_hash, entry=None, files=[],
                      reason="no harness repository under the runs folder (or --harness)")
    entry = commit_of(repo, harness_hash)
    if entry is None:
        return render(request, "harness.html.j2", harness_hash=harness_hash, entry=None, files=[],
                      reason=f"no commit of {repo.folder.name} records this harness hash")
    try:
        files = files_at(repo, entry.sha)
    except VersioningError as exc:
        raise HTTPException(404, str(exc)) from None
    return render(request, "harness.html.j2", harness_hash=harness_hash, entry=entry, files=files,
                  reason="")
