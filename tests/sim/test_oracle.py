"""The oracle's gold trajectories: replayed through the agent runtime on sampled variants and
with injected faults, they state every ground-truth fact and break no hook."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Literal

import pytest

from hatkit.agent import Agent, InlineToolRunner, Trace
from hatkit.agent.loop import drive
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.questions import generate_questions, with_rules
from hatkit.harness import Harness, load_harness
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.augment import make_variant
from hatkit.sim.faults import FaultConfig, FaultInjectingRunner
from hatkit.sim.runner import ask_all
from hatkit.sim.truth import Question, reply_states_facts, violations

HOOK_EVENTS = {"hook_veto", "hook_rewrite", "fallback", "empty_reply"}


def run(harness: Harness, questions: list[Question], model: object, faults: FaultConfig | None = None,
        ) -> list[Trace]:
    runner = FaultInjectingRunner(faults, InlineToolRunner()) if faults else InlineToolRunner()
    agent = Agent(harness, model, tool_runner=runner)  # type: ignore[arg-type]
    episodes = [agent.episode(episode_id=q.id) for q in questions]
    if faults:
        for e, q in zip(episodes, questions, strict=True):
            runner.seed_episode(e.state, q.id)  # type: ignore[attr-defined]
    steps = [ask_all(e, [t.text for t in q.turns]) for e, q in zip(episodes, questions, strict=True)]
    drive(agent.model, steps)
    return [e.trace for e in episodes]


def assistant_texts(trace: Trace) -> list[str]:
    """What the model wrote at each call, in order (to replay through ScriptedModel)."""
    out: dict[int, str] = {}
    for s in trace.spans:
        if s.source == "model":
            out[s.turn] = out.get(s.turn, "") + s.text
    return [out[k] for k in sorted(out)]


HONEST = ("can't check that right now", "查不到")


def check_gold(trace: Trace, q: Question, harness: Harness, allow_honest: bool = False) -> int:
    """Assert the gold properties; returns how many turns ended with the honest reply."""
    kinds = {e.kind for e in trace.events}
    assert not kinds & HOOK_EVENTS, (q.template_id, [(e.kind, e.data) for e in trace.events])
    replies = [s.text.strip() for s in trace.spans if s.segment == "reply"]
    turns = with_rules(q, harness.rules).turns
    assert len(replies) == len(turns)
    honest = 0
    for reply, turn in zip(replies, turns, strict=True):
        if allow_honest and any(h in reply for h in HONEST):
            honest += 1
            continue
        assert reply_states_facts(reply, turn.facts) == [], (q.template_id, reply)
        assert violations(reply, turn) == []
        assert len(reply) <= int(harness.rules["reply_max_chars"])
    return honest


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> list[Harness]:
    root = tmp_path_factory.mktemp("variants")
    return [load_harness("live_commerce")] + [
        make_variant("live_commerce", root / f"v{i}", family="train", hsa=LC.hsa, seed=i) for i in range(3)]


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_oracle_replayed_through_the_runtime_states_every_fact(variants: list[Harness], locale: str) -> None:
    for i, harness in enumerate(variants):
        qs = generate_questions(harness.rules, n=40, seed=i, split="train", locale=locale)
        gold = run(harness, qs, LC.oracle(harness, qs))
        for trace, q in zip(gold, qs, strict=True):
            check_gold(trace, q, harness)
            replay = run(harness, [q], ScriptedModel(assistant_texts(trace)))[0]
            assert replay.final_reply == trace.final_reply
            assert [r.name for r in replay.tool_calls] == [r.name for r in trace.tool_calls]


def test_oracle_recovers_from_injected_faults(variants: list[Harness]) -> None:
    faults = FaultConfig(rates={"timeout": 0.1, "server_error": 0.1, "malformed": 0.05,
                                "truncated": 0.05, "empty": 0.05}, seed=7, first_call_only=True)
    for harness in variants[:2]:
        qs = generate_questions(harness.rules, n=60, seed=3, split="dev")
        traces = run(harness, qs, LC.oracle(harness, qs), faults)
        injected = sum(len(t.events_of("fault_injected")) for t in traces)
        assert injected > 15
        for trace, q in zip(traces, qs, strict=True):
            check_gold(trace, q, harness)


def test_heavy_faults_end_in_facts_or_an_honest_reply() -> None:
    harness = load_harness("live_commerce")
    faults = FaultConfig(rates={"timeout": 0.3, "server_error": 0.3}, seed=3)  # retries fail too
    qs = generate_questions(harness.rules, n=60, seed=4, split="dev")
    traces = run(harness, qs, LC.oracle(harness, qs), faults)
    honest = sum(check_gold(trace, q, harness, allow_honest=True)
                 for trace, q in zip(traces, qs, strict=True))
    assert 0 < honest < len(qs)


def test_unrecoverable_fault_gives_an_honest_reply() -> None:
    harness = load_harness("live_commerce")
    q = next(q for q in generate_questions(harness.rules, n=20, seed=0, split="dev")
             if q.category == "stock_shipping")
    faults = FaultConfig(rates={"permission_denied": 1.0}, seed=0)
    [trace] = run(harness, [q], LC.oracle(harness, [q]), faults)
    assert "can't check that right now" in trace.final_reply
    assert not trace.events_of("fallback")
    assert reply_states_facts(trace.final_reply, q.turns[0].facts)  # facts are honestly missing


def test_oracle_uses_the_variants_tool_names(variants: list[Harness]) -> None:
    harness = variants[1]
    qs = [q for q in generate_questions(harness.rules, n=30, seed=1, split="train") if q.turns[0].plan]
    for trace in run(harness, qs, LC.oracle(harness, qs)):
        assert trace.tool_calls
        assert all(r.name in harness.tools and r.error_type is None for r in trace.tool_calls)
        assert not {r.name for r in trace.tool_calls} & {"search_products", "get_promotions",
                                                         "check_stock", "get_product_details"}


def test_rule_change_changes_the_gold_reply(reference_harness: Path) -> None:
    base = load_harness(reference_harness)
    qs = [q for q in generate_questions(base.rules, n=200, seed=2, split="dev")
          if any(f.name == "shipping_fee" for t in q.turns for f in t.facts)]
    assert qs
    spec = reference_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("free_shipping_threshold: 99", "free_shipping_threshold: 5")
                    .replace("standard_shipping_fee: 6.99", "standard_shipping_fee: 4.5"))
    cheap = load_harness(reference_harness)
    before = run(base, qs, LC.oracle(base, qs))
    after = run(cheap, qs, LC.oracle(cheap, qs))
    assert any(a.final_reply != b.final_reply for a, b in zip(before, after, strict=True))
    for trace, q in zip(after, qs, strict=True):
        check_gold(trace, q, cheap)
        assert "6.99" not in trace.final_reply


def test_oracle_emits_token_ids_for_a_tokenizer(tmp_path: Path) -> None:
    from hatkit.models.chat_format import ChatTemplateFormat
    from tiny import tiny_tokenizer

    harness = load_harness("live_commerce")
    qs = generate_questions(harness.rules, n=10, seed=0, split="dev")
    fmt = ChatTemplateFormat(tiny_tokenizer(), native_tools=False)
    for trace in run(harness, qs, LC.oracle(harness, qs, token_format=fmt)):
        view = trace.training_view()
        assert sum(view.loss_mask) > 0
        assert fmt.decode([t for t, m in zip(view.input_ids, view.loss_mask, strict=True) if m]).endswith(
            "<|im_end|>")


def test_each_reasoning_line_names_the_result_it_follows() -> None:
    """A model that sees the same reasoning line before every call learns to repeat its first
    call; after a tool result the oracle's line names that tool, so no line repeats the one
    before it and each is tied to what the context holds."""
    lc = load_harness("live_commerce")
    qs = [q for q in generate_questions(lc.rules, n=40, seed=3, split="train")
          if len(q.turns) == 1 and len(q.turns[0].plan) >= 2][:5]
    assert qs
    for trace in run(lc, qs, LC.oracle(lc, qs)):
        thinks = [s.text for s in trace.spans if s.segment in ("think_tool", "think_reply")]
        names = [s.text.split('"name": "')[1].split('"')[0] for s in trace.spans
                 if s.segment == "tool_call"]
        assert all(a != b for a, b in itertools.pairwise(thinks)), thinks
        for i, think in enumerate(thinks[1:-1], 1):
            assert think.startswith(f"<think>{names[i - 1]} answered;"), think
            assert think.endswith(f"{names[i]} next.</think>\n") or f"{names[i]} next " in think, think
        assert thinks[-1].startswith(f"<think>{names[-1]} answered;"), thinks[-1]


def _thinks(trace: Trace) -> list[str]:
    return [s.text for s in trace.spans if s.segment in ("think_tool", "think_reply")]


def test_the_line_before_a_later_call_restates_what_was_asked() -> None:
    """A small model picked the same tool after every search; the line that picks the next tool
    names what the viewer asked right before it (the shell -> get_product_details)."""
    lc = load_harness("live_commerce")
    qs = [q for q in generate_questions(lc.rules, n=60, seed=3, split="train", categories=["specs"])
          if q.turns[0].plan[0].tool == "search_products"][:3]
    assert qs
    for trace, q in zip(run(lc, qs, LC.oracle(lc, qs)), qs, strict=True):
        spec = next(f.name.split(":")[1] for f in q.turns[0].facts if f.name.startswith("spec:"))
        line = next(t for t in _thinks(trace) if t.startswith("<think>search_products answered;"))
        assert f"for the {spec}" in line and line.index(spec) < line.index("get_product_details"), line


def test_reasoning_names_deals_not_the_coupon_codes_only_a_tool_can_tell() -> None:
    """A promotions question's facts are coupon and promotion codes; reasoning before the call
    said "the price, saving and SNACK5", which a model cannot know before it calls the tool."""
    lc = load_harness("live_commerce")
    qs = [q for q in generate_questions(lc.rules, n=80, seed=5, split="train", categories=["price_promo"])
          if any(f.name.startswith(("coupon:", "promotion:")) for f in q.turns[0].facts)][:3]
    assert qs
    for trace, q in zip(run(lc, qs, LC.oracle(lc, qs)), qs, strict=True):
        first = _thinks(trace)[0]
        codes = [f.name.split(":")[1] for f in q.turns[0].facts if ":" in f.name]
        assert "deals" in first and not any(c in first for c in codes), first


def test_a_health_claim_trap_reasons_about_the_claim_not_the_name() -> None:
    """The trap's refusal was the reply models gave after any product lookup when its reasoning
    read "I reply now with the name"; the domain's category lines make it reason about the claim,
    and other categories keep the common lines."""
    lc = load_harness("live_commerce")
    qs = generate_questions(lc.rules, n=40, seed=3, split="train", categories=["compliance_trap", "specs"])
    traps = [q for q in qs if q.category == "compliance_trap" and q.turns[0].plan][:2]
    specs = [q for q in qs if q.category == "specs"][:2]
    assert traps and specs
    oracle = LC.oracle(lc, traps + specs)
    for trace in run(lc, traps, oracle):
        thinks = _thinks(trace)
        assert "health claim" in thinks[0] and "health claim" in thinks[-1], thinks
        assert not any("the name" in t for t in thinks), thinks
    for trace in run(lc, specs, oracle):
        assert not any("health claim" in t for t in _thinks(trace))
        assert "I reply now with the" in _thinks(trace)[-1]


def test_long_thinking_varies_in_length_and_changes_nothing_else() -> None:
    """`think_style="long"` appends 0-3 sentences (rule values filled in) to each reasoning
    line: the calls and the replies stay the gold ones, the lengths vary, and a rerun is
    identical."""
    h = load_harness("live_commerce")
    qs = LC.questions(h.rules, n=12, seed=4, split="train")

    def run(style: Literal["short", "long"]) -> list[Trace]:
        agent = Agent(h, LC.oracle(h, qs, think_style=style), tool_runner=InlineToolRunner())
        return agent.run_many([q.text for q in qs])

    short, long, again = run("short"), run("long"), run("long")
    assert [t.final_reply for t in long] == [t.final_reply for t in short]
    assert [[r.name for r in t.tool_calls] for t in long] == [[r.name for r in t.tool_calls] for t in short]
    think = [[s.text for s in t.spans if s.segment in ("think_tool", "think_reply")] for t in long]
    plain = [[s.text for s in t.spans if s.segment in ("think_tool", "think_reply")] for t in short]
    assert think == [[s.text for s in t.spans if s.segment in ("think_tool", "think_reply")] for t in again]
    extra = [len(a) - len(b) for t, u in zip(think, plain, strict=True) for a, b in zip(t, u, strict=True)]
    assert min(extra) >= 0 and max(extra) > 150 and len(set(extra)) > 3
    assert any(f"${h.rules['free_shipping_threshold']}" in x or f"{h.rules['reply_max_chars']}" in x
               for t in think for x in t)
    with pytest.raises(ValueError, match="think_style"):
        LC.oracle(h, qs, think_style="medium")  # type: ignore[arg-type]


def test_data_build_writes_long_reasoning_when_asked(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hatkit.cli import app
    from tiny import tiny_tokenizer

    tok = tmp_path / "tok"
    tiny_tokenizer().save_pretrained(tok)
    think: dict[str, float] = {}
    for style in ("short", "long"):
        out = tmp_path / style
        r = CliRunner().invoke(app, ["data", "build", "--out", str(out), "--train", "6", "--dev", "1",
                                     "--variants", "1", "--format", "jsonl", "--tokenizer", str(tok),
                                     "--think", style, "--fault-rate", "0"])
        assert r.exit_code == 0, r.output
        rows = [json.loads(x) for x in (out / "fixed" / "train.jsonl").read_text().splitlines()]
        think[style] = sum(m["content"].count(" ") for row in rows for m in json.loads(row["messages"])
                           if m["role"] == "assistant")
    assert think["long"] > think["short"] * 1.3
    bad = CliRunner().invoke(app, ["data", "build", "--out", str(tmp_path / "x"), "--think", "medium"])
    assert bad.exit_code == 1 and "--think must be short or long" in bad.output
