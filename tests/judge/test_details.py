"""Unfounded details (rubric/_details.py): a specific detail no tool output, rule or viewer message
supports fails accuracy; the same reply kept to what the tools said passes. Each check has an
English and a Chinese case each way."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest

from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge
from hatkit.domains.live_commerce.variants import HARNESS_DIR
from hatkit.harness import Harness, load_harness
from hatkit.judge.conversations import LabelledConversation, to_trace
from hatkit.judge.verdict import Evidence

EARBUDS = {"product_id": "EL-002", "name": "Aura Lite True Wireless Earbuds", "price": 49.99,
           "specs": {"battery": "6 h buds, 24 h with case", "weight": "4.1 g per bud"}}
SHOE = {"product_id": "AP-009", "name": "Tempo Trail Running Shoe", "brand": "Velo Stride",
        "specs": {"heel-to-toe drop": "6 mm"}, "materials": ["outsole: sticky rubber"]}
THROW = {"product_id": "HM-003", "name": "Chunky Knit Throw Blanket", "specs": {"dimensions": "127 x 152 cm"}}
HONEY = {"product_id": "FD-009", "name": "Raw Wildflower Honey", "specs": {"origin": "Oregon, USA"}}
SHIPPING = {"product_id": "HM-004", "ships_from": "Chicago", "delivery_days": "3-7", "shipping_fee": 0.0,
            "free_shipping_threshold": 99.0}
GIFT_PROMO = {"product_id": "AP-002", "promotions": [{"kind": "gift_with_purchase", "value": 0,
                                                     "min_spend": 60,
              "description": "Free sweat headband with orders of $60 or more."}], "coupons": []}
NO_PRODUCT = {"error": {"type": "tool_exception", "message": "get_promotions: LookupError: no product"}}


@lru_cache(maxsize=1)
def _setup() -> tuple[ProgrammaticJudge, Harness]:
    return ProgrammaticJudge(), load_harness(HARNESS_DIR)


def _grounding_failures(user: str, tool: str, output: dict[str, Any], reply: str, locale: str = "en"
                        ) -> list[Evidence]:
    judge, harness = _setup()
    args = {"product_id": str(output.get("product_id", "HM-0011"))}
    conv = LabelledConversation("t", "test", locale, [
        {"role": "user", "content": user},
        {"role": "assistant", "tool_calls": [{"name": tool, "arguments": args}]},
        {"role": "tool", "name": tool, "content": output},
        {"role": "assistant", "content": reply}], {"accuracy": 1, "effectiveness": 1})
    verdict = judge.judge(to_trace(conv, harness), harness)
    return [e for e in verdict.failures() if e.item == "accuracy" and e.source == "trace:grounding"]


@pytest.mark.parametrize(("locale", "user", "reply"), [
    ("en", "how fast does the Aura Lite case charge?",
     "Buds last 6 h, and the case refills fully in 24 minutes."),
    ("zh", "Aura Lite充电快吗？", "单耳6小时，充电盒24分钟就能充满。"),
])
def test_a_number_stated_in_another_unit_than_the_tools_is_unfounded(locale: str, user: str,
                                                                      reply: str) -> None:
    failed = _grounding_failures(user, "get_product_details", EARBUDS, reply, locale)
    assert any("in that unit" in e.expected for e in failed), failed


@pytest.mark.parametrize(("locale", "output", "reply"), [
    ("en", EARBUDS, "About 6 hours per charge and 24 hours with the case; each bud is 4.1 grams."),
    ("en", THROW, "It's roughly 50 x 60 inches, a generous throw."),
    ("zh", EARBUDS, "单耳续航6小时，加上充电盒一共24小时，每只4.1克。"),
])
def test_the_tools_numbers_in_their_own_or_a_converted_unit_pass(locale: str, output: dict[str, Any],
                                                                 reply: str) -> None:
    assert _grounding_failures("tell me about it", "get_product_details", output, reply, locale) == []


@pytest.mark.parametrize(("locale", "reply"), [
    ("en", "A 6 mm drop, and the outsole is Megagrip rubber for wet rock."),
    ("zh", "落差6毫米，大底是Megagrip橡胶，湿滑岩石也稳。"),
])
def test_a_name_no_tool_mentions_is_unfounded(locale: str, reply: str) -> None:
    failed = _grounding_failures("trail shoe grip?", "get_product_details", SHOE, reply, locale)
    assert [e.claim for e in failed] == ["Megagrip"]


@pytest.mark.parametrize(("locale", "reply"), [
    ("en", "Great pick! It's made by Velo Stride, with a sticky rubber outsole and a 6 mm drop."),
    ("zh", "这双是Velo Stride出品的，大底是粘性橡胶，落差6毫米。"),
])
def test_names_from_the_tool_output_pass(locale: str, reply: str) -> None:
    assert _grounding_failures("trail shoe grip?", "get_product_details", SHOE, reply, locale) == []


@pytest.mark.parametrize(("locale", "reply", "bad"), [
    ("en", "It ships from Chicago in 3-7 days, so it'll be with you by Thursday.", True),
    ("en", "It ships from Chicago in 3-7 days, so I can't promise Thursday.", False),
    ("zh", "芝加哥发货，3到7天送达，下周三之前肯定到。", True),
    ("zh", "芝加哥发货，3到7天送达，没法保证周三之前到。", False),
])
def test_a_day_no_tool_gave_is_unfounded_unless_declined(locale: str, reply: str, bad: bool) -> None:
    failed = _grounding_failures("when will it arrive?", "get_shipping_info", SHIPPING, reply, locale)
    assert bool([e for e in failed if "day or date" in e.expected]) == bad, failed


@pytest.mark.parametrize(("locale", "output", "reply", "bad"), [
    ("en", SHIPPING, "Free shipping on this one, and it comes with a free gift too!", True),
    ("en", GIFT_PROMO, "Spend $60 and you get a free gift with it: a sweat headband.", False),
    ("zh", SHIPPING, "这单包邮，3到7天送达，还送一个收纳袋。", True),
    ("zh", GIFT_PROMO, "满60美元送你一条运动发带。", False),
    ("en", THROW, "The chunky knit is made in Portugal.", True),
    ("en", HONEY, "Raw honey, produced in Oregon, USA.", False),
    ("zh", THROW, "这条粗针织毛毯产自葡萄牙。", True),
    ("zh", HONEY, "这款蜂蜜产自美国俄勒冈州。", False),
])
def test_a_detail_kind_no_tool_speaks_of_is_unfounded(locale: str, output: dict[str, Any], reply: str,
                                                      bad: bool) -> None:
    failed = _grounding_failures("any extras?", "get_product_details", output, reply, locale)
    assert bool([e for e in failed if "no tool result in this episode mentions" in e.expected]) == bad, failed


@pytest.mark.parametrize(("locale", "user", "reply", "bad"), [
    ("en", "deals on the cooling pillow?", "Good news: HOMEBASE15 works on it, and no minimum.", True),
    ("en", "can you apply HOMEBASE15?", "Sorry, HOMEBASE15 is not one I can apply; try checkout.", False),
    ("zh", "凉感枕有优惠吗？", "HOMEBASE15可以用，没有门槛。", True),
    ("zh", "能帮我用HOMEBASE15吗？", "抱歉，HOMEBASE15我这边没法帮你用，结账时输入试试。", False),
])
def test_a_code_stated_as_usable_after_a_failed_lookup_is_unfounded(locale: str, user: str, reply: str,
                                                                    bad: bool) -> None:
    failed = _grounding_failures(user, "get_promotions", NO_PRODUCT, reply, locale)
    assert bool([e for e in failed if "coupon code" in e.expected]) == bad, failed
