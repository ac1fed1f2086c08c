"""Admission control and request-body limits."""

from __future__ import annotations

import ipaddress
import threading

from starlette.requests import Request


class Saturated(Exception):
    """Every agent slot is busy."""


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"request body exceeds {limit} bytes")
        self.limit = limit


class ConcurrencyLimit:
    """At most `limit` agent runs at once; `try_acquire` never waits (the caller answers 429)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.limit = limit
        self._lock = threading.Lock()
        self.active = 0

    def try_acquire(self) -> None:
        with self._lock:
            if self.active >= self.limit:
                raise Saturated()
            self.active += 1

    def release(self) -> None:
        with self._lock:
            self.active -= 1


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refusing (BodyTooLarge) past `limit` bytes by Content-Length or by count."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def is_loopback(host: str | None) -> bool:
    if host in ("localhost", "testclient"):
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
