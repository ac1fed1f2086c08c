"""Backend health as the server sees it: every model call's outcome, and recovery probes.

A model call that fails (an unreachable OpenAI-compatible upstream, a local model raising)
marks the backend down; the next call that succeeds marks it up. While it is down, requests
get 503 + Retry-After instead of the harness's fallback reply (a fallback that says nothing
is not a reply), and `/healthz` answers 503 so a load balancer can route around the server.
Because a balancer then sends no traffic, `/healthz` also starts a small probe call (one
token) at most every `probe_interval_s`, so a recovered backend is noticed without traffic.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..models.base import ModelOutput
from ..models.errors import ModelError

log = logging.getLogger(__name__)


@dataclass
class _State:
    ok: bool = True
    last_error: str | None = None
    last_error_at: float | None = None
    last_ok_at: float | None = None
    consecutive_errors: int = 0
    errors_total: int = 0


class BackendHealth:
    """Thread-safe record of model-call outcomes (fed by BatchingModel)."""

    def __init__(self, probe_interval_s: float = 5.0) -> None:
        self.probe_interval_s = probe_interval_s
        self._lock = threading.Lock()
        self._s = _State()
        self._probe_at = 0.0
        self._probing = False

    def record(self, outputs: Sequence[ModelOutput]) -> None:
        errors = [f"{o.error.kind}: {o.error}" for o in outputs if o.error is not None]
        if errors:
            self.failed(errors[0])
        elif outputs:
            self.succeeded()

    def failed(self, error: str) -> None:
        with self._lock:
            s = self._s
            s.ok, s.last_error, s.last_error_at = False, error[:500], time.time()
            s.consecutive_errors += 1
            s.errors_total += 1

    def succeeded(self) -> None:
        with self._lock:
            self._s.ok, self._s.last_ok_at, self._s.consecutive_errors = True, time.time(), 0

    @property
    def ok(self) -> bool:
        return self._s.ok

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            s = self._s
            return {"ok": s.ok, "last_error": s.last_error, "last_error_at": s.last_error_at,
                    "last_ok_at": s.last_ok_at, "consecutive_errors": s.consecutive_errors,
                    "errors_total": s.errors_total, "probing": self._probing}

    def maybe_probe(self, probe: Callable[[], None]) -> bool:
        """Start `probe` in a daemon thread if the backend is down and no probe ran lately."""
        with self._lock:
            now = time.monotonic()
            if self._s.ok or self._probing or now - self._probe_at < self.probe_interval_s:
                return False
            self._probing, self._probe_at = True, now

        def run() -> None:
            try:
                probe()
            except ModelError as exc:  # the backend is still down: a health fact
                self.failed(f"probe: {exc.kind}: {exc}")
            except Exception as exc:
                log.error("the backend health probe crashed (a bug, not a backend outage)",
                          exc_info=exc)
                self.failed(f"probe crashed: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._probing = False

        threading.Thread(target=run, name="hatkit-probe", daemon=True).start()
        return True
