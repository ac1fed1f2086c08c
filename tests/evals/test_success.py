"""Per-episode success: a non-answer, the fallback and a wrong escalation cannot pass; the
interval and the paired test give known numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_helpers import scripted

from hatkit.agent.trace import ToolRecord, Trace
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.questions import generate_questions
from hatkit.evals import EvalSettings
from hatkit.evals.cases import EvalCase, from_question
from hatkit.evals.episodes import Episodes, qa_metrics, run_cases
from hatkit.evals.paired import BETTER, CLOSE, WORSE, compare, compare_values, sign_test_p
from hatkit.evals.success import escalated, expects_escalation, expects_tools, wilson
from hatkit.evals.variant_qa import heldout_variants
from hatkit.harness import Harness
from hatkit.models.base import ChatModel, ModelRequest
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.truth import Question

FAST = EvalSettings(batch_size=4)


def _run(model: ChatModel, lc: Harness, cases: list[EvalCase]) -> Episodes:
    return run_cases(model, lc, cases, domain=LC, settings=FAST, suite="test")


def _questions(lc: Harness, category: str, n: int = 4) -> list[Question]:
    return generate_questions(lc.rules, n=n, seed=0, split="test", categories=[category])


def _after_tool(r: ModelRequest) -> bool:
    return r.messages[-1].role == "tool" or "tool_response" in r.messages[-1].content


def test_a_polite_non_answer_fails_although_its_old_score_passed(lc: Harness) -> None:
    cases = [from_question(q) for q in _questions(lc, "price_promo")]
    eps = _run(scripted(lambda _r: "Great question! Let me know if there's anything else I can help with."),
               lc, cases)
    m = qa_metrics(eps)
    assert m["score"] > 0.5 and m["accuracy"] == 1.0  # the judge's means call it more good than bad
    assert m["success"] == 0.0 and m["answer_rate"] == 0.0
    assert list(m)[:4] == ["success", "success_lo", "success_hi", "answer_rate"]
    asks = ("not answered: asked: price", "not answered: asked: deals")  # a promotions question asks deals
    assert all(not o and any(a in o.failure for a in asks) for o in eps.outcomes())
    oracle = _run(LC.oracle(lc, [c.question for c in cases if c.question]), lc, cases)
    assert qa_metrics(oracle)["success"] == 1.0 and qa_metrics(oracle)["answer_rate"] == 1.0


def test_the_fallback_reply_fails(lc: Harness) -> None:
    cases = [from_question(q) for q in _questions(lc, "chit_chat", 2)]
    said = _run(scripted(lambda _r: lc.spec.fallback_reply), lc, cases)  # the text, no event
    assert [o.failure.split(";")[0] for o in said.outcomes()] == ["fallback reply"] * 2
    looping = _run(scripted(lambda _r: ScriptedModel.call("search_products", query="mug")), lc, cases)
    assert all(t.events_of("eval_budget") for t in looping.traces)
    assert not any(looping.outcomes())


def _escalate_then(reply: str) -> ScriptedModel:
    return scripted(lambda r: reply if _after_tool(r) else ScriptedModel.call(
        "escalate_to_human", reason="viewer asked for a person"))


def test_escalation_counts_only_when_expected_and_called(lc: Harness) -> None:
    chat = _questions(lc, "chit_chat", 1)[0]
    assert expects_escalation(from_question(chat), LC) is False and not expects_tools(from_question(chat), LC)
    gold = chat.turns[0].reply
    plain = _run(scripted(lambda _r: gold), lc, [from_question(chat)])
    assert plain.outcomes()[0].success
    unexpected = _run(_escalate_then(gold), lc, [from_question(chat)])
    assert escalated(unexpected.traces[0], lc, LC)
    assert not unexpected.outcomes()[0] and unexpected.outcomes()[0].failure == "escalated when not expected"

    complaint = next(q for q in _questions(lc, "after_sales", 12)
                     if any(c.tool == "escalate_to_human" for t in q.turns for c in t.plan))
    case = from_question(complaint)
    assert expects_escalation(case, LC) is True and expects_tools(case, LC)
    called = _run(LC.oracle(lc, [complaint]), lc, [case])
    assert escalated(called.traces[0], lc, LC) and called.outcomes()[0].success
    assert called.answers() == [True]
    skipped = _run(scripted(lambda _r: complaint.turns[0].reply), lc, [case])
    assert not skipped.outcomes()[0]
    assert "expected escalation without a escalate_to_human call" in skipped.outcomes()[0].failure


def test_a_renamed_escalation_tool_counts_by_its_canonical_name(lc: Harness, tmp_path: Path) -> None:
    variant = heldout_variants(lc, tmp_path, 1, seed=0, hsa=LC.hsa)[0]
    visible = next(v for v, t in variant.tools.items() if t.canonical == "escalate_to_human")
    trace = Trace(variant.name, variant.content_hash, "m")
    trace.tool_calls = [ToolRecord(visible, {"reason": "x"}, {"ticket": "T0001"})]
    assert escalated(trace, variant, LC)
    trace.tool_calls = [ToolRecord(visible, {"reason": "x"}, None, "timeout", "timed out")]
    assert not escalated(trace, variant, LC)  # a call that failed escalated nothing


def test_wilson_interval_of_known_counts() -> None:
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=5e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=5e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def _suite(successes: list[bool], ids: list[str] | None = None) -> dict[str, Any]:
    ids = ids or [f"c{i}" for i in range(len(successes))]
    return {"suite": "live_qa", "details": {"episodes": [
        {"case_id": c, "success": s} for c, s in zip(ids, successes, strict=True)]}}


def test_mcnemar_exact_and_the_paired_verdict() -> None:
    assert sign_test_p(10, 0) == pytest.approx(0.001953, abs=1e-6)
    assert sign_test_p(2, 1) == 1.0 and sign_test_p(0, 0) == 1.0
    base = [False] * 10 + [True] * 5
    better = compare(_suite(base), _suite([True] * 15))  # b=10 discordant one way, c=0
    assert (better.other_only, better.base_only) == (10, 0) and better.verdict == BETTER
    assert better.p == pytest.approx(0.001953, abs=1e-6) and 0 < better.lo <= better.diff <= better.hi
    assert compare(_suite([True] * 15), _suite(base)).verdict == WORSE
    close = compare_values([0, 0, 1, 1, 1], [1, 1, 0, 1, 1])  # b=2, c=1
    assert (close.other_only, close.base_only, close.verdict) == (2, 1, CLOSE) and close.p == 1.0
    # matched by case id, whatever the order
    shuffled = compare(_suite([True, False], ["a", "b"]), _suite([False, True], ["b", "a"]))
    assert shuffled.diff == 0 and (shuffled.other_only, shuffled.base_only) == (0, 0)
    with pytest.raises(ValueError, match="not the same cases"):
        compare(_suite([True, False], ["a", "b"]), _suite([True, False], ["a", "z"]))
    with pytest.raises(ValueError, match="no per-episode success"):
        compare({"suite": "live_qa", "details": {}}, _suite([True]))
