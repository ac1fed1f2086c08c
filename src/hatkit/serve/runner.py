"""Running one agent turn for a request: admission, worker thread, streaming, timeout, errors.

At most `limit` turns run at once, each in a worker thread; when all are busy a request is
refused at once with 429 + Retry-After (nothing queues). A turn past the timeout answers 504;
its thread runs to its end and keeps its slot until then, so timed-out work stays bounded.
A turn whose model call failed with a typed `ModelError` answers that kind's status (429 rate
limited, 503 unavailable, 504 backend timeout, 413 context too long, 400 bad request) with
Retry-After where it applies, not the fallback reply; tool failures are data and still end in
a normal reply. Any other exception is a bug: it propagates and the client gets a 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ..agent import Trace
from ..models.base import ChatMessage, ModelOutput, ModelRequest
from ..models.errors import ModelError, error_class
from .batching import BatchingModel
from .hotswap import Release
from .limits import ConcurrencyLimit, Saturated
from .metrics import ServerMetrics
from .streaming import ReplyGate, StreamPolicy

BACKEND_RETRY_AFTER_S = 5
log = logging.getLogger(__name__)


class ApiError(Exception):
    """An HTTP error answer: status, message, error type, extra headers."""

    def __init__(self, status: int, message: str, kind: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "code": self.status}}


@dataclass
class TurnResult:
    trace: Trace
    prompt_tokens: int
    completion_tokens: int
    release: Release
    gate: ReplyGate | None = None
    """The stream gate of a streamed turn (what was sent, whether it was withdrawn)."""


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _cap(request: ModelRequest, max_tokens: int | None) -> ModelRequest:
    if max_tokens is None:
        return request
    return replace(request, max_new_tokens=min(request.max_new_tokens, max_tokens))


class Runner:
    """Admission, worker threads, timeouts and metrics around one agent turn."""

    def __init__(self, model: BatchingModel, limit: ConcurrencyLimit, timeout_s: float,
                 metrics: ServerMetrics, stream_policy: StreamPolicy = "auto") -> None:
        self.model = model
        self.limit = limit
        self.timeout_s = timeout_s
        self.metrics = metrics
        self.stream_policy: StreamPolicy = stream_policy
        self.executor = ThreadPoolExecutor(max_workers=limit.limit, thread_name_prefix="hatkit-turn")

    def _generate(self, request: ModelRequest, sink: Callable[[str], None] | None) -> ModelOutput:
        """One model call; a raised ModelError becomes an error output (the loop records its
        kind); anything else is a bug and propagates."""
        try:
            outs = self.model.generate([request], streams=[sink] if sink else None)
        except ModelError as exc:
            return ModelOutput.failed(exc)
        if len(outs) != 1:
            raise RuntimeError(f"backend returned {len(outs)} outputs for 1 request")
        return outs[0]

    def turn(self, release: Release, history: Sequence[tuple[str, str]], text: str,
             max_tokens: int | None, meta: Mapping[str, Any],
             emit: Callable[[str], None] | None = None) -> TurnResult:
        """One viewer message on `release`'s agent (runs in a worker thread). With `emit`, the
        reply is streamed to it as the ReplyGate allows."""
        self.model.reset_usage()
        episode = release.agent.episode()
        episode.trace.meta.update(meta)
        context = getattr(self.model.inner, "context_tokens", None)
        for role, content in history:  # earlier conversation, replayed as context
            episode._feed(ChatMessage("user" if role == "user" else "assistant", content),
                          "user" if role == "user" else "reply", "history")
            if context is not None and episode.ids is not None and len(episode.ids) >= context:
                raise self.context_error(context)  # stop replaying; the backend checks the rest
        gate = None
        if emit is not None:
            gate = ReplyGate(self.stream_policy, release.agent.hooks,
                             lambda: episode.tools_ok, emit)
        step = episode.ask(text)
        try:
            request = next(step)
            while True:
                if gate is not None:
                    gate.begin_call()
                out = self._generate(_cap(request, max_tokens), gate.feed if gate else None)
                request = step.send(out)
        except StopIteration:
            pass
        if gate is not None and not episode.trace.events_of("model_error"):
            gate.finish(episode.trace.final_reply)
        prompt, completion = self.model.usage()
        if not prompt and not completion:  # a text-only backend that reports no usage
            prompt = sum(len(s.text.split()) for s in episode.trace.spans if s.source != "model")
            completion = sum(len(s.text.split()) for s in episode.trace.spans if s.source == "model")
        return TurnResult(episode.trace, prompt, completion, release, gate)

    def submit(self, release: Release, history: Sequence[tuple[str, str]], text: str,
               max_tokens: int | None, meta: Mapping[str, Any],
               emit: Callable[[str], None] | None = None) -> Future[TurnResult]:
        """Start a turn in a worker thread, or refuse at once (429) when every slot is busy."""
        try:
            self.limit.try_acquire()
        except Saturated:
            self.metrics.rejections.labels("saturated").inc()
            raise ApiError(429, f"server busy: all {self.limit.limit} agent slots are in use; "
                           "retry later", "overloaded", {"Retry-After": "1"}) from None
        self.metrics.in_flight.inc()
        try:
            fut = self.executor.submit(self.turn, release, history, text, max_tokens, meta, emit)
        except BaseException:
            self._done()
            raise
        fut.add_done_callback(lambda _f: self._done())  # the slot frees when the thread ends
        return fut

    def context_error(self, context: int) -> ApiError:
        self.metrics.rejections.labels("context_too_long").inc()
        return ApiError(413, f"the conversation does not fit the model's context of {context} "
                        "tokens: send fewer or shorter messages", "context_too_long")

    def timeout_error(self) -> ApiError:
        self.metrics.rejections.labels("timeout").inc()
        return ApiError(504, f"the agent did not answer within {self.timeout_s:g} s", "timeout")

    def conclude(self, result: TurnResult) -> TurnResult:
        """Metrics for a finished turn; its ModelError's status when the model call failed."""
        errors = result.trace.events_of("model_error")
        if errors:
            raise self.model_error(errors[-1].data)
        self.metrics.observe_trace(result.trace, result.prompt_tokens, result.completion_tokens)
        return result

    def model_error(self, data: Mapping[str, Any]) -> ApiError:
        """The HTTP answer for a `model_error` event: its kind's status and Retry-After."""
        kind = str(data.get("error_type", ""))
        cls = error_class(kind)
        kind = cls.kind
        self.metrics.rejections.labels(kind).inc()
        headers: dict[str, str] = {}
        if cls.http_status in (429, 503):
            wait = data.get("retry_after_s")
            seconds = wait if isinstance(wait, int | float) else BACKEND_RETRY_AFTER_S
            headers["Retry-After"] = str(max(1, round(seconds)))
        return ApiError(cls.http_status, f"model backend failed ({kind}): "
                        f"{str(data.get('error', '?'))[:300]}", kind, headers)

    def crashed(self, exc: BaseException) -> ApiError:
        """A turn that raised something other than a ModelError: a bug. Logged with its
        traceback; the client gets a JSON 500 (no internals) and the server goes on."""
        log.error("an agent turn crashed (a bug, not a model failure)", exc_info=exc)
        self.metrics.rejections.labels("internal_error").inc()
        return ApiError(500, f"internal error ({type(exc).__name__}); see the server log",
                        "internal_error")

    def outcome(self, fut: Future[TurnResult] | asyncio.Future[TurnResult]) -> TurnResult:
        """A finished turn's result, concluded: its ModelError's status, or a 500 for a bug."""
        try:
            result = fut.result()
        except ApiError:
            raise  # the turn refused the request itself (context too long)
        except Exception as exc:
            raise self.crashed(exc) from exc
        return self.conclude(result)

    async def run(self, release: Release, history: Sequence[tuple[str, str]], text: str,
                  max_tokens: int | None, meta: Mapping[str, Any]) -> TurnResult:
        fut = self.submit(release, history, text, max_tokens, meta)
        done, _ = await asyncio.wait({asyncio.wrap_future(fut)}, timeout=self.timeout_s)
        if not done:
            raise self.timeout_error()
        return self.outcome(fut)

    def _done(self) -> None:
        self.limit.release()
        self.metrics.in_flight.dec()
