"""Load and fault tests on loopback, bounded in count and time: overload -> 200/429 only,
hot swap under load drops nothing, malformed requests -> clear 4xx, timeouts -> 504."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml
from serve_helpers import SlowModel, echo, running

from hatkit.harness import Harness, load_harness
from hatkit.serve.app import create_app
from hatkit.serve.limits import is_loopback

CHAT = "/v1/chat/completions"
HELLO = {"messages": [{"role": "user", "content": "hello!"}]}


def test_overload_answers_200_or_429_never_5xx(lc: Harness) -> None:
    app = create_app(lc, SlowModel(echo, delay=0.4), max_concurrency=2)
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as c:
        def one(_: int) -> tuple[httpx.Response, float]:
            t0 = time.monotonic()
            return c.post(CHAT, json=HELLO), time.monotonic() - t0

        with ThreadPoolExecutor(20) as pool:
            futures = [pool.submit(one, i) for i in range(20)]
            time.sleep(0.1)
            t0 = time.monotonic()
            health = c.get("/healthz")  # the event loop stays responsive under load
            health_s = time.monotonic() - t0
            results = [f.result() for f in futures]
        metrics = c.get("/metrics").text
    statuses = [r.status_code for r, _ in results]
    assert set(statuses) <= {200, 429}, statuses
    assert 200 in statuses and 429 in statuses
    assert all(r.headers.get("retry-after") for r, _ in results if r.status_code == 429)
    assert all(r.json()["error"]["type"] == "overloaded" for r, _ in results if r.status_code == 429)
    assert max(s for _, s in results) < 5.0
    assert health.status_code == 200 and health_s < 0.3
    assert 'hatkit_rejections_total{reason="saturated"}' in metrics
    assert app.state.runner.limit.active == 0


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


def test_model_failure_is_a_200_fallback(lc: Harness) -> None:
    def broken(_: object) -> str:
        raise RuntimeError("backend exploded")

    app = create_app(lc, SlowModel(broken))
    with running(app) as url:
        r = httpx.post(f"{url}/v1/live/messages", json={"message": "hi"})
    assert r.status_code == 200
    assert r.json()["reply"] == lc.spec.fallback_reply
    assert any(e["kind"] == "model_error" for e in r.json()["events"])


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


