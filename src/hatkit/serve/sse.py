"""`/v1/chat/completions` with `stream: true`: the reply over SSE as the model writes it.

The turn starts in a worker thread whose ReplyGate (streaming.py) pushes releasable text into
an asyncio queue. The response is not started until the first piece of text exists or the
turn has ended, so a request that fails before any text (backend down: 503, timeout: 504,
saturated: 429) still gets a real status code; once streaming, a failure ends the stream
with an OpenAI-style `data: {"error": ...}` event. The last chunk carries usage, the hatkit
block (trace id, harness hash, events) and `hatkit.stream` (policy, withdrawn); a withdrawn
stream (a hook fired on text after some was sent) ends with finish_reason `content_filter`
and the final reply in `hatkit.reply`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict
from typing import Any

from starlette.responses import StreamingResponse

from .hotswap import Release
from .runner import ApiError, Runner, TurnResult, jsonable

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
DONE = "data: [DONE]\n\n"


def hatkit_block(r: TurnResult) -> dict[str, Any]:
    t = r.trace
    return {"trace_id": t.episode_id, "harness": r.release.label, "harness_name": t.harness_name,
            "harness_hash": t.harness_hash,
            "tool_calls": [c.name for c in t.tool_calls],
            "events": jsonable([asdict(e) for e in t.events]),
            "latency_ms": round(t.timings.total_s * 1000, 1)}


def usage_of(r: TurnResult) -> dict[str, int]:
    return {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
            "total_tokens": r.prompt_tokens + r.completion_tokens}


async def _next_piece(queue: asyncio.Queue[str], fut: asyncio.Future[TurnResult],
                      deadline: float) -> str | None:
    """The next text piece; None once the turn has ended and every piece was taken;
    TimeoutError past the deadline."""
    if not queue.empty():
        return queue.get_nowait()
    if fut.done():
        return None
    loop = asyncio.get_running_loop()
    getter: asyncio.Future[Any] = asyncio.ensure_future(queue.get())
    waiting: set[asyncio.Future[Any]] = {getter, fut}
    try:
        done, _ = await asyncio.wait(waiting, timeout=max(0.0, deadline - loop.time()),
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not getter.done():
            getter.cancel()
    if getter in done:
        return str(getter.result())
    if fut.done():  # pieces are queued before the turn's completion is delivered
        return queue.get_nowait() if not queue.empty() else None
    raise TimeoutError


async def stream_chat(runner: Runner, release: Release, history: Sequence[tuple[str, str]],
                      text: str, max_tokens: int | None, model_name: str) -> StreamingResponse:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def emit(piece: str) -> None:  # called from the decoding thread
        loop.call_soon_threadsafe(queue.put_nowait, piece)

    deadline = loop.time() + runner.timeout_s
    fut = asyncio.wrap_future(runner.submit(release, history, text, max_tokens, {}, emit))
    try:
        first = await _next_piece(queue, fut, deadline)
    except TimeoutError:
        raise runner.timeout_error() from None
    if first is None:
        runner.outcome(fut)  # an error status before anything was sent
    created = int(time.time())
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {"id": cid, "object": "chat.completion.chunk", "created": created,
                "model": model_name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    async def events() -> AsyncIterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        piece = first
        try:
            while piece is not None:
                yield chunk({"content": piece})
                piece = await _next_piece(queue, fut, deadline)
        except TimeoutError:
            yield f"data: {json.dumps(runner.timeout_error().body())}\n\n"
            yield DONE
            return
        try:
            result = runner.outcome(fut)
        except ApiError as err:
            yield f"data: {json.dumps(err.body())}\n\n"
            yield DONE
            return
        gate = result.gate
        withdrawn = bool(gate and gate.withdrawn)
        block = hatkit_block(result)
        block["stream"] = {"policy": gate.policy if gate else "hold", "withdrawn": withdrawn}
        if withdrawn:
            block["reply"] = result.trace.final_reply
        yield chunk({}, "content_filter" if withdrawn else "stop", usage=usage_of(result),
                    hatkit=block)
        yield DONE

    return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)
