"""Load and fault tests on loopback, bounded in count and time: overload -> 200/429 only,
hot swap under load drops nothing, malformed requests -> clear 4xx, timeouts -> 504."""

from __future__ import annotations

import mmap
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml
from serve_helpers import SlowModel, echo, running

from hatkit.harness import Harness, load_harness
from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadModelRequest,
    ContextTooLong,
    ModelError,
    RateLimited,
    ScriptExhausted,
)
from hatkit.models.scripted import ScriptedModel
from hatkit.serve.app import create_app
from hatkit.serve.limits import is_loopback
from hatkit.serve.memory import RssSampler

CHAT = "/v1/chat/completions"
HELLO = {"messages": [{"role": "user", "content": "hello!"}]}


class HungryModel(SlowModel):
    """Holds `mb` MiB per request while it decodes, like a KV cache, so memory tracks how
    many requests are decoding at once."""

    def __init__(self, mb: int, delay: float = 0.0, gate: threading.Event | None = None) -> None:
        super().__init__(echo, delay)
        self.mb = mb
        self.gate = gate
        """When set: every call holds its memory until the test opens the gate."""

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        # Fresh pages from the OS (an anonymous map), every page written, so resident: a malloc'd
        # buffer may reuse heap memory an earlier test freed and leave RSS flat (a flaky floor).
        held = [mmap.mmap(-1, self.mb << 20) for _ in requests]
        for buf in held:
            for offset in range(0, len(buf), mmap.PAGESIZE):
                buf[offset] = 107
        try:
            if self.gate is not None:
                assert self.gate.wait(60), "the test never opened the gate"
            return super().generate(requests)
        finally:
            for buf in held:
                buf.close()


def test_overload_answers_200_or_429_never_5xx_and_memory_stays_bounded(lc: Harness) -> None:
    """While every slot is busy, more clients get 429 at once (nothing queues), /healthz still
    answers, and memory follows the slots. No clock: the model holds its slots until the test
    has seen all of that."""
    mb, slots, clients = 16, 2, 20
    gate = threading.Event()
    app = create_app(lc, HungryModel(mb, gate=gate), max_concurrency=slots)
    runner = app.state.runner
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as c, RssSampler() as rss:
        with ThreadPoolExecutor(clients) as pool:
            first = [pool.submit(c.post, CHAT, json=HELLO) for _ in range(slots)]
            deadline = time.monotonic() + 30
            while runner.limit.active < slots and time.monotonic() < deadline:
                time.sleep(0.01)
            assert runner.limit.active == slots
            rejected = [f.result() for f in [pool.submit(c.post, CHAT, json=HELLO)
                                             for _ in range(clients - slots)]]
            health = c.get("/healthz")  # the event loop answers while every slot decodes
            still_busy = runner.limit.active
            gate.set()
            served = [f.result() for f in first]
        metrics = c.get("/metrics").text
    assert still_busy == slots  # everything above was answered while no slot was free
    assert [r.status_code for r in served] == [200] * slots
    assert {r.status_code for r in rejected} == {429}
    assert all(r.headers.get("retry-after") for r in rejected)
    assert all(r.json()["error"]["type"] == "overloaded" for r in rejected)
    assert health.status_code == 200
    assert health.json()["peak_rss_bytes"] > 0
    assert 'hatkit_rejections_total{reason="saturated"}' in metrics
    assert "hatkit_peak_rss_bytes" in metrics and "process_resident_memory_bytes" in metrics
    assert runner.limit.active == 0
    # memory follows the slots, not the clients: at most `slots` requests decode at once
    growth_mb = rss.growth / 2**20
    print(f"peak RSS growth under overload: {growth_mb:.1f} MiB "
          f"({slots} slots x {mb} MiB; {clients} clients would be {clients * mb} MiB)")
    assert mb * 0.9 <= growth_mb < (slots + 2) * mb, growth_mb


@pytest.fixture
def two_versions(reference_harness: Path) -> tuple[Harness, Harness]:
    spec = reference_harness / "harness.yaml"
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["rules"]["free_shipping_threshold"] = 79
    spec.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    old, new = load_harness("live_commerce"), load_harness(reference_harness)
    assert old.content_hash != new.content_hash
    return old, new


