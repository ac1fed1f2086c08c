"""Partial answers and wrong targets: a reply that drops one of several facts the viewer asked
for, or answers about another product or variant than the one named, fails effectiveness; a
reply that gives another item's fact as the asked one's also fails accuracy. Each check has a
failing case and a clean one, in English and Chinese (conversations written for these tests)."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import shop_call

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.rubric._facets import asked_facets, asked_properties
from hatkit.domains.live_commerce.rubric._names import named_products
from hatkit.domains.live_commerce.rubric.claims import lexicon
from hatkit.judge.conversations import LabelledConversation, to_trace


def verdict(user: str, calls: list[tuple[str, dict[str, Any], Any]], reply: str, locale: str = "en") -> tuple[
        bool, bool]:
    """(accuracy passes, effectiveness passes) for one viewer turn, its tool calls and the reply."""
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


SPEAKER = [shop_call("get_product_details", product_id="EL-010")]
PHONE = [shop_call("get_product_details", product_id="EL-008")]
PHONE_COLOURS = [*PHONE, shop_call("check_stock", product_id="EL-008")]
"""The colours come from the stock tool: a colour no tool returned is an unfounded detail."""


@pytest.mark.parametrize(("user", "calls", "reply", "locale", "effective"), [
    ("Boom Go speaker - what does it cost, and how long does the battery go?", SPEAKER,
     "The Boom Go Bluetooth Speaker is $79.", "en", False),
    ("Boom Go speaker - what does it cost, and how long does the battery go?", SPEAKER,
     "The Boom Go Bluetooth Speaker is $79 and plays for 16 h on a charge.", "en", True),
    ("Nova 5G手机多少钱？有哪些颜色？", PHONE, "Nova 5G现在449美元，原价499美元。", "zh", False),
    ("Nova 5G手机多少钱？有哪些颜色？", PHONE_COLOURS,
     "Nova 5G现在449美元，有Graphite和Glacier两种颜色。", "zh", True),
])
def test_a_reply_that_drops_an_asked_fact_is_not_effective(user: str, calls: Any, reply: str, locale: str,
                                                            effective: bool) -> None:
    accurate, eff = verdict(user, calls, reply, locale)
    assert accurate  # leaving a fact out is not a wrong fact
    assert eff is effective


def test_facets_are_read_from_question_structure() -> None:
    assert asked_facets("what does it weigh, and what colours are there?") == ["colour", "weight"]
    assert asked_facets("运费多少？几天能到？") == ["delivery", "fee"]
    assert asked_properties("is it dishwasher safe?", []) == ["dishwasher safe"]
    assert asked_properties("how much are the almonds?", ["price"]) == []
    assert asked_properties("能用电磁炉吗？", []) == ["能用电磁炉"]
    assert asked_properties("这款耳机现在能买吗？几天到？", []) == []  # availability: a stock question


def test_products_are_named_by_brand_words_and_chinese_kinds() -> None:
    lex = lexicon()
    assert named_products("is the techlite one warm?", lex) == {"AP-002"}
    assert named_products("双篮空气炸锅多少钱", lex) == {"HM-002"}
    assert named_products("how much is it?", lex) == set()


FRYER = [shop_call("get_product_details", product_id="HM-001")]
DUO = [shop_call("get_product_details", product_id="HM-002")]


@pytest.mark.parametrize(("user", "calls", "reply", "locale", "expected"), [
    # another product, named as itself: the answer is beside the question, not wrong
    ("how much is the DuoZone air fryer today?", FRYER, "The Crispo 5.5 L Digital Air Fryer is $89.25.", "en",
     (True, False)),
    # another product's price given as the asked one's
    ("how much is the DuoZone air fryer today?", FRYER, "The DuoZone fryer is $89.25 today.", "en",
     (False, False)),
    ("how much is the DuoZone air fryer today?", DUO, "The DuoZone fryer is $179 today.", "en", (True, True)),
    ("双篮空气炸锅现在卖多少？", FRYER, "Crispo 5.5 L Digital Air Fryer现在89.25美元。", "zh", (True, False)),
    ("双篮空气炸锅现在卖多少？", DUO, "DuoZone双篮空气炸锅现在179美元。", "zh", (True, True)),
])
def test_a_reply_about_another_product(user: str, calls: Any, reply: str, locale: str,
                                       expected: tuple[bool, bool]) -> None:
    assert verdict(user, calls, reply, locale) == expected


def tab(size: str) -> list[tuple[str, dict[str, Any], Any]]:
    return [shop_call("check_stock", product_id="EL-011", size=size)]


@pytest.mark.parametrize(("user", "calls", "reply", "locale", "expected"), [
    ("Tab 11 in 64GB - any in stock?", tab("128GB"), "Only 1 of the 128GB Tab 11 is left.", "en",
     (True, False)),
    ("Tab 11 in 64GB - any in stock?", tab("128GB"), "The 64 GB Tab 11 has 1 left.", "en", (False, False)),
    ("Tab 11 in 64GB - any in stock?", tab("64GB"), "The 64 GB Tab 11 has 81 in stock.", "en", (True, True)),
    ("平板64GB的还有货吗", tab("128GB"), "128GB的只剩1台了。", "zh", (True, False)),
    ("平板64GB的还有货吗", tab("64GB"), "64GB的还有81台，放心下单。", "zh", (True, True)),
])
def test_a_reply_about_another_variant(user: str, calls: Any, reply: str, locale: str,
                                       expected: tuple[bool, bool]) -> None:
    assert verdict(user, calls, reply, locale) == expected
