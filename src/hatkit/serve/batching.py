"""A ChatModel wrapper that lets many threads share one (non-thread-safe) model.

Threads running episodes call `generate`; whoever finds the model idle becomes the leader,
takes every request queued so far and calls the inner model once for all of them (so
concurrent episodes are decoded in one batch); the others wait for their outputs. The inner
model is never called from two threads at once, which is what LocalModel needs.

Streaming: a caller may pass a text sink per request. A backend whose `generate` takes
`streams` (LocalModel) feeds each sink as its row decodes, batched or not; for any other
backend the sink gets the whole text once the call returns. Every call's outcome goes to
`health` (a failed call marks the backend down, see health.py).
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..models.base import ChatModel, ModelOutput, ModelRequest, TokenFormat
from .health import BackendHealth

log = logging.getLogger(__name__)

Sink = Callable[[str], None]


@dataclass(eq=False)  # identity: equal requests from two callers are two jobs
class _Job:
    requests: Sequence[ModelRequest]
    streams: Sequence[Sink | None]
    outputs: list[ModelOutput] | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class _Usage:
    prompt: int = 0
    completion: int = 0
    calls: list[int] = field(default_factory=list)


class BatchingModel:
    """Serialises and batches calls to `inner`; counts tokens per calling thread."""

    def __init__(self, inner: ChatModel, max_batch: int = 16,
                 health: BackendHealth | None = None) -> None:
        self.inner = inner
        self.health = health or BackendHealth()
        try:
            self.native_streaming = "streams" in inspect.signature(inner.generate).parameters
        except (TypeError, ValueError):
            self.native_streaming = False
        self.model_id = inner.model_id
        self.native_tools = inner.native_tools
        self.max_batch = max_batch
        self._cv = threading.Condition()
        self._pending: list[_Job] = []
        self._busy = False
        self._local = threading.local()
        self.batch_sizes: list[int] = []
        """Requests per inner call (the last 1000), for tests and metrics."""

    def token_format(self) -> TokenFormat | None:
        return self.inner.token_format()

    # -- per-thread token accounting (an episode runs in one worker thread) --
    def reset_usage(self) -> None:
        self._local.usage = _Usage()

    def usage(self) -> tuple[int, int]:
        u: _Usage | None = getattr(self._local, "usage", None)
        return (u.prompt, u.completion) if u else (0, 0)

    def generate(self, requests: Sequence[ModelRequest],
                 streams: Sequence[Sink | None] | None = None) -> list[ModelOutput]:
        job = _Job(requests, list(streams) if streams is not None else [None] * len(requests))
        with self._cv:
            self._pending.append(job)
            while not job.done and self._busy:
                self._cv.wait()
            if job.done:
                return self._finish(job)
            self._busy = True
            self._pending.remove(job)
            batch, size = [job], len(job.requests)
            while self._pending and size + len(self._pending[0].requests) <= self.max_batch:
                nxt = self._pending.pop(0)
                batch.append(nxt)
                size += len(nxt.requests)
        flat = [r for j in batch for r in j.requests]
        sinks = [s for j in batch for s in j.streams]
        try:
            try:
                outs = self._call_inner(flat, sinks)
                if len(outs) != len(flat):
                    raise RuntimeError(f"backend returned {len(outs)} outputs for {len(flat)} requests")
                self.health.record(outs)
                pos = 0
                for j in batch:
                    j.outputs = outs[pos:pos + len(j.requests)]
                    pos += len(j.requests)
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting caller
                self.health.failed(f"{type(exc).__name__}: {exc}")
                for j in batch:
                    j.error = exc
        finally:
            with self._cv:
                for j in batch:
                    j.done = True
                self.batch_sizes = [*self.batch_sizes[-999:], len(flat)]
                self._busy = False
                self._cv.notify_all()
        return self._finish(job)

    def _call_inner(self, flat: list[ModelRequest], sinks: list[Sink | None]) -> list[ModelOutput]:
        if not any(sinks):
            return self.inner.generate(flat)
        if self.native_streaming:
            return self.inner.generate(flat, streams=sinks)  # type: ignore[call-arg]
        outs = self.inner.generate(flat)
        for sink, out in zip(sinks, outs, strict=False):
            if sink is not None and out.text and out.error is None:
                try:
                    sink(out.text)
                except Exception:
                    log.exception("a stream consumer raised; its text was not delivered")
        return outs

    def _finish(self, job: _Job) -> list[ModelOutput]:
        if job.error is not None:
            raise job.error
        assert job.outputs is not None
        u: _Usage | None = getattr(self._local, "usage", None)
        if u is not None:
            for o in job.outputs:
                u.prompt += o.prompt_tokens
                u.completion += o.completion_tokens
        return job.outputs
