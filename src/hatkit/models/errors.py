"""Typed backend failures: the one family of exceptions a model backend may report.

A backend reports a failed request as a `ModelError` subclass, either by raising it (the whole
call failed) or by returning `ModelOutput(error=...)` for that request (one of a batch failed).
The agent loop is the one place that turns them into `model_error` trace events with their
`kind`; the server maps `kind` to an HTTP status. Any other exception from a backend is a bug
and propagates: it must never be scored as a model that answered with the fallback.
"""

from __future__ import annotations

from typing import ClassVar


class ModelError(RuntimeError):
    """A backend failure that retries did not fix. `kind` is the stable name in traces."""

    kind: ClassVar[str] = "backend_error"
    http_status: ClassVar[int] = 503

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        """When the backend said how long to wait (Retry-After), in seconds."""

    def event_data(self) -> dict[str, object]:
        """What the trace records for this failure (JSON-safe)."""
        data: dict[str, object] = {"error_type": self.kind, "error": str(self)}
        if self.retry_after_s is not None:
            data["retry_after_s"] = self.retry_after_s
        return data


class RateLimited(ModelError):
    """The backend refused for load (HTTP 429) and kept refusing through the retries."""

    kind = "rate_limited"
    http_status = 429


class BackendUnavailable(ModelError):
    """The backend cannot be reached or answers 5xx / malformed responses."""

    kind = "backend_unavailable"
    http_status = 503


class BackendTimeout(ModelError):
    """The backend did not answer within its timeout."""

    kind = "backend_timeout"
    http_status = 504


class BadModelRequest(ModelError):
    """The backend rejected the request itself (HTTP 4xx other than 429/413)."""

    kind = "bad_request"
    http_status = 400


class ContextTooLong(ModelError):
    """The prompt (plus the tokens to generate) does not fit the model's context."""

    kind = "context_too_long"
    http_status = 413


class ScriptExhausted(ModelError):
    """A scripted test backend was asked for more outputs than it was given."""

    kind = "script_exhausted"
    http_status = 503


class CallBudgetSpent(ModelError):
    """A caller's own limit on model calls ended the turn (e.g. an evaluation's budget)."""

    kind = "call_budget"
    http_status = 503


MODEL_ERROR_KINDS: dict[str, type[ModelError]] = {c.kind: c for c in (
    ModelError, RateLimited, BackendUnavailable, BackendTimeout, BadModelRequest, ContextTooLong,
    ScriptExhausted, CallBudgetSpent)}


def error_class(kind: str) -> type[ModelError]:
    """The class recorded under `kind` (the base class for an unknown or missing kind)."""
    return MODEL_ERROR_KINDS.get(kind, ModelError)
