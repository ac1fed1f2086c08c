"""Running one agent turn for a request: admission, worker thread, streaming, timeout, errors.

At most `limit` turns run at once, each in a worker thread; when all are busy a request is
refused at once with 429 + Retry-After (nothing queues). A turn past the timeout answers 504;
its thread runs to its end and keeps its slot until then, so timed-out work stays bounded.
A turn whose model call failed (backend down) answers 503 + Retry-After, not the fallback
reply; tool failures are data and still end in a normal reply.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ..agent import Trace
from ..models.base import ChatMessage, ModelOutput, ModelRequest
from .batching import BatchingModel
from .hotswap import Release
from .limits import ConcurrencyLimit, Saturated
from .metrics import ServerMetrics
from .streaming import ReplyGate, StreamPolicy

BACKEND_RETRY_AFTER_S = 5


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
        """One model call; a backend crash becomes an error output (the loop records it)."""
        try:
            outs = self.model.generate([request], streams=[sink] if sink else None)
            if len(outs) != 1:
                raise RuntimeError(f"backend returned {len(outs)} outputs for 1 request")
            return outs[0]
        except Exception as exc:  # noqa: BLE001 - a backend crash ends the turn cleanly (503)
            return ModelOutput("", finish_reason="error", error=f"{type(exc).__name__}: {exc}")

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
        """Metrics for a finished turn; 503 when its model backend failed."""
        errors = result.trace.events_of("model_error")
        if errors:
            self.metrics.rejections.labels("backend_unavailable").inc()
            raise ApiError(503, "the model backend is unavailable: "
                           f"{str(errors[-1].data.get('error', '?'))[:300]}",
                           "backend_unavailable", {"Retry-After": str(BACKEND_RETRY_AFTER_S)})
        self.metrics.observe_trace(result.trace, result.prompt_tokens, result.completion_tokens)
        return result

    async def run(self, release: Release, history: Sequence[tuple[str, str]], text: str,
                  max_tokens: int | None, meta: Mapping[str, Any]) -> TurnResult:
        fut = self.submit(release, history, text, max_tokens, meta)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(fut), self.timeout_s)
        except TimeoutError:
            raise self.timeout_error() from None
        return self.conclude(result)

    def _done(self) -> None:
        self.limit.release()
        self.metrics.in_flight.dec()
