"""Fault injection and sandboxed state: determinism, rates, every fault kind through the agent
loop, first-call-only retries, tool filter and cap, broken outputs, write isolation."""

from __future__ import annotations

import gc
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from hatkit.agent import Agent, Trace
from hatkit.agent.errors import AgentError, InjectedOutput
from hatkit.agent.tool_runner import InlineToolRunner, ThreadToolRunner
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import Harness, ToolContext, load_harness
from hatkit.models.base import ModelRequest
from hatkit.models.chat_format import tool_result_text
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.faults import (
    FAULT_KINDS,
    FaultConfig,
    FaultConfigError,
    FaultInjectingRunner,
    decide,
    malformed_text,
    sandboxed_state_factory,
    truncated_text,
)

call = ScriptedModel.call
DEFAULT_PERMS = ("catalog.read", "support.escalate")
COUPON_PERMS = (*DEFAULT_PERMS, "coupon.apply")
REPLY = "Here is what I found for you!"
PRODUCTS = [f"EL-{i:03d}" for i in range(1, 14)] + [f"AP-{i:03d}" for i in range(1, 8)]
Plan = Callable[[str], Sequence[tuple[str, dict[str, Any]]]]


@pytest.fixture(scope="module")
def lc() -> Harness:
    return load_harness("live_commerce")


def product_in(text: str) -> str:
    found = re.search(r"[A-Z]{2}-\d{3}", text)
    assert found, text
    return found.group(0)


def scripted(plan: Plan, reply: str = REPLY) -> ScriptedModel:
    """A model that makes the plan's calls for the episode's viewer message in order (one per
    turn, whatever each returns), then replies."""

    def step(req: ModelRequest) -> str:
        user = next(m.content for m in req.messages if m.role == "user")
        done = sum(1 for m in req.messages if m.role == "tool")
        calls = plan(user)
        if done < len(calls):
            name, args = calls[done]
            return str(call(name, **args))
        return reply

    return ScriptedModel([step] * 2000)


def three_calls(user: str) -> list[tuple[str, dict[str, Any]]]:
    pid = product_in(user)
    return [("get_promotions", {"product_id": pid}), ("check_stock", {"product_id": pid}),
            ("get_product_details", {"product_id": pid})]


def messages(products: Sequence[str] = PRODUCTS) -> list[str]:
    return [f"Any deals on {p}?" for p in products]


def faults_of(trace: Trace) -> list[tuple[str, str, int]]:
    return [(e.data["fault"], e.data["tool"], e.turn) for e in trace.events_of("fault_injected")]


def real(lc: Harness, tool: str, **args: Any) -> Any:
    return lc.tools[tool].call(args, ToolContext(ShopState(), lc.rules, frozenset(COUPON_PERMS)))


MIXED = FaultConfig(rates=dict.fromkeys(FAULT_KINDS, 0.08), seed=7)


def run_batch(lc: Harness, config: FaultConfig, msgs: Sequence[str], plan: Plan = three_calls,
              **agent_kwargs: Any) -> tuple[list[Trace], FaultInjectingRunner]:
    runner = FaultInjectingRunner(config)
    agent_kwargs.setdefault("state_factory", runner.state_factory(lc))
    agent = Agent(lc, scripted(plan), tool_runner=runner, **agent_kwargs)
    return agent.run_many(msgs), runner


# ---------------------------------------------------------------- determinism and rates

def test_same_seed_same_faults_across_runs_different_seed_differs(lc: Harness) -> None:
    first, runner = run_batch(lc, MIXED, messages())
    second, _ = run_batch(lc, MIXED, messages())
    pattern = [faults_of(t) for t in first]
    assert pattern == [faults_of(t) for t in second]
    assert 5 <= sum(map(len, pattern)) <= 50  # 60 calls at 48%: some faults, not all
    assert sum(runner.injected.values()) == sum(map(len, pattern))
    assert all(t.final_reply == REPLY for t in first)
    other, _ = run_batch(lc, MIXED.model_copy(update={"seed": 8}), messages())
    assert [faults_of(t) for t in other] != pattern


