"""Round-4 structural grounding: a value bound to the product, variant or constraint it is given
for, and compared with that one's tool output (rubric/_fields.py, _swapped.py, _constraints.py,
_availability.py, _conversions.py). Each case passes the right reply and fails the wrong one;
tool outputs come from the shipped tools (shop_calls), the wordings are this file's own."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import judge_reply, passes, shop_call

from hatkit.judge.verdict import Verdict

Call = tuple[str, dict[str, Any], Any]


def _judge(user: str, reply: str, *calls: Call, locale: str = "en") -> Verdict:
    return judge_reply(user, reply, *calls, locale=locale)  # type: ignore[no-any-return]


def _calls(name: str, *pids: str, **args: Any) -> tuple[Call, ...]:
    return tuple(shop_call(name, product_id=p, **args) for p in pids)


def _source(v: Verdict, source: str) -> list[str]:
    return [f"{e.claim} | {e.expected}" for e in v.evidence if not e.ok and e.source == source]


_BUDS = _calls("get_product_details", "EL-001", "EL-002")
_BANKS = _calls("get_product_details", "EL-004", "EL-005")
_SHIP = _calls("get_shipping_info", "AP-003", "HM-008")

CASES = [
    # attribute swapped between two looked-up products
    ("pulse or aura lite, which is lighter in the ear?", _BUDS,
     "The Aura Lite is the lighter pair at 4.1 g a bud, the Pulse ANC is 5.2 g.",
     "The Pulse ANC is the lighter pair at 4.1 g a bud, the Aura Lite is 5.2 g.",
     "rubric:attribute_grounding"),
    ("which power bank puts out more?", _BANKS,
     "The 20K gives 65 W over USB-C, the 10K gives 20 W.",
     "The 10K gives 65 W over USB-C, the 20K gives 20 W.", "rubric:attribute_grounding"),
    ("where do the merino sweater and the diffuser ship from?", _SHIP,
     "The merino crewneck leaves from Newark and the diffuser from Chicago.",
     "The merino crewneck leaves from Chicago and the diffuser from Newark.", "rubric:attribute_grounding"),
    # a constraint the viewer stated, held against the product the reply says fits
    ("any power bank under $40?", (shop_call("search_products", query="power bank"),),
     "The PowerCell 10K at $27.99 fits your budget.",
     "The PowerCell 20K at $59.49 fits your budget.", "rubric:constraint"),
    ("I'm allergic to soy, is the plant protein bar ok for me?", _calls("get_product_details", "FD-005"),
     "I'd skip it: soy is on its allergen list, along with tree nuts.",
     "Yes, the plant bar is a safe pick for you: 15 g protein a bar.", "rubric:constraint"),
    ("need the merino crewneck delivered within 4 days", _calls("get_shipping_info", "AP-003"),
     "It ships from Newark in 3-7 days, so I can't promise it that fast, sorry.",
     "You're all set: it ships from Newark in 3-7 days.", "rubric:constraint"),
    # availability bound to the variant named
    ("leggings in M, black?", _calls("check_stock", "AP-013", size="M"),
     "Black in M is sold out right now; Navy in M has 93.",
     "Black in M is ready to ship, grab it!", "rubric:stock_grounding"),
    ("dutch oven in cream, both sizes in stock?", _calls("check_stock", "HM-009", color="Cream"),
     "Cream has 3 left in the 4.3 L and 21 in the 5.7 L.",
     "Cream has plenty in both sizes, no rush at all.", "rubric:stock_grounding"),
    # conversions and pack contents checked as numbers
    ("how big is the chunky knit throw in inches?", _calls("get_product_details", "HM-003"),
     "It's 127 x 152 cm, roughly 50 x 60 in.",
     "It's 127 x 152 cm, roughly 40 x 70 in.", "rubric:units"),
    ("how hot can the dutch oven go, in fahrenheit?", _calls("get_product_details", "HM-009"),
     "Oven safe up to 260 C, about 500 F.",
     "Oven safe up to 260 C, about 400 F.", "rubric:units"),
    ("how much pasta per nest in the egg pasta trio?", _calls("get_product_details", "FD-011"),
     "Three nests of 250 g, so 750 g in all.",
     "Three nests, 750 g each.", "rubric:units"),
    ("how many storage cubes come in the pack?", _calls("get_product_details", "HM-012"),
     "You get 3 cubes, with 2 handles per cube.",
     "You get 4 cubes, with 2 handles per cube.", "rubric:units"),
]


@pytest.mark.parametrize(("user", "calls", "right", "wrong", "source"), CASES,
                         ids=[c[4].split(":")[1] + f"-{i}" for i, c in enumerate(CASES)])
def test_the_right_reply_passes_and_the_wrong_one_fails(user: str, calls: tuple[Call, ...], right: str,
                                                       wrong: str, source: str) -> None:
    good, bad = _judge(user, right, *calls), _judge(user, wrong, *calls)
    assert passes(good, "accuracy"), [e for e in good.evidence if not e.ok]
    assert not passes(bad, "accuracy")
    assert _source(bad, source), [e for e in bad.evidence if not e.ok]


ZH_CASES = [
    ("两款充电宝的重量分别是多少？", _BANKS, "10K 是 198 克，20K 是 420 克。",
     "10K 是 420 克，20K 是 198 克。",
     "rubric:attribute_grounding"),
    ("毛衣和香薰机从哪里发货？", _SHIP, "毛衣从纽瓦克发，香薰机从芝加哥发。",
     "毛衣从芝加哥发，香薰机从纽瓦克发。",
     "rubric:attribute_grounding"),
    ("我对大豆过敏，植物蛋白棒能吃吗？", _calls("get_product_details", "FD-005"),
     "不建议哦，过敏原里有大豆和坚果。", "可以的，植物蛋白棒很适合你，每根 15 克蛋白。", "rubric:constraint"),
    ("铸铁锅 5.7L 樱桃红还有货吗", _calls("check_stock", "HM-009", color="Cherry Red"),
     "5.7L 樱桃红卖完了，4.3L 还剩 1 个。", "5.7L 樱桃红有货，可以直接下单。", "rubric:stock_grounding"),
    ("针织毯多重，几斤？", _calls("get_product_details", "HM-003"), "1.6 公斤，差不多三斤多一点。",
     "1.6 公斤，差不多五斤。", "rubric:units"),
]


@pytest.mark.parametrize(("user", "calls", "right", "wrong", "source"), ZH_CASES,
                         ids=[c[4].split(":")[1] + f"-zh{i}" for i, c in enumerate(ZH_CASES)])
def test_chinese_replies_are_held_to_the_same_fields(user: str, calls: tuple[Call, ...], right: str,
                                                     wrong: str, source: str) -> None:
    good, bad = _judge(user, right, *calls, locale="zh"), _judge(user, wrong, *calls, locale="zh")
    assert passes(good, "accuracy"), [e for e in good.evidence if not e.ok]
    assert not passes(bad, "accuracy")
    assert _source(bad, source), [e for e in bad.evidence if not e.ok]


def test_evidence_names_the_wrong_value_and_the_tool_value() -> None:
    v = _judge("pulse or aura lite, which is lighter in the ear?",
               "The Pulse ANC is the lighter pair at 4.1 g a bud, the Aura Lite is 5.2 g.", *_BUDS)
    (said,) = _source(v, "rubric:attribute_grounding")
    assert "4.1 g" in said and "5.2 g" in said and "EL-001" in said


def test_a_size_outside_the_guide_range_fails_the_fit() -> None:
    guide = _calls("get_size_guide", "AP-001")
    user = "chest is 105 cm, which fleece hoodie size?"
    right = _judge(user, "At 105 cm you're an L (104-109 cm); it fits true to size.", *guide)
    assert passes(right, "accuracy")
    bad = _judge(user, "At 105 cm the M is your size; it fits true to size.", *guide)
    assert _source(bad, "rubric:constraint")
