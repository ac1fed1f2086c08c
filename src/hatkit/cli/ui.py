"""`hatkit ui`: the web page for the human steps (Confirm gate, labels, traces, releases)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import _fail, _say, app


@app.command("ui")
def ui(
    runs: Annotated[Path, typer.Option(help="The runs folder: runs, traces, verdicts, journals "
                                       "and reports under it.")] = Path("runs"),
    host: Annotated[str, typer.Option(help="Address to bind. Anything but loopback needs "
                                      "--token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option(
        envvar="HATKIT_UI_TOKEN", help="Access token every request must carry (open "
        "http://HOST:PORT/?token=... once; a cookie keeps it). Required off loopback.")] = None,
    labels: Annotated[Path | None, typer.Option(help="Labels file (JSONL) the labelling page "
                                                "appends to (default: RUNS/labels.jsonl).")] = None,
    harness: Annotated[Path | None, typer.Option(help="Harness folder in git: versions and "
                       "releases (default: the first one found under RUNS).")] = None,
) -> None:
    """Serve the pages for the human steps: runs and reports, the trace viewer, evolution
    review (approve / reject / edit pending harness edits), labelling for judge calibration,
    and releases (diff, rollback). Binds 127.0.0.1 unless told otherwise."""
    import uvicorn

    from ..ui import UIConfig, create_app, is_loopback

    if not runs.is_dir():
        raise _fail(f"{runs} is not a folder (pass --runs)")
    if not is_loopback(host) and not token:
        raise _fail(f"binding {host} exposes the app beyond this machine: pass --token (or set "
                    "HATKIT_UI_TOKEN)")
    if token is not None and len(token) < 16:
        raise _fail("--token must be at least 16 characters (e.g. `python -c 'import secrets; "
                    "print(secrets.token_urlsafe())'`)")
    if harness is not None and not (harness / "harness.yaml").is_file():
        raise _fail(f"{harness} is not a harness folder (no harness.yaml)")
    # a loopback bind accepts only loopback Host headers (DNS rebinding); a token guards others
    hosts = ("*",) if token else UIConfig(runs).allowed_hosts
    config = UIConfig(runs=runs, token=token, labels=labels, harness=harness, allowed_hosts=hosts)
    shown = f"[{host}]" if ":" in host else host
    _say(f"hatkit ui on http://{shown}:{port}/" + ("?token=..." if token else ""))
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning")
