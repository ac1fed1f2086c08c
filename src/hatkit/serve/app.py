"""The HTTP server of a harness agent (FastAPI on uvicorn).

Routes: POST /v1/chat/completions (OpenAI-compatible; with stream=true the reply is sent
over SSE as it is generated, see sse.py and streaming.py), POST /v1/live/messages, GET
/healthz, GET /metrics (Prometheus), GET/POST /admin/harness (hot swap, loopback only).

Concurrency and errors (runner.py): at most `max_concurrency` turns at once, else 429 +
Retry-After; 504 past `request_timeout_s`; a failed model call answers its `ModelError` kind's
status (429/503/504/413/400; a backend down also shows on /healthz); a bug answers a JSON 500.
All model calls go through one `BatchingModel`, which never calls the model from two threads
at once (LocalModel is not thread-safe) and decodes the requests waiting at that moment in one
batch; memory is therefore bounded by the slot count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..agent import Agent
from ..harness import Harness, load_harness
from ..models.base import ChatModel
from .batching import BatchingModel
from .health import BackendHealth
from .hotswap import HarnessSlot, Release, UnknownHarness
from .limits import BodyTooLarge, ConcurrencyLimit, is_loopback, read_body
from .metrics import ServerMetrics
from .runner import BACKEND_RETRY_AFTER_S, ApiError, Runner, _cap
from .schemas import ChatRequest, LiveRequest, SwapRequest, parse_body
from .sse import hatkit_block, stream_chat, usage_of
from .streaming import STREAM_POLICIES, StreamPolicy

ROUTES = ("/v1/chat/completions", "/v1/live/messages", "/healthz", "/metrics", "/admin/harness")


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


def create_app(harness: Harness | str, model: ChatModel, *, max_concurrency: int = 4,
               request_timeout_s: float = 60.0, max_body_bytes: int = 65536,
               harnesses: Mapping[str, Harness] | None = None,
               agent_kwargs: Mapping[str, Any] | None = None,
               stream_policy: StreamPolicy = "auto", probe_interval_s: float = 5.0,
               max_history_messages: int = 256) -> FastAPI:
    """The server app. `harnesses` names the releases a request or a hot swap may pick;
    `agent_kwargs` go to every Agent (e.g. state_factory, permissions); `stream_policy` says
    how a streamed reply meets the pre_reply hooks (streaming.py); `probe_interval_s` spaces
    the recovery probes /healthz starts while the backend is down; a chat request with more
    than `max_history_messages` messages before its last one is refused (413)."""
    if stream_policy not in STREAM_POLICIES:
        raise ValueError(f"stream_policy must be one of {STREAM_POLICIES}, not {stream_policy!r}")
    initial = load_harness(harness) if isinstance(harness, str) else harness
    batcher = BatchingModel(model, health=BackendHealth(probe_interval_s))
    kwargs = dict(agent_kwargs or {})

    def make_agent(h: Harness) -> Agent:
        return Agent(h, model, **kwargs)

    slot = HarnessSlot(initial, make_agent, harnesses)
    metrics = ServerMetrics()
    runner = Runner(batcher, ConcurrencyLimit(max_concurrency), request_timeout_s, metrics,
                    stream_policy)

    app = FastAPI(title="hatkit", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.slot = slot
    app.state.metrics = metrics
    app.state.runner = runner
    app.state.model = batcher
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

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
        req: ChatRequest = parse_body(await body_of(request), ChatRequest)
        if len(req.messages) - 1 > max_history_messages:
            metrics.rejections.labels("too_many_messages").inc()
            raise ApiError(413, f"too many messages: at most {max_history_messages} may come "
                           "before the last one", "too_many_messages")
        convo = [(m.role, m.text()) for m in req.messages if m.role in ("user", "assistant")]
        if not convo or convo[-1][0] != "user" or not convo[-1][1].strip():
            raise ApiError(422, "invalid request: the last user/assistant message must be a "
                           "non-empty user message", "invalid_request")
        release = release_for(req.harness)
        model_name = req.model or batcher.model_id
        if req.stream:
            return await stream_chat(runner, release, convo[:-1], convo[-1][1], req.max_tokens,
                                     model_name)
        result = await runner.run(release, convo[:-1], convo[-1][1], req.max_tokens, {})
        return JSONResponse({
            "id": f"chatcmpl-{result.trace.episode_id}", "object": "chat.completion",
            "created": int(time.time()), "model": model_name,
            "choices": [{"index": 0, "message": {"role": "assistant",
                                                 "content": result.trace.final_reply},
                         "finish_reason": "stop"}],
            "usage": usage_of(result), "hatkit": hatkit_block(result)})

    @app.post("/v1/live/messages")
    async def live_messages(request: Request) -> dict[str, Any]:
        req: LiveRequest = parse_body(await body_of(request), LiveRequest)
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
        block = hatkit_block(result)
        return {"reply": result.trace.final_reply, "trace_id": block["trace_id"],
                "harness_hash": block["harness_hash"], "latency_ms": block["latency_ms"],
                "tool_calls": block["tool_calls"], "events": block["events"]}

    def probe() -> None:
        """One-token model call on the current harness's first request (backend recovery)."""
        step = slot.current.agent.episode().ask("ping")
        runner._generate(_cap(next(step), 1), None)
        step.close()

    @app.get("/healthz", response_model=None)
    async def healthz() -> JSONResponse:
        cur = slot.current
        backend = batcher.health.snapshot()
        if not backend["ok"]:
            backend["probing"] = batcher.health.maybe_probe(probe) or backend["probing"]
        body = {"status": "ok" if backend["ok"] else "unavailable", "harness": cur.harness.name,
                "harness_label": cur.label, "harness_hash": cur.harness.content_hash,
                "model": batcher.model_id, "backend": backend,
                "in_flight": runner.limit.active, "max_concurrency": runner.limit.limit,
                "stream_policy": runner.stream_policy, "peak_rss_bytes": metrics.peak_rss()}
        if backend["ok"]:
            return JSONResponse(body)
        return JSONResponse(body, status_code=503,
                            headers={"Retry-After": str(BACKEND_RETRY_AFTER_S)})

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
        req: SwapRequest = parse_body(await body_of(request), SwapRequest)
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
          stream_policy: StreamPolicy = "auto", speculative: str | None = None,
          draft_model: str | None = None, log_level: str = "info",
          max_history_messages: int = 256) -> None:
    """Run the server (blocking). Refuses a non-loopback host unless allow_remote=True.
    `speculative` ("prompt_lookup" / "draft") and `draft_model` (a checkpoint folder with the
    same tokenizer) apply to a local model."""
    import uvicorn

    if not allow_remote and not is_loopback(host):
        raise ValueError(f"refusing to listen on non-loopback host '{host}' "
                         "(pass allow_remote=True / --allow-remote to expose the server)")
    model = (_load_model(model_spec, speculative, draft_model) if isinstance(model_spec, str)
             else model_spec)
    from ..models.local import LocalModel

    if isinstance(model, LocalModel) and model.is_compiled:
        print("compiling decode steps before serving (about a minute per batch size)...", flush=True)
        model.precompile()
    loaded = {k: load_harness(v) if isinstance(v, str) else v for k, v in (harnesses or {}).items()}
    app = create_app(harness, model, max_concurrency=max_concurrency,
                     request_timeout_s=request_timeout_s, max_body_bytes=max_body_bytes,
                     harnesses=loaded, stream_policy=stream_policy,
                     max_history_messages=max_history_messages)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _load_model(spec: str, speculative: str | None, draft_model: str | None) -> ChatModel:
    from ..models.local import LocalModel
    from ..models.select import load_model

    model = load_model(spec)
    if speculative is None and draft_model is None:
        return model
    if not isinstance(model, LocalModel):
        raise ValueError("--speculative / --draft-model apply to a local model only (an "
                         "OpenAI-compatible server does its own speculative decoding)")
    heads = None
    if speculative == "mtp":  # the heads `hatkit train draft` saved beside the checkpoint
        from ..models.default_model import ensure_default_model
        from ..models.mtp import MTPHeads
        from ..models.select import split_compiled, split_precision

        name = split_precision(split_compiled(spec)[0])[0]
        folder = ensure_default_model() if name == "local" else Path(name)
        heads = MTPHeads.for_checkpoint(folder, model.model)
    return LocalModel(model.model, model.tok, model.model_id, max_batch=model.max_batch,
                      speculative=speculative, draft_model=draft_model, draft_heads=heads,
                      compiled=model.is_compiled)
