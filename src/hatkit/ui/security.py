"""Request guards: host check, access token, cross-site POST protection, security headers.

Why each exists: the app can approve harness edits and roll back releases, so a web page in
another tab must not be able to drive it (CSRF: a per-session token in every form, plus the
browser's Origin and Sec-Fetch-Site headers), a DNS-rebinding page must not reach it through
a loopback bind (Host check), and a non-loopback bind must not be open to the network (token).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from fastapi import HTTPException, Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from .config import UIConfig

SESSION_COOKIE = "hatkit_session"
TOKEN_COOKIE = "hatkit_token"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'self'")
"""No inline script or style anywhere: even markup that slipped through escaping cannot run."""

Handler = Callable[[Request], Awaitable[Response]]


def csrf_token(secret: bytes, session: str) -> str:
    """The form token of a session: an HMAC, so it cannot be guessed from the session id."""
    return hmac.new(secret, session.encode(), hashlib.sha256).hexdigest()


def _host_ok(config: UIConfig, request: Request) -> bool:
    if "*" in config.allowed_hosts:
        return True
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in config.allowed_hosts or host in config.allowed_hosts


def _token_ok(config: UIConfig, request: Request) -> bool:
    assert config.token is not None
    auth = request.headers.get("authorization", "")
    given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.cookies.get(TOKEN_COOKIE, "")
    return hmac.compare_digest(given.encode(), config.token.encode())


def _cross_site(request: Request) -> str | None:
    """Why a state-changing request looks cross-site, or None when it does not."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {site}"
    origin = request.headers.get("origin")
    if origin is not None:
        expected = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != expected:
            return f"Origin {origin} is not {expected}"
    return None


def guard(config: UIConfig, secret: bytes) -> Callable[[Request, Handler], Awaitable[Response]]:
    """The HTTP middleware doing every check above; also gives each browser a session."""

    async def middleware(request: Request, call_next: Handler) -> Response:
        if not _host_ok(config, request):
            return PlainTextResponse("unexpected Host header", status_code=421)
        if config.token is not None:
            query_token = request.query_params.get("token")
            if query_token is not None and request.method == "GET":
                if not hmac.compare_digest(query_token.encode(), config.token.encode()):
                    return PlainTextResponse("wrong token", status_code=401)
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                to = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                redirect = RedirectResponse(to, status_code=303)
                redirect.set_cookie(TOKEN_COOKIE, config.token, httponly=True, samesite="strict")
                return redirect
            if not _token_ok(config, request):
                return PlainTextResponse("this hatkit ui needs its token: open it with ?token=...",
                                         status_code=401)
        if request.method not in SAFE_METHODS and (why := _cross_site(request)):
            return PlainTextResponse(f"cross-site request refused ({why})", status_code=403)
        session = request.cookies.get(SESSION_COOKIE, "")
        fresh = len(session) != 32
        if fresh:
            session = secrets.token_hex(16)
        request.state.session = session
        request.state.csrf = csrf_token(secret, session)
        response = await call_next(request)
        if fresh:
            response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        # "no-referrer" would make Chromium send `Origin: null` on our own form posts
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
        return response

    return middleware


async def require_csrf(request: Request) -> None:
    """FastAPI dependency of every POST route: the form must carry this session's token."""
    form = await request.form()
    sent = str(form.get(CSRF_FIELD, ""))
    expected: str = request.state.csrf
    had_session = SESSION_COOKIE in request.cookies
    if not had_session or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise HTTPException(403, "missing or stale form token (reload the page and try again)")
