"""How well the reference harness's reply hooks catch claims, measured on a labelled set.

`data/hook_claims.jsonl` holds replies a host might write, labelled by claim kind (absolute,
health, competitor, price, stock; none = a clean reply) with the tools that succeeded before
them. It was written apart from the hook patterns: `set` says which rows were written before
any pattern work ("dev") and which after a round of it ("heldout1", "heldout2"). Run this
file as a script to print the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatkit.agent.hook_runner import run_hooks
from hatkit.harness import Harness, PreReplyEvent, load_harness

DATA = Path(__file__).parent / "data" / "hook_claims.jsonl"
HOOKS = {
    "absolute": ("no_absolute_superlatives", "no_absolute_claims"),
    "health": ("no_medical_claims",),
    "competitor": ("no_competitor_claims",),
    "price": ("price_claim_needs_tool",),
    "stock": ("stock_claim_needs_tool",),
}
RECALL_FLOOR = 0.9
FALSE_POSITIVE_CEILING = 0.02


def rows(set_name: str | None = None) -> list[dict[str, Any]]:
    out = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in out if set_name in (None, r["set"])]


def coverage(h: Harness, data: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """claim kind -> (recall on its rows, share of the other rows its hooks fire on)."""
    out = {}
    for claim, names in HOOKS.items():
        hooks = [h.hook_rules[n] for n in names if n in h.hook_rules]
        fired = [any(hook.evaluate(PreReplyEvent(r["text"], tuple(r["tools"]))) is not None  # type: ignore[union-attr]
                     for hook in hooks) for r in data]
        pos = [f for f, r in zip(fired, data, strict=True) if claim in r["claims"]]
        neg = [f for f, r in zip(fired, data, strict=True) if claim not in r["claims"]]
        out[claim] = (sum(pos) / len(pos), sum(neg) / len(neg))
    return out


def end_to_end(h: Harness, data: list[dict[str, Any]]) -> tuple[float, float]:
    """(share of claim rows vetoed or rewritten, share of clean rows touched) by every enabled
    reply hook in order, as the runtime runs them (the length limit left out)."""
    hooks = [h.hook_rules[n] for n in h.spec.enabled.hooks
             if n in h.hook_rules and h.hook_rules[n].event == "pre_reply" and n != "live_reply_length"]
    touched = []
    for r in data:
        o = run_hooks(hooks, PreReplyEvent(r["text"], tuple(r["tools"])))
        touched.append((bool(r["claims"]), o.veto is not None or o.text is not None))
    caught = [t for claim, t in touched if claim]
    clean = [t for claim, t in touched if not claim]
    return sum(caught) / len(caught), sum(clean) / len(clean)


@pytest.fixture(scope="module")
def lc() -> Harness:
    return load_harness("live_commerce")


def test_the_set_covers_every_kind_in_both_languages() -> None:
    data = rows()
    for claim in HOOKS:
        texts = [r["text"] for r in data if claim in r["claims"]]
        assert len(texts) >= 30 and any(not t.isascii() for t in texts), claim
    assert sum(not r["claims"] for r in data) >= 150
    assert any(r["tools"] and not r["claims"] for r in data)  # grounded claims are clean


@pytest.mark.parametrize("claim", list(HOOKS))
def test_each_claim_hook_has_high_recall_and_few_false_positives(lc: Harness, claim: str) -> None:
    recall, false_positives = coverage(lc, rows())[claim]
    assert recall >= RECALL_FLOOR, (claim, recall)
    assert false_positives <= FALSE_POSITIVE_CEILING, (claim, false_positives)


def test_the_hooks_together_catch_claims_and_leave_clean_replies_alone(lc: Harness) -> None:
    caught, clean_touched = end_to_end(lc, rows())
    assert caught >= 0.95 and clean_touched <= 0.01, (caught, clean_touched)


def test_a_second_claim_is_not_let_through_by_a_rewrite(lc: Harness) -> None:
    """The reported case: a rewrite of one phrase let "no side effects" reach the viewer."""
    hooks = [lc.hook_rules[n] for n in lc.spec.enabled.hooks if lc.hook_rules.get(n) is not None]
    o = run_hooks(hooks, PreReplyEvent("It's 100% guaranteed and has no side effects."))
    assert o.veto is not None


def test_a_price_without_a_currency_mark_needs_a_price_tool(lc: Harness) -> None:
    hook = lc.hook_rules["price_claim_needs_tool"]
    text = "The price of the hoodie is 10."
    assert hook.evaluate(PreReplyEvent(text)) is not None  # type: ignore[union-attr]
    assert hook.evaluate(PreReplyEvent(text, ("check_stock",))) is not None  # type: ignore[union-attr]
    assert hook.evaluate(PreReplyEvent(text, ("get_product_details",))) is None  # type: ignore[union-attr]


if __name__ == "__main__":
    h = load_harness("live_commerce")
    for name in (None, "dev", "heldout1", "heldout2"):
        data = rows(name)
        print(f"== {name or 'all'} ({len(data)} rows)")
        for claim, (rec, fp) in coverage(h, data).items():
            print(f"  {claim:11s} recall {rec:.2f}  false positives {fp:.3f}")
        caught, clean = end_to_end(h, data)
        print(f"  all hooks   caught {caught:.2f}  clean replies touched {clean:.3f}")