def test_hot_swap_under_load_drops_nothing(two_versions: tuple[Harness, Harness]) -> None:
    old, new = two_versions
    app = create_app(old, SlowModel(echo, delay=0.3), max_concurrency=16,
                     harnesses={"v1": old, "v2": new})
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        with ThreadPoolExecutor(12) as pool:
            before = [pool.submit(c.post, CHAT, json=HELLO) for _ in range(6)]
            time.sleep(0.1)  # the first six are in flight
            swap = c.post("/admin/harness", json={"harness": "v2"})
            after = [pool.submit(c.post, "/v1/live/messages", json={"message": "hi"})
                     for _ in range(6)]
            rb, ra = [f.result() for f in before], [f.result() for f in after]
        assert swap.status_code == 200, swap.text
        assert swap.json()["current"]["harness_hash"] == new.content_hash
        assert all(r.status_code == 200 for r in rb + ra)
        assert {r.json()["hatkit"]["harness_hash"] for r in rb} == {old.content_hash}
        assert {r.json()["harness_hash"] for r in ra} == {new.content_hash}
        # rollback: POST the previous name; history records every release
        back = c.post("/admin/harness", json={"harness": "v1"}).json()
        assert [h["label"] for h in back["history"]] == ["v1", "v2", "v1"]
        assert c.get("/healthz").json()["harness_hash"] == old.content_hash
        # a Python-side swap works too, and a request may name a release explicitly
        app.state.slot.swap(new)
        assert c.get("/admin/harness").json()["current"]["label"] == "v2"
        pinned = c.post("/v1/live/messages", json={"message": "hi", "harness": "v1"})
        assert pinned.json()["harness_hash"] == old.content_hash


def test_malformed_requests_get_clear_4xx(lc: Harness) -> None:
    app = create_app(lc, SlowModel(echo), max_body_bytes=4096, harnesses={"main": lc})
    huge = {"messages": [{"role": "user", "content": "x" * 10_000}]}

    def chunked() -> object:
        for _ in range(10):
            yield b'{"messages": "' + b"y" * 1000

    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        cases = {
            "bad json": (c.post(CHAT, content=b'{"messages": [',
                                headers={"content-type": "application/json"}), 400),
            "not an object": (c.post(CHAT, json=["hi"]), 422),
            "wrong type": (c.post(CHAT, json={"messages": "hi"}), 422),
            "stream not bool": (c.post(CHAT, json={**HELLO, "stream": "yes"}), 422),
            "bad role": (c.post(CHAT, json={"messages": [{"role": "wizard", "content": "x"}]}), 422),
            "no user message": (c.post(CHAT, json={"messages": [{"role": "system", "content": "x"}]}), 422),
            "live wrong type": (c.post("/v1/live/messages", json={"message": 5}), 422),
            "live empty": (c.post("/v1/live/messages", json={"message": ""}), 422),
            "huge body": (c.post(CHAT, json=huge), 413),
            "huge chunked body": (c.post(CHAT, content=chunked()), 413),
            "unknown harness": (c.post(CHAT, json={**HELLO, "harness": "nope"}), 404),
            "unknown swap": (c.post("/admin/harness", json={"harness": "nope"}), 404),
        }
        assert c.post(CHAT, json=HELLO).status_code == 200  # still serving
    for name, (r, want) in cases.items():
        assert r.status_code == want, (name, r.status_code, r.text)
        err = r.json()["error"]
        assert err["message"] and err["code"] == want, name
    assert "messages" in cases["wrong type"][0].json()["error"]["message"]
    assert "nope" in cases["unknown harness"][0].json()["error"]["message"]


def test_request_timeout_is_504_and_frees_its_slot(lc: Harness) -> None:
    model = SlowModel(echo, delay=0.8)
    app = create_app(lc, model, request_timeout_s=0.2, max_concurrency=1)
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        r = c.post(CHAT, json=HELLO)
        assert r.status_code == 504 and r.json()["error"]["type"] == "timeout"
        busy = c.post(CHAT, json=HELLO)  # the timed-out turn still holds the only slot
        assert busy.status_code == 429
        deadline = time.monotonic() + 3
        while app.state.runner.limit.active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.state.runner.limit.active == 0


