"""The HTTP server of a harness agent (FastAPI on uvicorn).

Routes: POST /v1/chat/completions (OpenAI-compatible, SSE when stream=true), POST
/v1/live/messages, GET /healthz, GET /metrics (Prometheus), GET/POST /admin/harness (hot
swap, loopback clients only).

Concurrency: at most `max_concurrency` agent turns run at once, each in a worker thread; when
all are busy a request is refused at once with 429 + Retry-After (nothing queues). All model
calls go through one `BatchingModel`, which never calls the model from two threads at once
(LocalModel is not thread-safe) and decodes the requests waiting at that moment in one batch.
A turn past `request_timeout_s` answers 504; its thread runs to its end and keeps its slot
until then, so timed-out work stays bounded too.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..agent import Agent, Trace
from ..agent.loop import generate_safely
from ..harness import Harness, load_harness
from ..models.base import ChatMessage, ChatModel, ModelRequest
from .batching import BatchingModel
from .hotswap import HarnessSlot, Release, UnknownHarness
from .limits import BodyTooLarge, ConcurrencyLimit, Saturated, is_loopback, read_body
from .metrics import ServerMetrics

ROUTES = ("/v1/chat/completions", "/v1/live/messages", "/healthz", "/metrics", "/admin/harness")


# ---------------------------------------------------------------- request schemas

class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class ChatMessageIn(_Strict):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content)
        return self.content or ""


class ChatRequest(_Strict):
    model: str | None = None
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    harness: str | None = None


class LiveContext(_Strict):
    stream_title: str | None = None
    product_ids: list[str] | None = None


class LiveRequest(_Strict):
    message: str = Field(min_length=1, max_length=8000)
    viewer_id: str | None = Field(default=None, max_length=200)
    context: LiveContext | None = None
    harness: str | None = None


class SwapRequest(_Strict):
    harness: str


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.headers = dict(headers or {})


def _error_response(err: ApiError) -> JSONResponse:
    return JSONResponse({"error": {"message": err.message, "type": err.kind, "code": err.status}},
                        status_code=err.status, headers=err.headers)


def _parse(body: bytes, schema: type[_Strict]) -> Any:
    try:
        json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}", "invalid_json") from None
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                             for e in exc.errors()[:10])
        raise ApiError(422, f"invalid request: {problems}", "invalid_request") from None


# ---------------------------------------------------------------- running a turn

@dataclass
class TurnResult:
    trace: Trace
    prompt_tokens: int
    completion_tokens: int
    release: Release


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class Runner:
    """Admission, worker threads, timeouts and metrics around one agent turn."""

    def __init__(self, model: BatchingModel, limit: ConcurrencyLimit, timeout_s: float,
                 metrics: ServerMetrics) -> None:
        self.model = model
        self.limit = limit
        self.timeout_s = timeout_s
        self.metrics = metrics
        self.executor = ThreadPoolExecutor(max_workers=limit.limit, thread_name_prefix="hatkit-turn")

    def turn(self, release: Release, history: Sequence[tuple[str, str]], text: str,
             max_tokens: int | None, meta: Mapping[str, Any]) -> TurnResult:
        """One viewer message on `release`'s agent (runs in a worker thread)."""
        self.model.reset_usage()
        episode = release.agent.episode()
        episode.trace.meta.update(meta)
        for role, content in history:  # earlier conversation, replayed as context
            episode._feed(ChatMessage("user" if role == "user" else "assistant", content),
                          "user" if role == "user" else "reply", "history")
        step = episode.ask(text)
        try:
            request = next(step)
            while True:
                if max_tokens is not None:
                    request = _cap(request, max_tokens)
                request = step.send(generate_safely(self.model, [request])[0])
        except StopIteration:
            pass
        prompt, completion = self.model.usage()
        if not prompt and not completion:  # a text-only backend that reports no usage
            prompt = sum(len(s.text.split()) for s in episode.trace.spans if s.source != "model")
            completion = sum(len(s.text.split()) for s in episode.trace.spans if s.source == "model")
        return TurnResult(episode.trace, prompt, completion, release)

    async def run(self, release: Release, history: Sequence[tuple[str, str]], text: str,
                  max_tokens: int | None, meta: Mapping[str, Any]) -> TurnResult:
        try:
            self.limit.try_acquire()
        except Saturated:
            self.metrics.rejections.labels("saturated").inc()
            raise ApiError(429, f"server busy: all {self.limit.limit} agent slots are in use; "
                           "retry later", "overloaded", {"Retry-After": "1"}) from None
        self.metrics.in_flight.inc()
        try:
            fut: Future[TurnResult] = self.executor.submit(self.turn, release, history, text,
                                                           max_tokens, meta)
        except BaseException:
            self._done()
            raise
        fut.add_done_callback(lambda _f: self._done())  # the slot frees when the thread ends
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(fut), self.timeout_s)
        except TimeoutError:
            self.metrics.rejections.labels("timeout").inc()
            raise ApiError(504, f"the agent did not answer within {self.timeout_s:g} s",
                           "timeout") from None
        self.metrics.observe_trace(result.trace, result.prompt_tokens, result.completion_tokens)
        return result

    def _done(self) -> None:
        self.limit.release()
        self.metrics.in_flight.dec()


