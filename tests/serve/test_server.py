"""The server's routes: chat completions (plain and SSE), live messages, health, metrics."""

from __future__ import annotations

import json

import httpx
from serve_helpers import SlowModel, echo, last_user, running

from hatkit.harness import Harness
from hatkit.models.base import ModelRequest
from hatkit.models.scripted import ScriptedModel
from hatkit.serve.app import create_app


def promo_then_reply(req: ModelRequest) -> str:
    if not any(m.role == "tool" for m in req.messages):
        return ScriptedModel.call("get_promotions", product_id="EL-001")
    return "EL-001 has a deal today, check the pinned link!"


def test_chat_completion_runs_the_agent_with_tools(lc: Harness) -> None:
    app = create_app(lc, SlowModel(promo_then_reply))
    with running(app) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={
            "model": "hatkit", "messages": [
                {"role": "system", "content": "ignored"},
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello!"},
                {"role": "user", "content": [{"type": "text", "text": "deals on EL-001?"}]}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {
        "role": "assistant", "content": "EL-001 has a deal today, check the pinned link!"}
    assert body["choices"][0]["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    hk = body["hatkit"]
    assert hk["harness_hash"] == lc.content_hash and hk["tool_calls"] == ["get_promotions"]
    assert hk["trace_id"] and isinstance(hk["events"], list)
    model = app.state.model.inner
    first = model.requests[0]
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "user"]
    assert first.messages[0].content != "ignored" and last_user(first) == "deals on EL-001?"


def test_chat_completion_streams_sse(lc: Harness) -> None:
    app = create_app(lc, SlowModel(echo))
    with running(app) as url, httpx.stream(
            "POST", f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hello there, nice show"}],
                  "stream": True, "max_tokens": 64}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        data = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"].get("content", "") for c in chunks]
    reply = "You said: hello there, nice show"
    assert "".join(deltas) == reply
    assert sum(1 for d in deltas if d) == 1  # a backend that cannot stream: one piece at the end
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["hatkit"]["harness_hash"] == lc.content_hash
    assert app.state.model.inner.requests[0].max_new_tokens <= 64


def test_live_message_health_and_metrics(lc: Harness) -> None:
    def failing_tool(req: ModelRequest) -> str:
        if not any(m.role == "tool" for m in req.messages):
            return ScriptedModel.call("no_such_tool")
        return "Sorry, let me check that."

    app = create_app(lc, SlowModel(failing_tool))
    with running(app) as url, httpx.Client(base_url=url) as c:
        health = c.get("/healthz").json()
        assert health["status"] == "ok" and health["harness"] == lc.name
        assert health["harness_hash"] == lc.content_hash
        r = c.post("/v1/live/messages", json={
            "message": "how much is shipping?", "viewer_id": "v42",
            "context": {"stream_title": "Gadget night", "product_ids": ["EL-001", "EL-002"]}})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["reply"] == "Sorry, let me check that."
        assert body["harness_hash"] == lc.content_hash and body["trace_id"]
        assert body["tool_calls"] == ["no_such_tool"] and body["latency_ms"] >= 0
        seen = last_user(app.state.model.inner.requests[0])
        assert "Gadget night" in seen and "EL-002" in seen and seen.endswith("how much is shipping?")
        text = c.get("/metrics").text
    assert 'hatkit_requests_total{route="/v1/live/messages",status="200"} 1.0' in text
    assert 'hatkit_requests_total{route="/healthz",status="200"} 1.0' in text
    assert 'hatkit_tool_errors_total{error_type="unknown_tool",tool="no_such_tool"} 1.0' in text
    assert "hatkit_request_latency_seconds_bucket" in text
    assert "hatkit_in_flight 0.0" in text
    assert 'hatkit_tokens_total{kind="completion"}' in text
    assert "hatkit_rejections" in text
