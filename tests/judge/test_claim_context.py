"""Claim context (issue 17): Chinese discount notation (九折, 八五折, 85折), "N块" that counts pieces,
day counts about how long a product lasts, upper bounds ("within two days", "just under"), vague
stock ("a dozen or so"), money in words after a money verb, and questions about how long a
product lasts. Each fix has a failing and a clean case (conversations written for these tests)."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import shop_call

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.rubric.claims import extract_claims
from hatkit.judge.conversations import LabelledConversation, to_trace
from hatkit.judge.numbers import digits_for_words


def verdict(user: str, calls: list[tuple[str, dict[str, Any], Any]], reply: str, locale: str = "en"
            ) -> tuple[bool, bool]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for name, args, out in calls:
        msgs += [{"role": "assistant", "tool_calls": [{"name": name, "arguments": args}]},
                 {"role": "tool", "name": name, "content": out}]
    msgs.append({"role": "assistant", "content": reply})
    conv = LabelledConversation("t-1", "test", locale, msgs, {"accuracy": 1, "effectiveness": 1})
    h = LC.harness()
    judge = LC.judge()
    v = judge.judge(to_trace(conv, h), h)
    return v.accuracy >= judge.thresholds["accuracy"], v.effectiveness >= judge.thresholds["effectiveness"]


def claims(text: str) -> list[tuple[str, float | None, float | None, str]]:
    found = extract_claims(digits_for_words(text))
    return [(c.kind, c.value, c.high, c.role) for c in found if c.kind != "product"]


DIFFUSER = [shop_call("get_product_details", product_id="HM-008")]  # $35.70, list $42: 15% off
BAND = [shop_call("get_product_details", product_id="EL-007")]  # up to 14 days typical
BAND_TEAL = [shop_call("check_stock", product_id="EL-007", color="Teal")]
FRYER_SHIP = [shop_call("get_shipping_info", product_id="HM-001")]  # 2-6 days


@pytest.mark.parametrize(("text", "off"), [("打九折", 10.0), ("八五折", 15.0), ("打85折", 15.0),
                                           ("7.5折", 25.0), ("八八折", 12.0)])
def test_zh_discount_notation(text: str, off: float) -> None:
    assert ("percent", off, None, "discount") in claims(text)


@pytest.mark.parametrize(("reply", "accurate"), [
    ("香薰机现在35.7美元，原价42美元，差不多打八五折。", True),
    ("香薰机现在35.7美元，原价42美元，差不多打85折。", True),
    ("香薰机原价42美元，现在打75折。", False),
])
def test_discount_against_list_price(reply: str, accurate: bool) -> None:
    assert verdict("香薰机打几折？", DIFFUSER, reply, "zh")[0] is accurate


def test_markdown_in_zhe_notation() -> None:  # $47.20 against a $59 list price: 八折, no coupon of 20%
    assert verdict("Band Go手环打几折？", BAND, "Band Go现在47.2美元，原价59美元，相当于打八折。", "zh")[0]


def test_kuai_counts_pieces_not_money() -> None:
    assert claims("青色手环还剩3块") == [("stock", 3.0, None, "")]
    assert not [c for c in claims("想买2块手表") if c[0] == "money"]
    assert claims("这个29块钱") == [("money", 29.0, None, "amount")]


@pytest.mark.parametrize(("reply", "accurate"), [("青色的还剩64块哦，放心拍。", True),
                                                 ("青色的还剩6块，抓紧！", False)])
def test_kuai_stock(reply: str, accurate: bool) -> None:
    assert verdict("Band Go青色还有吗？", BAND_TEAL, reply, "zh") == (accurate, True)


def test_usage_days_are_not_delivery() -> None:
    assert claims("battery lasts 3-5 days, and it ships in 2-4 days") == [
        ("days", 3.0, 5.0, "other"), ("days", 2.0, 4.0, "delivery")]


@pytest.mark.parametrize(("reply", "accurate"), [("Band Go手环典型使用最长14天，看你怎么用。", True),
                                                 ("Band Go手环续航最长20天。", False)])
def test_battery_days_against_specs(reply: str, accurate: bool) -> None:
    assert verdict("Band Go手环充一次电能用几天？", BAND, reply, "zh")[0] is accurate


@pytest.mark.parametrize(("reply", "locale", "accurate"), [
    ("The air fryer is at your door within two days.", "en", False),
    ("Expect the air fryer at your door within a week.", "en", True),
    ("空气炸锅2天内送到。", "zh", False),
    ("空气炸锅一般6天内送到。", "zh", True),
])
def test_delivery_within(reply: str, locale: str, accurate: bool) -> None:
    assert verdict("How fast does the Crispo air fryer arrive?", FRYER_SHIP, reply, locale)[0] is accurate


@pytest.mark.parametrize(("reply", "accurate"), [("There's a dozen or so Teal left.", False),
                                                 ("Plenty of Teal left, 64 of them.", True)])
def test_vague_stock(reply: str, accurate: bool) -> None:
    user = "Band Go in teal, do you have it?"
    assert verdict(user, BAND_TEAL, reply)[0] is accurate
    low_stock = [("check_stock", {"product_id": "EL-007", "color": "Teal"},
                  {**shop_call("check_stock", product_id="EL-007", color="Teal")[2], "total_in_stock": 12,
                   "variants": [{"sku": "EL-007-TEAL", "size": None, "color": "Teal", "stock": 12}]})]
    assert verdict(user, low_stock, "There's a dozen or so Teal left.")[0]


def test_money_words_after_money_verbs() -> None:
    assert digits_for_words("spend forty on home goods") == "spend $40 on home goods"
    assert digits_for_words("it's going for one-sixty") == "it's going for $160"
    assert digits_for_words("you get a fiver off") == "you get $5 off"
    assert digits_for_words("spend two days there") == "spend 2 days there"


@pytest.mark.parametrize(("reply", "accurate"), [("It sells for just under thirty-six dollars.", True),
                                                 ("It sells for just under thirty dollars.", False)])
def test_just_under(reply: str, accurate: bool) -> None:
    assert verdict("What does the aroma diffuser cost?", DIFFUSER, reply)[0] is accurate


@pytest.mark.parametrize(("user", "reply", "locale", "effective"), [
    ("How long does the Band Go last on a charge?", "Up to 14 days typical on the Band Go.", "en", True),
    ("How long does the Band Go last on a charge?", "The Band Go tracks heart rate and sleep, super comfy!",
     "en", False),
    ("Band Go手环续航多久？", "Band Go典型使用最长14天。", "zh", True),
    ("Band Go手环续航多久？", "Band Go戴着很轻，颜色也好看。", "zh", False),
])
def test_lasting_question_is_a_spec_question(user: str, reply: str, locale: str, effective: bool) -> None:
    assert verdict(user, BAND, reply, locale)[1] is effective