@pytest.mark.parametrize(("error", "status", "retry_after"), [
    (RateLimited("upstream says slow down", retry_after_s=12), 429, "12"),
    (RateLimited("no wait given"), 429, "5"),
    (BackendUnavailable("upstream down"), 503, "5"),
    (ScriptExhausted("script empty"), 503, "5"),
    (BackendTimeout("upstream read timeout"), 504, None),
    (ContextTooLong("prompt of 9000 tokens"), 413, None),
    (BadModelRequest("HTTP 400: bad temperature"), 400, None),
])
def test_each_model_error_kind_has_its_status(lc: Harness, error: ModelError, status: int,
                                              retry_after: str | None) -> None:
    def failing(req: ModelRequest) -> ModelOutput:
        return ModelOutput.failed(error)

    app = create_app(lc, ScriptedModel([failing, failing]))
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        for r in (c.post("/v1/live/messages", json={"message": "hi"}), c.post(CHAT, json=HELLO)):
            assert r.status_code == status, r.text
            assert r.headers.get("retry-after") == retry_after
            err = r.json()["error"]
            assert (err["type"], err["code"]) == (error.kind, status)
            assert str(error) in err["message"]
        assert f'hatkit_rejections_total{{reason="{error.kind}"}} 2.0' in c.get("/metrics").text


def test_a_backend_bug_is_a_500_not_a_fallback_reply(lc: Harness) -> None:
    def buggy(req: ModelRequest) -> str:
        raise TypeError("_generate_batch() got an unexpected keyword argument 'sinks'")

    app = create_app(lc, SlowModel(buggy))
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        r = c.post("/v1/live/messages", json={"message": "hi"})
        assert r.status_code == 500
        assert lc.spec.fallback_reply not in r.text
        assert c.post("/v1/live/messages", json={"message": "again"}).status_code == 500
        assert app.state.runner.limit.active == 0  # the failed turns gave their slots back


def test_backend_down_is_503_with_retry_after_and_healthz_recovers(lc: Harness) -> None:
    down = [True]

    def flaky(req: ModelRequest) -> str:
        if down[0]:
            raise BackendUnavailable("connection refused by upstream")
        return echo(req)

    app = create_app(lc, SlowModel(flaky), probe_interval_s=0.05)
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        assert c.get("/healthz").status_code == 200
        live = c.post("/v1/live/messages", json={"message": "hi"})
        chat = c.post(CHAT, json=HELLO)
        for r in (live, chat):
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == "5"
            err = r.json()["error"]
            assert err["type"] == "backend_unavailable" and err["code"] == 503
            assert "connection refused by upstream" in err["message"]
        health = c.get("/healthz")
        assert health.status_code == 503 and health.headers["retry-after"]
        backend = health.json()["backend"]
        assert health.json()["status"] == "unavailable" and not backend["ok"]
        assert "connection refused" in backend["last_error"] and backend["errors_total"] >= 2
        assert 'hatkit_rejections_total{reason="backend_unavailable"} 2.0' in c.get("/metrics").text
        down[0] = False  # the backend comes back; a probe from /healthz notices it
        deadline = time.monotonic() + 5
        while c.get("/healthz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.get("/healthz").json()["backend"]["ok"]
        assert c.post(CHAT, json=HELLO).status_code == 200


def test_tool_failure_is_still_a_normal_reply(lc: Harness) -> None:
    def broken_tool_then_reply(req: ModelRequest) -> str:
        if not any(m.role == "tool" for m in req.messages):
            return ScriptedModel.call("check_stock", product_id="NOPE-404")
        return "Sorry, I could not check that one."

    app = create_app(lc, SlowModel(broken_tool_then_reply))
    with running(app) as url:
        r = httpx.post(f"{url}/v1/live/messages", json={"message": "in stock?"})
        health = httpx.get(f"{url}/healthz")
    assert r.status_code == 200 and r.json()["reply"] == "Sorry, I could not check that one."
    assert health.status_code == 200


def test_batching_model_serialises_and_batches(lc: Harness) -> None:
    from hatkit.serve.batching import BatchingModel

    inner = SlowModel(echo, delay=0.2)
    active, peak = [0], [0]
    lock = threading.Lock()
    real = inner.generate

    def generate(reqs):  # type: ignore[no-untyped-def]
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            return real(reqs)
        finally:
            with lock:
                active[0] -= 1

    inner.generate = generate  # type: ignore[method-assign]
    app = create_app(lc, inner, max_concurrency=6)
    with running(app) as url, ThreadPoolExecutor(6) as pool:
        rs = list(pool.map(lambda _: httpx.post(f"{url}{CHAT}", json=HELLO, timeout=10), range(6)))
    assert all(r.status_code == 200 for r in rs)
    assert peak[0] == 1
    model: BatchingModel = app.state.model
    assert max(model.batch_sizes) > 1


def test_serve_refuses_remote_host_and_admin_is_loopback_only() -> None:
    from hatkit.serve.app import serve

    with pytest.raises(ValueError, match="non-loopback"):
        serve("live_commerce", "local", host="0.0.0.0")
    assert is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("10.0.0.5") and not is_loopback(None)


