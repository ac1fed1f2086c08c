"""Round-2 grounding, facets and targets: each check has a failing case and a clean case, in
English and Chinese, written for these tests (tool outputs come from the shipped tools)."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import shop_call

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.judge.conversations import LabelledConversation, to_trace


def verdict(turns: list[tuple[str, list[tuple[str, dict[str, Any], Any]], str]], locale: str = "en"
            ) -> tuple[bool, bool]:
    """(accuracy passes, effectiveness passes) for viewer turns, their tool calls and replies."""
    msgs: list[dict[str, Any]] = []
    for user, calls, reply in turns:
        msgs.append({"role": "user", "content": user})
        for name, args, out in calls:
            msgs += [{"role": "assistant", "tool_calls": [{"name": name, "arguments": args}]},
                     {"role": "tool", "name": name, "content": out}]
        msgs.append({"role": "assistant", "content": reply})
    conv = LabelledConversation("t-r2", "test", locale, msgs, {"accuracy": 1, "effectiveness": 1})
    h = LC.harness()
    judge = LC.judge()
    v = judge.judge(to_trace(conv, h), h)
    return v.accuracy >= judge.thresholds["accuracy"], v.effectiveness >= judge.thresholds["effectiveness"]


SPEAKER = [shop_call("get_product_details", product_id="EL-010")]
TRACKER = [shop_call("get_product_details", product_id="EL-007")]
CONDITIONER = [shop_call("get_product_details", product_id="BE-010")]
MERINO = [shop_call("get_product_details", product_id="AP-003")]
FRYER = [shop_call("get_product_details", product_id="HM-001")]
DUTCH = [shop_call("get_product_details", product_id="HM-009")]


@pytest.mark.parametrize(("user", "calls", "reply", "locale", "accurate"), [
    # an acronym feature the data never names
    ("Can the Band Go pay for my coffee?", TRACKER, "Sure, it has NFC payments built in.", "en", False),
    ("Band Go手环能防水吗？", TRACKER, "可以，5 ATM防水，游泳戴着没问题。", "zh", True),
    ("Band Go手环能刷地铁吗？", TRACKER, "能，自带NFC，刷地铁很方便。", "zh", False),
    # a property adjective on a stem the data never states
    ("Is the argan leave-in heavy on hair?", CONDITIONER,
     "Not at all, it's paraben-free and light, with heat protection up to 230 C.", "en", False),
    ("Is the argan leave-in heavy on hair?", CONDITIONER,
     "Not at all: it's a light spray that detangles without weighing hair down.", "en", True),
    # a name after a comma the viewer only asked about
    ("Does the Boom Go speaker work with Alexa?", SPEAKER,
     "Yes, Alexa works with it out of the box.", "en", False),
    # a place written in Chinese
    ("美利奴毛衣是哪里产的？", MERINO, "100%超细美利奴羊毛，产自澳大利亚。", "zh", False),
    # care and warranty kinds no tool output speaks of
    ("Can I clean the Crispo air fryer easily?", FRYER, "Yes, the basket is dishwasher-proof and goes "
     "straight in the dishwasher.", "en", False),
    ("Crispo空气炸锅有质保吗？", FRYER, "有的，整机质保，坏了直接换新。", "zh", False),
    ("Crispo空气炸锅功率多大？", FRYER, "功率1700瓦，容量5.5升。", "zh", True),
])
def test_unfounded_features_fail_accuracy(user: str, calls: Any, reply: str, locale: str,
                                          accurate: bool) -> None:
    acc, eff = verdict([(user, calls, reply)], locale)
    assert acc is accurate
    assert eff  # a confident answer, right or wrong, answers the ask


def test_a_question_is_not_a_source() -> None:
    # the viewer asking about a gift does not ground one; a tool's promotion would
    promos = [shop_call("get_promotions", product_id="HM-011")]
    assert verdict([("这个枕头有赠品吗？", promos, "有的，下单再送一个眼罩。")], "zh")[0] is False
    assert verdict([("这个枕头有赠品吗？", promos, "没有赠品，不过可以用HOMEBASE15。")], "zh")[0] is True


@pytest.mark.parametrize(("user", "calls", "reply", "locale", "effective"), [
    ("Wattage and capacity of the Crispo air fryer?", FRYER, "It holds 5.5 L.", "en", False),
    ("Wattage and capacity of the Crispo air fryer?", FRYER,
     "It runs at 1700 W and holds 5.5 L.", "en", True),
    ("Crispo空气炸锅功率和容量多少？", FRYER, "容量5.5升。", "zh", False),
    ("Crispo空气炸锅功率和容量多少？", FRYER, "1700瓦，容量5.5升。", "zh", True),
])
def test_every_asked_facet_is_answered(user: str, calls: Any, reply: str, locale: str,
                                       effective: bool) -> None:
    assert verdict([(user, calls, reply)], locale)[1] is effective


def test_stock_named_as_a_noun_is_a_facet() -> None:
    parka = [shop_call("get_promotions", product_id="AP-007"),
             shop_call("check_stock", product_id="AP-007", size="M", color="Black")]
    stock = parka[1][2]["total_in_stock"]
    user = "Price and stock for the rain parka, M in black?"
    assert verdict([(user, parka, "The parka is $189.")])[1] is False
    assert verdict([(user, parka, f"The parka is $189 and M in Black has {stock} left.")])[1] is True


@pytest.mark.parametrize(("user", "reply", "locale", "effective"), [
    ("How heavy is the 5.7 L Dutch oven?", "The 4.3 L one is 5.0 kg.", "en", False),
    ("How heavy is the 5.7 L Dutch oven?", "The 5.7 L is 6.1 kg.", "en", True),
])
def test_another_variant_answered_is_off_target(user: str, reply: str, locale: str, effective: bool) -> None:
    acc, eff = verdict([(user, DUTCH, reply)], locale)
    assert acc  # it names the other variant: a true fact about it
    assert eff is effective


def test_a_letter_size_and_a_chinese_colour_name_the_variant() -> None:
    l_navy = [shop_call("check_stock", product_id="AP-001", size="L", color="Navy")]
    m_navy = [shop_call("check_stock", product_id="AP-001", size="M", color="Navy")]
    n_l, n_m = l_navy[0][2]["total_in_stock"], m_navy[0][2]["total_in_stock"]
    user = "Is the Everyday Fleece pullover in M Navy in stock?"
    assert verdict([(user, l_navy, f"L in Navy has {n_l} left.")])[1] is False
    assert verdict([(user, m_navy, f"M in Navy has {n_m} left.")])[1] is True
    green = [shop_call("check_stock", product_id="AP-001", size="M", color="Forest Green")]
    navy = [shop_call("check_stock", product_id="AP-001", size="M", color="Navy")]
    zh = "M码藏青色的套头卫衣还有吗？"
    assert verdict([(zh, green, f"M码森林绿还有{green[0][2]['total_in_stock']}件。")], "zh") == (True, False)
    assert verdict([(zh, navy, f"M码藏青还有{navy[0][2]['total_in_stock']}件。")], "zh") == (True, True)


def test_a_follow_up_keeps_the_asked_product() -> None:
    duo = [shop_call("get_promotions", product_id="HM-002")]
    crispo = [shop_call("check_stock", product_id="HM-001", color="Black")]
    duo_stock = [shop_call("check_stock", product_id="HM-002", color="Black")]
    first = ("双篮空气炸锅多少钱？", duo, "DuoZone双篮空气炸锅$179。")
    wrong = ("黑色还有吗？", crispo, f"Crispo黑色还有{crispo[0][2]['total_in_stock']}台。")
    right = ("黑色还有吗？", duo_stock, f"DuoZone黑色还有{duo_stock[0][2]['total_in_stock']}台。")
    assert verdict([first, wrong], "zh")[1] is False
    assert verdict([first, right], "zh")[1] is True


def test_the_other_items_fact_given_as_the_asked_ones_fails_accuracy() -> None:
    classic = [shop_call("get_promotions", product_id="HM-010")]
    cooling = [shop_call("get_promotions", product_id="HM-011")]
    user = "What's the price of the cooling gel pillow?"
    assert verdict([(user, classic, "It's $69 today.")]) == (False, False)
    assert verdict([(user, classic, "The Classic pillow is $69 today.")]) == (True, False)
    assert verdict([(user, cooling, "It's $63.20 today.")]) == (True, True)
