"""Affected items, stale rules and stale tools on a held-out variant (hatkit.evals.staleness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatkit.agent.trace import ToolRecord, Trace
from hatkit.domain import get_domain
from hatkit.evals.cases import sim_cases
from hatkit.evals.staleness import affected, staleness_metrics
from hatkit.harness import Harness
from hatkit.sim.augment import make_variant

LC = get_domain("live_commerce")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Harness, Harness]:
    base = LC.harness()
    return base, make_variant(
        base.root, tmp_path_factory.mktemp("v") / "v", family="heldout", seed=1, hsa=LC.hsa
    )


def _trace(h: Harness, calls: list[str]) -> Trace:
    t = Trace(h.name, h.content_hash, "m")
    t.tool_calls = [ToolRecord(name, {}, {"ok": 1}) for name in calls]
    return t


def _shipping_case(base: Harness, variant: Harness) -> tuple[object, object]:
    for c in sim_cases(LC, base.rules, 60, 3, split="dev"):
        moved = c.under_rules(LC, variant.rules)
        facts = {f.name: f.value for f in c.turns[0].facts}
        if (
            len(c.turns) == 1
            and "shipping_fee" in facts
            and facts != {f.name: f.value for f in moved.turns[0].facts}
        ):
            return c, moved
    raise AssertionError("no shipping case moved by the variant")


def test_a_reply_stating_the_default_value_on_a_variant_is_counted_stale(
    pair: tuple[Harness, Harness],
) -> None:
    base, variant = pair
    c, moved = _shipping_case(base, variant)
    old = next(f for f in c.turns[0].facts if f.name == "shipping_fee")
    new = next(f for f in moved.turns[0].facts if f.name == "shipping_fee")
    assert old.value != new.value
    stale = affected(c, moved, base, variant, _trace(variant, []), [f"Shipping is {old.value}."])
    fresh = affected(c, moved, base, variant, _trace(variant, []), [f"Shipping is {new.value}."])
    assert stale.rules and stale.stale_rule and not fresh.stale_rule


def test_a_renamed_tool_called_by_its_old_name_is_stale(pair: tuple[Harness, Harness]) -> None:
    base, variant = pair
    c, moved = _shipping_case(base, variant)
    planned = moved.turns[0].plan[0].tool
    old_name = next(n for n, t in base.tools.items() if t.canonical == planned)
    new_name = next(n for n, t in variant.tools.items() if t.canonical == planned)
    assert old_name != new_name and old_name not in variant.tools
    item = affected(c, moved, base, variant, _trace(variant, [old_name]), [moved.turns[0].reply])
    assert item.tools and item.stale_tool and not item.stale_rule
    ok = affected(c, moved, base, variant, _trace(variant, [new_name]), [moved.turns[0].reply])
    assert not ok.stale_tool


def test_an_unaffected_item_counts_in_no_rate() -> None:
    base = LC.harness()
    c = sim_cases(LC, base.rules, 1, 0, categories=["chit_chat"])[0]
    item = affected(c, c, base, base, _trace(base, []), ["hi"])
    assert not item.any
    m = staleness_metrics([item], [True])
    assert m["affected_n"] == 0 and m["rule_affected_n"] == 0 and m["tool_affected_n"] == 0


def test_metrics_count_exactly() -> None:
    from hatkit.evals.staleness import Affected

    items = [
        Affected(True, False, True),
        Affected(True, True, False, True),
        Affected(False, True),
        Affected(False, False),
    ]
    m = staleness_metrics(items, [False, False, True, True])
    assert m["affected_n"] == 3 and m["success_affected"] == pytest.approx(1 / 3)
    assert m["stale_rule_rate"] == 0.5 and m["rule_affected_n"] == 2
    assert m["stale_tool_rate"] == 0.5 and m["tool_affected_n"] == 2
    assert 0 < m["stale_rule_rate_lo"] < 0.5 < m["stale_rule_rate_hi"] < 1


def test_variant_qa_reports_them(tmp_path: Path) -> None:
    from hatkit.evals import QUICK_SETTINGS, run_suites
    from hatkit.models.scripted import ScriptedModel

    model = ScriptedModel(["Shipping is $6.99 and it ships free over $99."] * 200)
    r = run_suites(["variant_qa"], model, sizes={"variant_qa": 6}, out_dir=tmp_path, settings=QUICK_SETTINGS)[
        "variant_qa"
    ]
    assert {"success_affected", "stale_rule_rate", "stale_tool_rate", "affected_n"} <= set(r.metrics)
    assert all("stale_rule" in e for e in r.details["episodes"])
