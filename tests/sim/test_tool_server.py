"""The sandbox tool server under a real uvicorn on loopback, and HttpToolRunner against it."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from hatkit.agent import Agent, Trace
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import Harness, ToolContext, load_harness
from hatkit.models.base import ModelRequest
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.faults import FAULT_KINDS, FaultConfig, FaultInjectingRunner
from hatkit.sim.tool_server import (
    HttpToolRunner,
    RemoteSession,
    SessionStore,
    create_app,
    is_loopback,
    running_app,
    serve,
)

call = ScriptedModel.call
DEFAULT_PERMS = ("catalog.read", "support.escalate")
COUPON_PERMS = (*DEFAULT_PERMS, "coupon.apply")
REPLY = "Here is what I found for you!"


@dataclass
class Server:
    url: str
    app: FastAPI


@contextmanager
def running(app: FastAPI) -> Iterator[Server]:
    """uvicorn on 127.0.0.1, an OS-chosen port, in a background thread."""
    with running_app(app) as url:
        yield Server(url, app)


@pytest.fixture(scope="module")
def lc() -> Harness:
    return load_harness("live_commerce")


@pytest.fixture(scope="module")
def srv(lc: Harness) -> Iterator[Server]:
    with running(create_app(lc, permissions=COUPON_PERMS)) as s:
        yield s


MIXED = FaultConfig(rates=dict.fromkeys(FAULT_KINDS, 0.08), seed=11)


@pytest.fixture(scope="module")
def faulty(lc: Harness) -> Iterator[Server]:
    with running(create_app(lc, faults=MIXED)) as s:
        yield s


@pytest.fixture
def http(srv: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=10) as client:
        yield client


def real(lc: Harness, tool: str, **args: Any) -> Any:
    return lc.tools[tool].call(args, ToolContext(ShopState(), lc.rules, frozenset(COUPON_PERMS)))


def session(client: httpx.Client) -> str:
    r = client.post("/sessions")
    assert r.status_code == 201, r.text
    return str(r.json()["session_id"])


def tool(client: httpx.Client, sid: str, name: str, **args: Any) -> dict[str, Any]:
    r = client.post(f"/sessions/{sid}/tools/{name}", json={"arguments": args})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


# ---------------------------------------------------------------- the HTTP surface

def test_health_and_tool_list(http: httpx.Client, lc: Harness) -> None:
    assert http.get("/healthz").json()["status"] == "ok"
    listed = http.get("/tools").json()
    assert listed["harness_hash"] == lc.content_hash
    assert [t["function"]["name"] for t in listed["tools"]] == [t.name for t in lc.runtime_tools()]
    assert len(listed["tools"]) == 10 and listed["tools"][0] == lc.runtime_tools()[0].openai_schema()


def test_a_session_runs_tools_like_in_process(http: httpx.Client, lc: Harness) -> None:
    sid = session(http)
    assert tool(http, sid, "get_promotions", product_id="EL-001") == {
        "output": real(lc, "get_promotions", product_id="EL-001")}
    assert tool(http, sid, "search_products", query="earbuds")["output"] == real(
        lc, "search_products", query="earbuds")


def test_tool_failures_come_back_as_typed_data(http: httpx.Client, faulty: Server) -> None:
    sid = session(http)
    cases = {"tool_exception": ("get_product_details", {"product_id": "XX-999"}),
             "bad_arguments": ("get_product_details", {"id": "EL-001"})}
    for kind, (name, args) in cases.items():
        error = tool(http, sid, name, **args)["error"]
        assert error["type"] == kind and error["injected"] is False, error
    assert "XX-999" in tool(http, sid, "get_product_details", product_id="XX-999")["error"]["message"]
    with httpx.Client(base_url=faulty.url) as other:  # default permissions: no coupon.apply
        denied = tool(other, session(other), "apply_coupon", code="GADGET10", product_id="EL-001")
    assert denied["error"]["type"] == "permission_denied" and "coupon.apply" in denied["error"]["message"]


def test_unknown_session_tool_and_bad_bodies(http: httpx.Client) -> None:
    sid = session(http)
    r = http.post("/sessions/nope/tools/get_promotions", json={"arguments": {}})
    assert r.status_code == 404 and r.json()["detail"]["type"] == "unknown_session"
    r = http.post(f"/sessions/{sid}/tools/launch_rocket", json={"arguments": {}})
    assert r.status_code == 404 and r.json()["detail"]["type"] == "unknown_tool"
    bodies: list[Any] = [{"args": {}}, {"arguments": [1]}, {"arguments": {}, "x": 1}, [], "text"]
    for body in bodies:
        assert http.post(f"/sessions/{sid}/tools/get_promotions", json=body).status_code == 422, body
    assert http.post(f"/sessions/{sid}/tools/get_promotions", content=b"{not json").status_code == 422
    assert http.delete(f"/sessions/{sid}").status_code == 204
    assert http.post(f"/sessions/{sid}/tools/get_promotions",
                     json={"arguments": {"product_id": "EL-001"}}).status_code == 404
    assert http.delete(f"/sessions/{sid}").status_code == 404


def test_sessions_are_isolated(http: httpx.Client, srv: Server) -> None:
    a, b = session(http), session(http)
    applied = tool(http, a, "apply_coupon", code="GADGET10", product_id="EL-001")["output"]
    assert applied["total"] == 89.1
    sessions: SessionStore = srv.app.state.sessions
    state_a, state_b = sessions.get(a).state, sessions.get(b).state  # type: ignore[union-attr]
    assert state_a.applied_coupons == [applied] and state_b.applied_coupons == []
    tickets = [tool(http, s, "escalate_to_human", reason="refund")["output"]["ticket"] for s in (a, a, b)]
    assert tickets == ["T0001", "T0002", "T0001"]


def test_session_store_is_bounded_lru() -> None:
    store = SessionStore(max_sessions=2)
    ids = [store.add(lambda n: n)[0] for _ in range(2)]  # type: ignore[arg-type, return-value]
    store.get(ids[0])  # touch the oldest: the other one goes next
    third, _ = store.add(lambda n: n)  # type: ignore[arg-type, return-value]
    assert len(store) == 2 and store.get(ids[1]) is None
    assert store.get(ids[0]) is not None and store.get(third) is not None


def test_non_loopback_hosts_are_refused(lc: Harness) -> None:
    for host in ("0.0.0.0", "192.168.1.20", "example.com", "::"):
        with pytest.raises(ValueError, match="non-loopback"):
            serve(lc, host=host)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")


# ---------------------------------------------------------------- an Agent over HTTP

def scripted(calls: Sequence[tuple[str, dict[str, Any]]]) -> ScriptedModel:
    def step(req: ModelRequest) -> str:
        user = next(m.content for m in req.messages if m.role == "user")
        pid = re.search(r"[A-Z]{2}-\d{3}", user).group(0)  # type: ignore[union-attr]
        done = sum(1 for m in req.messages if m.role == "tool")
        if done < len(calls):
            name, args = calls[done]
            return str(call(name, **{k: (pid if v == "PID" else v) for k, v in args.items()}))
        return REPLY

    return ScriptedModel([step] * 500)


PLAN = [("get_promotions", {"product_id": "PID"}), ("check_stock", {"product_id": "PID"}),
        ("apply_coupon", {"code": "GADGET10", "product_id": "PID"}),
        ("get_size_guide", {"product_id": "PID"}), ("escalate_to_human", {"reason": "wants a refund"})]
MESSAGES = [f"Deals on EL-{i:03d}?" for i in range(1, 7)]


def records(traces: Sequence[Trace]) -> list[list[tuple[Any, ...]]]:
    return [[(r.name, r.arguments, r.output, r.error_type, r.error, r.turn) for r in t.tool_calls]
            for t in traces]


def summary(traces: Sequence[Trace]) -> list[tuple[Any, ...]]:
    return [(t.final_reply, [(e.kind, e.data) for e in t.events]) for t in traces]


def test_agent_over_http_writes_the_same_trace_as_in_process(lc: Harness, srv: Server) -> None:
    local = Agent(lc, scripted(PLAN), permissions=COUPON_PERMS, state_factory=ShopState)
    with HttpToolRunner(srv.url) as runner:
        remote = Agent(lc, scripted(PLAN), permissions=COUPON_PERMS, tool_runner=runner,
                       state_factory=runner.state_factory())
        over_http = remote.run_many(MESSAGES)
    in_process = local.run_many(MESSAGES)
    assert records(over_http) == records(in_process)
    assert summary(over_http) == summary(in_process)
    assert over_http[0].tool_calls[3].error_type == "tool_exception"  # no size guide for EL-001


def test_faults_over_http_match_in_process_faults(lc: Harness, faulty: Server) -> None:
    plan = PLAN[:2] + PLAN[3:]
    injector = FaultInjectingRunner(MIXED)
    local = Agent(lc, scripted(plan), tool_runner=injector, state_factory=injector.state_factory(lc))
    with HttpToolRunner(faulty.url) as runner:
        remote = Agent(lc, scripted(plan), tool_runner=runner, state_factory=runner.state_factory())
        over_http = remote.run_many(MESSAGES)
    in_process = local.run_many(MESSAGES)
    assert records(over_http) == records(in_process)
    assert summary(over_http) == summary(in_process)
    assert any(t.events_of("fault_injected") for t in over_http)


def test_http_runner_failures_are_data(lc: Harness) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with HttpToolRunner(dead, timeout_s=2) as runner:
        trace = Agent(lc, scripted(PLAN[:1]), tool_runner=runner,
                      state_factory=runner.state_factory()).run("Deals on EL-001?")
        assert trace.tool_calls[0].error_type == "tool_exception"
        assert "unreachable" in str(trace.tool_calls[0].error) and trace.final_reply == REPLY
        wrong_state = Agent(lc, scripted(PLAN[:1]), tool_runner=runner,
                            state_factory=ShopState).run("Deals on EL-001?")
        assert "RemoteSession" in str(wrong_state.tool_calls[0].error)
    assert RemoteSession("k").session_id is None  # making a state never touches the network
