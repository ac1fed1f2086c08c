"""Declarative hook rules of the reference harness, fed frozen events."""

from __future__ import annotations

import dataclasses

import pytest

from hatkit.harness import PreReplyEvent, PreToolEvent, load_harness
from hatkit.harness.hooks import ClaimRequiresTool, ForbiddenPhrases, MaxReplyLength, ToolPermission


@pytest.fixture(scope="module")
def rules() -> dict[str, object]:
    return dict(load_harness("live_commerce").hook_rules)


def test_superlatives_are_rewritten(rules: dict[str, ForbiddenPhrases]) -> None:
    d = rules["no_absolute_superlatives"].evaluate(
        PreReplyEvent("These earbuds are the best in the world at $49!"))
    assert d is not None and d.action == "rewrite"
    assert d.text == "These earbuds are a popular choice at $49!"
    assert d.details["matches"] == ["the best in the world"]


def test_medical_claims_are_vetoed_in_english_and_chinese(rules: dict[str, ForbiddenPhrases]) -> None:
    hook = rules["no_medical_claims"]
    assert hook.evaluate(PreReplyEvent("This serum cures acne in a week.")).action == "veto"  # type: ignore[union-attr]
    assert hook.evaluate(PreReplyEvent("这款面霜可以根治痘痘")).action == "veto"  # type: ignore[union-attr]
    assert hook.evaluate(PreReplyEvent("It is a light moisturiser with niacinamide.")) is None


def test_coupon_needs_granted_permission(rules: dict[str, ToolPermission]) -> None:
    hook = rules["coupon_permission"]
    args = {"code": "LIVE15", "product_id": "EL-001"}
    denied = hook.evaluate(PreToolEvent("apply_coupon", args, frozenset({"catalog.read"})))
    assert denied is not None and denied.action == "veto"
    assert "needs 'coupon.apply'" in denied.reason
    assert hook.evaluate(PreToolEvent("apply_coupon", args, frozenset({"coupon.apply"}))) is None
    assert hook.evaluate(PreToolEvent("check_stock", {}, frozenset())) is None


def test_price_claim_needs_a_price_tool(rules: dict[str, ClaimRequiresTool]) -> None:
    hook = rules["price_claim_needs_tool"]
    text = "They are $49.90 today, 20% off!"
    vetoed = hook.evaluate(PreReplyEvent(text, tools_called=("check_stock",)))
    assert vetoed is not None and vetoed.details["match"] == "$4"
    assert hook.evaluate(PreReplyEvent(text, tools_called=("get_promotions",))) is None
    assert hook.evaluate(PreReplyEvent("Hello and welcome!")) is None


def test_stock_claim_needs_check_stock(rules: dict[str, ClaimRequiresTool]) -> None:
    hook = rules["stock_claim_needs_tool"]
    assert hook.evaluate(PreReplyEvent("Only 3 left in size M!")).action == "veto"  # type: ignore[union-attr]
    assert hook.evaluate(PreReplyEvent("Only 3 left in size M!", ("check_stock",))) is None


def test_reply_length_truncates_at_a_sentence(rules: dict[str, MaxReplyLength]) -> None:
    hook = rules["live_reply_length"]
    assert hook.max_chars == 320  # resolved from rules.reply_max_chars
    long = "This jacket is warm. " * 30
    d = hook.evaluate(PreReplyEvent(long))
    assert d is not None and d.action == "rewrite" and d.text is not None
    assert len(d.text) <= 320 and d.text.endswith(".")
    assert hook.evaluate(PreReplyEvent("Short and sweet.")) is None


def test_events_are_frozen() -> None:
    ev = PreReplyEvent("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.text = "changed"  # type: ignore[misc]


def test_a_negated_claim_is_not_a_claim(rules: dict[str, ForbiddenPhrases]) -> None:
    hook = rules["no_medical_claims"]
    assert hook.evaluate(PreReplyEvent("It won't cure acne, but it's a gentle moisturiser.")) is None
    assert hook.evaluate(PreReplyEvent("这款不能治疗痘痘，建议咨询医生。")) is None
    # the negation must sit in the claim's own clause
    for text in ("Don't worry, it cures acne.", "It's not just gentle, but it cures acne.",
                 "It's not sticky - and it cures acne."):
        assert hook.evaluate(PreReplyEvent(text)) is not None, text


def test_rewrite_replaces_only_the_counted_matches() -> None:
    hook = ForbiddenPhrases(name="x", kind="forbidden_phrases", action="rewrite", replacement="great",
                            patterns=[r"\bthe best\b", r"\bbest\b"], unless_preceded_by=r"\bnot\b")
    d = hook.evaluate(PreReplyEvent("Not the best for kids. For adults, the best!"))
    assert d is not None and d.text == "Not the best for kids. For adults, great!"
    assert d.details["matches"] == ["the best", "best"]


def test_an_invalid_exemption_regex_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid regex"):
        ForbiddenPhrases(name="x", kind="forbidden_phrases", patterns=["a"], unless_preceded_by="(")
