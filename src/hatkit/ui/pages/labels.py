"""Labelling for judge calibration: one trace at a time, accuracy and effectiveness (0/1) with
an optional note, saved under the annotator's name into the labels file the calibration reads.
The judge's verdict stays hidden until this annotator's label of the trace is saved, so it
cannot anchor them; then it is shown beside their label."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ...agent.trace import Trace
from ...judge.labels import Label, LabelError
from ...judge.verdict import DIMENSIONS
from .. import labelstore
from ..files import list_runs, sibling_verdicts
from ..security import require_csrf
from ..web import config, find_trace, load_traces, load_verdicts, render, run_file

router = APIRouter()
ANNOTATOR_COOKIE = "hatkit_annotator"


def _labels(request: Request) -> tuple[list[Label], list[str]]:
    """The labels file's good rows and a message per bad row (shown; saving is refused)."""
    return labelstore.read_lenient(config(request).labels_path)


@router.get("/labels", response_class=HTMLResponse)
def labels_page(request: Request) -> Response:
    cfg = config(request)
    labels, bad = _labels(request)
    files = [f for run in list_runs(cfg.runs) for f in run.of("traces")]
    people: dict[str, int] = {}
    for x in labels:
        people[x.annotator] = people.get(x.annotator, 0) + 1
    return render(request, "labels.html.j2", files=files, labels_path=str(cfg.labels_path),
                  total=len(labels), people=sorted(people.items()),
                  pairs=labelstore.pair_agreements(labels),
                  annotator=request.cookies.get(ANNOTATOR_COOKIE, ""), bad=bad)


@router.get("/label", response_class=HTMLResponse)
def label_page(request: Request, file: str, id: str = "",
               annotator: str = "") -> Response:
    name = (annotator or request.cookies.get(ANNOTATOR_COOKIE, "")).strip()
    tf = load_traces(run_file(request, file, "traces"))
    labels, bad_labels = _labels(request)
    done = labelstore.labelled_by(labels, name) if name else set()
    file_done = sum(t.episode_id in done for t in tf.traces)
    trace: Trace | None = find_trace(tf, id)[1] if id else next(
        (t for t in tf.traces if t.episode_id not in done), None)
    already = trace is not None and trace.episode_id in done
    response = render(request, "label.html.j2", file=file, t=trace, annotator=name,
                      done=file_done, total=len(tf.traces), already=already,
                      bad=[*map(str, tf.bad), *bad_labels])
    if annotator:
        response.set_cookie(ANNOTATOR_COOKIE, name, samesite="strict", httponly=True)
    return response


@router.post("/label", dependencies=[Depends(require_csrf)])
async def save_label(request: Request) -> Response:
    form = await request.form()
    file, tid = str(form.get("file", "")), str(form.get("id", ""))
    name = str(form.get("annotator", "")).strip()
    note = str(form.get("note", "")).strip()
    if not name:
        raise HTTPException(400, "an annotator name is required")
    find_trace(load_traces(run_file(request, file, "traces")), tid)
    values = {d: str(form.get(d, "")) for d in DIMENSIONS}
    if bad := [d for d, v in values.items() if v not in ("0", "1")]:
        raise HTTPException(400, f"choose pass or fail for {', '.join(bad)}")
    new = [Label(tid, d, int(v), name, note) for d, v in values.items()]
    try:
        labelstore.append(config(request).labels_path, new)
    except LabelError as exc:
        raise HTTPException(409, str(exc)) from None
    query = urlencode({"file": file, "id": tid})
    response = RedirectResponse(f"/label/saved?{query}", status_code=303)
    response.set_cookie(ANNOTATOR_COOKIE, name, samesite="strict", httponly=True)
    return response


@router.get("/label/saved", response_class=HTMLResponse)
def saved_page(request: Request, file: str, id: str) -> Response:
    """This annotator's label next to the judge's verdict (only once the label exists)."""
    name = request.cookies.get(ANNOTATOR_COOKIE, "")
    path = run_file(request, file, "traces")
    find_trace(load_traces(path), id)
    mine = [x for x in _labels(request)[0] if x.trace_id == id and x.annotator == name]
    if not name or not mine:
        raise HTTPException(403, "the judge's verdict is shown only after you label this trace")
    source, verdict = load_verdicts(sibling_verdicts(path))[0].get(id, ("", None))
    return render(request, "label_saved.html.j2", file=file, tid=id, mine=mine, annotator=name,
                  verdict=verdict, verdict_file=source)