def _cap(request: ModelRequest, max_tokens: int) -> ModelRequest:
    return replace(request, max_new_tokens=min(request.max_new_tokens, max_tokens))


def _hatkit_block(r: TurnResult) -> dict[str, Any]:
    t = r.trace
    return {"trace_id": t.episode_id, "harness": r.release.label, "harness_name": t.harness_name,
            "harness_hash": t.harness_hash,
            "tool_calls": [c.name for c in t.tool_calls],
            "events": _jsonable([asdict(e) for e in t.events]),
            "latency_ms": round(t.timings.total_s * 1000, 1)}


def _pieces(text: str) -> list[str]:
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


# ---------------------------------------------------------------- metrics middleware

class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        route = path if path in ROUTES else "other"
        status = 500
        started = time.perf_counter()

        async def wrapped(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, wrapped)
        finally:
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)


# ---------------------------------------------------------------- the app

def create_app(harness: Harness | str, model: ChatModel, *, max_concurrency: int = 4,
               request_timeout_s: float = 60.0, max_body_bytes: int = 65536,
               harnesses: Mapping[str, Harness] | None = None,
               agent_kwargs: Mapping[str, Any] | None = None) -> FastAPI:
    """The server app. `harnesses` names the releases a request or a hot swap may pick;
    `agent_kwargs` go to every Agent (e.g. state_factory, permissions)."""
    initial = load_harness(harness) if isinstance(harness, str) else harness
    batcher = BatchingModel(model)
    kwargs = dict(agent_kwargs or {})

    def make_agent(h: Harness) -> Agent:
        return Agent(h, model, **kwargs)

    slot = HarnessSlot(initial, make_agent, harnesses)
    metrics = ServerMetrics()
    runner = Runner(batcher, ConcurrencyLimit(max_concurrency), request_timeout_s, metrics)

    app = FastAPI(title="hatkit", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.slot = slot
    app.state.metrics = metrics
    app.state.runner = runner
    app.state.model = batcher
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(exc)

    def release_for(label: str | None) -> Release:
        try:
            return slot.resolve(label)
        except UnknownHarness:
            raise ApiError(404, f"unknown harness '{label}'; available: "
                           f"{', '.join(sorted(slot.harnesses))}", "unknown_harness") from None

    async def body_of(request: Request) -> bytes:
        try:
            return await read_body(request, max_body_bytes)
        except BodyTooLarge as exc:
            metrics.rejections.labels("body_too_large").inc()
            raise ApiError(413, str(exc), "body_too_large") from None

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> Response:
        req: ChatRequest = _parse(await body_of(request), ChatRequest)
        convo = [(m.role, m.text()) for m in req.messages if m.role in ("user", "assistant")]
        if not convo or convo[-1][0] != "user" or not convo[-1][1].strip():
            raise ApiError(422, "invalid request: the last user/assistant message must be a "
                           "non-empty user message", "invalid_request")
        release = release_for(req.harness)
        result = await runner.run(release, convo[:-1], convo[-1][1], req.max_tokens, {})
        created = int(time.time())
        cid = f"chatcmpl-{result.trace.episode_id}"
        model_name = req.model or batcher.model_id
        reply = result.trace.final_reply
        usage = {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                 "total_tokens": result.prompt_tokens + result.completion_tokens}
        if not req.stream:
            return JSONResponse({
                "id": cid, "object": "chat.completion", "created": created, "model": model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                             "finish_reason": "stop"}],
                "usage": usage, "hatkit": _hatkit_block(result)})

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            body = {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model_name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        async def events() -> AsyncIterator[str]:
            yield chunk({"role": "assistant", "content": ""})
            for piece in _pieces(reply):
                yield chunk({"content": piece})
            yield chunk({}, "stop", usage=usage, hatkit=_hatkit_block(result))
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/v1/live/messages")
    async def live_messages(request: Request) -> dict[str, Any]:
        req: LiveRequest = _parse(await body_of(request), LiveRequest)
        release = release_for(req.harness)
        text = req.message
        ctx = req.context
        if ctx is not None and (ctx.stream_title or ctx.product_ids):
            parts = []
            if ctx.stream_title:
                parts.append(f"stream: {ctx.stream_title}")
            if ctx.product_ids:
                parts.append(f"products on screen: {', '.join(ctx.product_ids)}")
            text = f"[{'; '.join(parts)}]\n{text}"
        meta = {"viewer_id": req.viewer_id} if req.viewer_id else {}
        result = await runner.run(release, [], text, None, meta)
        block = _hatkit_block(result)
        return {"reply": result.trace.final_reply, "trace_id": block["trace_id"],
                "harness_hash": block["harness_hash"], "latency_ms": block["latency_ms"],
                "tool_calls": block["tool_calls"], "events": block["events"]}

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        cur = slot.current
        return {"status": "ok", "harness": cur.harness.name, "harness_label": cur.label,
                "harness_hash": cur.harness.content_hash, "model": batcher.model_id,
                "in_flight": runner.limit.active, "max_concurrency": runner.limit.limit}

    @app.get("/metrics")
    async def metrics_text() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    def loopback_only(request: Request) -> None:
        if not is_loopback(request.client.host if request.client else None):
            raise ApiError(403, "admin routes answer loopback clients only", "forbidden")

    @app.get("/admin/harness")
    async def admin_get(request: Request) -> dict[str, Any]:
        loopback_only(request)
        return slot.describe()

    @app.post("/admin/harness")
    async def admin_swap(request: Request) -> dict[str, Any]:
        loopback_only(request)
        req: SwapRequest = _parse(await body_of(request), SwapRequest)
        try:
            await asyncio.to_thread(slot.swap, req.harness)  # building an agent may take a while
        except UnknownHarness:
            raise ApiError(404, f"unknown harness '{req.harness}'; available: "
                           f"{', '.join(sorted(slot.harnesses))}", "unknown_harness") from None
        metrics.swaps.inc()
        return slot.describe()

    return app


def serve(harness: str | Harness, model_spec: str | ChatModel = "local", *, host: str = "127.0.0.1",
          port: int = 8000, allow_remote: bool = False, max_concurrency: int = 4,
          request_timeout_s: float = 60.0, max_body_bytes: int = 65536,
          harnesses: Mapping[str, str | Harness] | None = None,
          log_level: str = "info") -> None:
    """Run the server (blocking). Refuses a non-loopback host unless allow_remote=True."""
    import uvicorn

    if not allow_remote and not is_loopback(host):
        raise ValueError(f"refusing to listen on non-loopback host '{host}' "
                         "(pass allow_remote=True / --allow-remote to expose the server)")
    if isinstance(model_spec, str):
        from ..models.select import load_model

        model: ChatModel = load_model(model_spec)
    else:
        model = model_spec
    loaded = {k: load_harness(v) if isinstance(v, str) else v for k, v in (harnesses or {}).items()}
    app = create_app(harness, model, max_concurrency=max_concurrency,
                     request_timeout_s=request_timeout_s, max_body_bytes=max_body_bytes,
                     harnesses=loaded)
    uvicorn.run(app, host=host, port=port, log_level=log_level)