def test_faults_do_not_depend_on_global_call_order(lc: Harness) -> None:
    """Keyed episodes get the same faults whether run together, reversed, or in two batches."""

    def keyed(msgs: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        runner = FaultInjectingRunner(MIXED)
        agent = Agent(lc, scripted(three_calls), tool_runner=runner)
        states = [ShopState() for _ in msgs]
        for m, s in zip(msgs, states, strict=True):
            runner.seed_episode(s, product_in(m))
        return {m: faults_of(t) for m, t in zip(msgs, agent.run_many(msgs, states), strict=True)}

    together = keyed(messages())
    assert keyed(messages()[::-1]) == together
    assert {**keyed(messages()[:7]), **keyed(messages()[7:])} == together


def test_unseeded_states_are_keyed_by_first_sight_deterministically(lc: Harness) -> None:
    runs = [run_batch(lc, MIXED, messages(), state_factory=ShopState)[0] for _ in range(2)]
    assert [faults_of(t) for t in runs[0]] == [faults_of(t) for t in runs[1]]


def test_rates_are_respected() -> None:
    config = FaultConfig(rates={"timeout": 0.1, "malformed": 0.05, "truncated": 0.1,
                                "permission_denied": 0.05, "empty": 0.1, "server_error": 0.1},
                         seed=3)
    n = 2000
    seen = Counter(decide(config, f"ep-{i // 5}", i % 5, "get_promotions") for i in range(n))
    for kind, rate in config.rates.items():
        expected = rate * n
        assert abs(seen[kind] - expected) < 4 * (expected * (1 - rate)) ** 0.5 + 1, (kind, seen)
    assert abs(seen[None] - 0.5 * n) < 100
    assert decide(config.model_copy(update={"tools": ["check_stock"]}), "e", 0, "get_promotions") is None


# ---------------------------------------------------------------- each fault through the loop

ERROR_TYPE = {"timeout": "timeout", "permission_denied": "permission_denied",
              "server_error": "server_error"}


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_is_recorded_and_the_episode_recovers(lc: Harness, kind: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []  # tools that really ran (an injected error fault runs nothing, waits for nothing)
    real_run = ThreadToolRunner.run
    monkeypatch.setattr(ThreadToolRunner, "run", lambda self, spec, *a: (ran.append(spec.name),
                                                                         real_run(self, spec, *a))[1])
    config = FaultConfig(rates={kind: 1.0}, max_per_episode=1)  # type: ignore[dict-item]
    [trace], _ = run_batch(lc, config, ["Any deals on EL-001?"],
                           plan=lambda u: [("get_promotions", {"product_id": "EL-001"})] * 2)
    assert faults_of(trace) == [(kind, "get_promotions", 1)]
    assert trace.final_reply == REPLY and not trace.events_of("fallback")
    faulty, retry = trace.tool_calls
    assert retry.output == real(lc, "get_promotions", product_id="EL-001")
    fed = next(s.text for s in trace.spans if s.segment == "tool_output")
    if kind in ERROR_TYPE:
        assert faulty.error_type == ERROR_TYPE[kind] and faulty.output is None
        assert json.loads(fed)["error"]["type"] == ERROR_TYPE[kind]
    else:
        assert faulty.output["injected_fault"] == kind and fed == faulty.output["text"]
    if kind in ERROR_TYPE:  # the retry alone ran: the simulated 5 s timeout was not waited for
        assert ran == ["get_promotions"]
    if kind == "timeout":
        assert "5 s" in str(faulty.error)


def test_first_call_only_lets_an_identical_retry_succeed(lc: Harness) -> None:
    config = FaultConfig(rates={"server_error": 1.0}, first_call_only=True)
    plan = [("get_promotions", {"product_id": "EL-001"}), ("get_promotions", {"product_id": "EL-001"}),
            ("get_promotions", {"product_id": "EL-002"}), ("get_promotions", {"product_id": "EL-002"})]
    [trace], _ = run_batch(lc, config, ["Any deals on EL-001?"], plan=lambda u: plan)
    assert [r.error_type for r in trace.tool_calls] == ["server_error", None, "server_error", None]
    assert trace.tool_calls[0].error == "503 Service Unavailable (transient)"
    assert trace.final_reply == REPLY


def test_tools_filter_and_cap_per_episode(lc: Harness) -> None:
    only_stock = FaultConfig(rates={"timeout": 1.0}, tools=["check_stock"])
    traces, _ = run_batch(lc, only_stock, messages()[:3])
    assert all(faults_of(t) == [("timeout", "check_stock", 2)] for t in traces)

    capped = FaultConfig(rates={"empty": 1.0}, max_per_episode=2)
    traces, runner = run_batch(lc, capped, messages()[:4])
    assert all([f for f, _, _ in faults_of(t)] == ["empty", "empty"] for t in traces)
    assert all(t.tool_calls[2].output == real(lc, "get_product_details", product_id=product_in(m))
               for t, m in zip(traces, messages()[:4], strict=True))  # the cap is per episode
    assert runner.injected == Counter(empty=8)


# ---------------------------------------------------------------- outputs and errors

@pytest.mark.parametrize(("tool", "args"), [
    ("get_promotions", {"product_id": "EL-001"}), ("check_stock", {"product_id": "AP-001"}),
    ("search_products", {"query": "earbuds"}), ("search_products", {"query": "zzzz"}),
    ("get_shipping_info", {"product_id": "HM-003"}),
])
def test_broken_outputs_do_not_parse_and_truncation_is_a_prefix(lc: Harness, tool: str,
                                                                args: dict[str, Any]) -> None:
    result = real(lc, tool, **args)
    text = tool_result_text(result)
    for broken in (malformed_text(text), truncated_text(text)):
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken)
    assert text.startswith(truncated_text(text)) and len(truncated_text(text)) < 0.5 * len(text) + 1
    ctx = ToolContext(ShopState(), lc.rules, frozenset(DEFAULT_PERMS))
    empty = FaultInjectingRunner(FaultConfig(rates={"empty": 1.0}), InlineToolRunner())
    out = empty.run(lc.tools[tool], args, ctx, 5.0)
    assert isinstance(out, InjectedOutput) and out.text == ("[]" if isinstance(result, list) else "{}")


def test_error_faults_are_marked_injected_and_skip_the_tool(lc: Harness) -> None:
    state = ShopState()
    ctx = ToolContext(state, lc.rules, frozenset(COUPON_PERMS))
    args = {"code": "GADGET10", "product_id": "EL-001"}
    for kind in ("timeout", "permission_denied", "server_error"):
        runner = FaultInjectingRunner(FaultConfig(rates={kind: 1.0}))
        with pytest.raises(AgentError) as info:
            runner.run(lc.tools["apply_coupon"], args, ctx, 2.0)
        assert info.value.injected and info.value.kind == kind
    assert state.applied_coupons == []  # error faults happen before the write
    runner = FaultInjectingRunner(FaultConfig(rates={"malformed": 1.0}))
    assert isinstance(runner.run(lc.tools["apply_coupon"], args, ctx, 2.0), InjectedOutput)
    assert len(state.applied_coupons) == 1  # an output fault: the write happened, its answer broke


def test_a_real_tool_error_wins_over_an_output_fault(lc: Harness) -> None:
    runner = FaultInjectingRunner(FaultConfig(rates={"truncated": 1.0}, max_per_episode=1))
    ctx = ToolContext(ShopState(), lc.rules, frozenset(DEFAULT_PERMS))
    with pytest.raises(AgentError) as info:
        runner.run(lc.tools["get_promotions"], {"product_id": "XX-999"}, ctx, 2.0)
    assert not info.value.injected and info.value.kind == "tool_exception"
    out = runner.run(lc.tools["get_promotions"], {"product_id": "EL-001"}, ctx, 2.0)
    assert isinstance(out, InjectedOutput)  # the cap was not spent on the failed call


# ---------------------------------------------------------------- isolation

def test_writes_never_leak_between_concurrent_episodes(lc: Harness) -> None:
    def plan(user: str) -> list[tuple[str, dict[str, Any]]]:
        pid = product_in(user)
        calls = [("escalate_to_human", {"reason": f"viewer asks about {pid}"})]
        if user.startswith("Apply"):
            calls.insert(0, ("apply_coupon", {"code": "GADGET10", "product_id": pid}))
        return calls

    template = ShopState()
    make = sandboxed_state_factory(template)
    states = [make() for _ in range(10)]
    msgs = [f"{'Apply GADGET10 to' if i % 2 == 0 else 'Tell me about'} EL-{i + 1:03d}" for i in range(10)]
    runner = FaultInjectingRunner(FaultConfig(rates={"malformed": 1.0}, max_per_episode=1))
    agent = Agent(lc, scripted(plan), permissions=COUPON_PERMS, tool_runner=runner)
    traces = agent.run_many(msgs, states)
    for i, (state, trace) in enumerate(zip(states, traces, strict=True)):
        assert [c["product_id"] for c in state.applied_coupons] == ([f"EL-{i + 1:03d}"] if i % 2 == 0 else [])
        assert [e["ticket"] for e in state.escalations] == ["T0001"]
        assert len(faults_of(trace)) == 1  # one fault each: counters are per episode
    assert template.applied_coupons == [] and template.escalations == []


def test_sandboxed_state_factory_sources(lc: Harness) -> None:
    for source in (lc, ShopState, ShopState()):
        make = sandboxed_state_factory(source)
        a, b = make(), make()
        assert isinstance(a, ShopState) and a is not b and a.catalog is b.catalog
        a.applied_coupons.append({"code": "X"})
        assert b.applied_coupons == [] and make().applied_coupons == []
    nested = sandboxed_state_factory({"cart": []})
    nested()["cart"].append(1)
    assert nested() == {"cart": []}
    with pytest.raises(TypeError):
        sandboxed_state_factory(42)


def test_episode_bookkeeping_is_dropped_with_the_state(lc: Harness) -> None:
    runner = FaultInjectingRunner(MIXED)
    states = [ShopState() for _ in range(5)]
    for i, state in enumerate(states):
        runner.seed_episode(state, f"k{i}")
    with pytest.raises(AgentError):  # an unseeded, unhashable-by-value state is tracked too
        runner.run(lc.tools["get_return_policy"], {"product_id": "XX-1"},
                   ToolContext(ShopState(), lc.rules, frozenset(DEFAULT_PERMS)), 2.0)
    gc.collect()
    assert len(runner._episodes) == 5
    del states, state
    gc.collect()
    assert len(runner._episodes) == 0


def test_episode_key_sources() -> None:
    runner = FaultInjectingRunner(MIXED)

    class Keyed:
        episode_key = "q-17"

    a, b, c = Keyed(), ShopState(), ShopState()
    runner.seed_episode(c, "explicit")
    assert [runner.episode_key(s) for s in (a, b, c, b)] == ["q-17", "seen-0", "explicit", "seen-0"]
    assert runner.for_episode("bound").episode_key == "bound"  # type: ignore[attr-defined]


# ---------------------------------------------------------------- config

def test_config_validation_and_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"sum to 1\.2"):
        FaultConfig(rates={"timeout": 0.6, "empty": 0.6})
    with pytest.raises(ValueError):
        FaultConfig(rates={"flood": 0.1})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        FaultConfig(rates={"timeout": 0.1}, retries=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        MIXED.seed = 3

    good = tmp_path / "faults.yaml"
    good.write_text("seed: 4\nrates:\n  timeout: 0.2\n  empty: 0.1\ntools: [check_stock]\n")
    assert FaultConfig.from_file(good) == FaultConfig(rates={"timeout": 0.2, "empty": 0.1}, seed=4,
                                                      tools=["check_stock"])
    as_json = tmp_path / "faults.json"
    as_json.write_text(json.dumps({"rates": {"server_error": 0.5}, "first_call_only": True}))
    assert FaultConfig.from_file(as_json).first_call_only
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nrates:\n  timeout: 0.2\n  meltdown: 0.1\nmax_per_episode: -1\n")
    with pytest.raises(FaultConfigError) as info:
        FaultConfig.from_file(bad)
    assert f"{bad}:4: rates.meltdown" in str(info.value) and f"{bad}:5: max_per_episode" in str(info.value)
    broken = tmp_path / "broken.yaml"
    broken.write_text("rates: {timeout: 0.1\n")
    with pytest.raises(FaultConfigError, match=r"broken\.yaml:\d+: "):
        FaultConfig.from_file(broken)
