"""Releases: the list, a diff between any two, and rollback behind a confirmation page.

Everything goes through `hatkit.evolve.release`, the same functions `hatkit release` uses.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ...evolve.release import Release, diff_releases, list_releases, rollback, show_release
from ...harness.errors import HarnessError
from ...harness.hashing import content_hash
from ...harness.versioning import VersioningError
from ..security import require_csrf
from ..versions import harness_folder
from ..web import config, render

router = APIRouter()


def _folder(request: Request) -> str:
    folder = harness_folder(config(request))
    if folder is None:
        raise HTTPException(404, "no harness repository: pass --harness (a harness folder in git) "
                                 "or keep one under the runs folder")
    return str(folder)


def _releases(folder: str) -> list[Release]:
    try:
        return list_releases(folder)
    except VersioningError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/releases", response_class=HTMLResponse)
def releases_page(request: Request, a: str = "", b: str = "", done: str = "") -> Response:
    if harness_folder(config(request)) is None:
        return render(request, "releases.html.j2", releases=[], folder="", a=a, b=b, diff=None,
                      error="", done=done, current="")
    folder = _folder(request)
    releases = list(reversed(_releases(folder)))
    diff, error = None, ""
    if a and b:
        try:
            diff = diff_releases(a, b, folder)
        except (VersioningError, HarnessError) as exc:
            error = str(exc)
    try:
        current = content_hash(Path(folder))
    except (OSError, HarnessError):
        current = ""
    return render(request, "releases.html.j2", releases=releases, folder=folder, a=a, b=b,
                  diff=diff, error=error, done=done, current=current)


@router.get("/releases/rollback", response_class=HTMLResponse)
def confirm_rollback(request: Request, name: str) -> Response:
    folder = _folder(request)
    try:
        release = show_release(name, folder)
    except VersioningError as exc:
        raise HTTPException(404, str(exc)) from None
    return render(request, "rollback.html.j2", r=release, folder=folder)


@router.post("/releases/rollback", dependencies=[Depends(require_csrf)])
async def do_rollback(request: Request) -> Response:
    form = await request.form()
    name = str(form.get("name", ""))
    if form.get("confirm") != "yes":
        raise HTTPException(400, "tick the confirmation box to roll back")
    try:
        restored = rollback(name, _folder(request), force=False)
    except VersioningError as exc:
        raise HTTPException(409, str(exc)) from None
    query = urlencode({"done": f"rolled back to {name} (harness {restored[:12]})"})
    return RedirectResponse(f"/releases?{query}", status_code=303)
