"""Runs: every run under the runs folder with its report, traces, verdicts and journal; and
the raw files, served so that nothing in them can script this app (reports are sandboxed)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from ..files import inside, list_runs, scan_run
from ..web import config, neutralise, render, run_file

router = APIRouter()
SANDBOX_CSP = "sandbox; default-src 'none'; img-src data: 'self'; style-src 'unsafe-inline' 'self'"
"""A report is shown with scripts, forms and same-origin access all off, even if opened alone."""


@router.get("/", response_class=HTMLResponse)
def runs_page(request: Request) -> Response:
    cfg = config(request)
    return render(request, "runs.html.j2", runs=list_runs(cfg.runs), root=str(cfg.runs))


@router.get("/run", response_class=HTMLResponse)
def run_page(request: Request, name: str) -> Response:
    cfg = config(request)
    folder = cfg.runs if name == "." else run_file_dir(request, name)
    run = scan_run(cfg.runs, folder)
    md = None
    for rel in run.reports:
        if rel.endswith(".md"):
            md = run_file(request, rel).read_text(encoding="utf-8", errors="replace")
    html_report = next((r for r in run.reports if r.endswith(".html")), None)
    return render(request, "run.html.j2", run=run, report_md=md, report_html=html_report)


def run_file_dir(request: Request, name: str) -> Path:
    folder = inside(config(request).runs, name)
    if not folder.is_dir():
        raise HTTPException(404, f"no run {name}")
    return folder


@router.get("/file")
def raw_file(request: Request, path: str) -> Response:
    """A run file: HTML reports under a sandbox CSP, everything else as plain text (with
    spoofing characters shown as escapes, as on every page)."""
    file = run_file(request, path)
    if file.suffix == ".html":
        body = file.read_bytes()
        return Response(body, media_type="text/html; charset=utf-8",
                        headers={"Content-Security-Policy": SANDBOX_CSP})
    return PlainTextResponse(neutralise(file.read_text(encoding="utf-8", errors="replace")))
