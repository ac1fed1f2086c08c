"""The `hatkit ui` app: server-rendered pages for the human steps (runs, traces, the Confirm
gate of harness evolution, labels for judge calibration, releases)."""

from __future__ import annotations

import secrets
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from .config import UIConfig
from .pages import labels, releases, review, runs, traces
from .security import guard
from .web import render

STATIC = Path(__file__).parent / "static"


def create_app(config: UIConfig) -> FastAPI:
    """The app for `config`; every request passes the guards in `security`."""
    cfg = UIConfig(**{**config.__dict__, "runs": config.runs.resolve()})
    app = FastAPI(title="hatkit ui", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.config = cfg
    app.middleware("http")(guard(cfg, cfg.secret or secrets.token_bytes(32)))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for module in (runs, traces, review, labels, releases):
        app.include_router(module.router)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        # the same escaped page for every error; messages may quote untrusted file content
        if not hasattr(request.state, "csrf"):
            request.state.csrf = ""
        return render(request, "error.html.j2", exc.status_code, status=exc.status_code,
                      message=str(exc.detail))

    return app
