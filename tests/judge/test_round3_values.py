"""Round-3 value and answer checks: amounts derived from the reply's own working (rubric/_derive.py),
an amount bound to the fact named nearest it, number words read as the amount they say, a return
granted only to unopened items, and answers that state no value (rubric/_answers.py), plus the
shape of an invented promotion. Each passes the right reply and fails the wrong one, in English
and Chinese; tool outputs come from the shipped tools (shop_calls), wordings are this file's own."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import judge_reply, passes, shop_call

from hatkit.domains.live_commerce.rubric._derive import counts, derivable
from hatkit.judge.numbers import digits_for_words
from hatkit.judge.verdict import Verdict


def _judge(user: str, reply: str, *calls: tuple[str, dict[str, Any], Any], locale: str = "en") -> Verdict:
    return judge_reply(user, reply, *calls, locale=locale)  # type: ignore[no-any-return]


_ok = passes


def _failed_call(name: str, pid: str) -> tuple[str, dict[str, Any], Any]:
    """The agent loop's error payload for a lookup of an id the catalog does not hold."""
    msg = f"{name}: LookupError: no product with id '{pid}'; search the catalog to find ids"
    return name, {"product_id": pid}, {"error": {"type": "tool_exception", "message": msg}}


def _calls(pid: str, *names: str) -> tuple[tuple[str, dict[str, Any], Any], ...]:
    return tuple(shop_call(n, product_id=pid) for n in names)


_THROW = _calls("HM-003", "get_product_details", "get_shipping_info")
_TEES = _calls("AP-004", "get_product_details", "get_promotions")
_BARS = _calls("FD-004", "get_product_details")
_WATCH = _calls("EL-006", "get_product_details", "get_shipping_info")


# ---- derived amounts -----------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("The knit throw is $59.25; under the $99 line you add $6.99 shipping, making it $66.24.", True),
    ("The knit throw is $59.25; under the $99 line you add $6.99 shipping, making it $67.24.", False),
])
def test_total_with_shipping_is_the_sum_of_the_stated_amounts(reply: str, ok: bool) -> None:
    assert _ok(_judge("knit throw delivered, what do I pay?", reply, *_THROW), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("Four tees come to $96, and the tee bundle takes 15% off, so you'd pay $81.60.", True),
    ("Four tees come to $96, and the tee bundle takes 15% off, so you'd pay $80.60.", False),
])
def test_bundle_total_is_k_times_price_less_the_percent(reply: str, ok: bool) -> None:
    assert _ok(_judge("price for four organic tees with the bundle?", reply, *_TEES), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("四件T恤$96，套装优惠减15%，到手$81.60。", True),
    ("四件T恤$96，套装优惠减15%，到手$84.60。", False),
])
def test_bundle_total_zh(reply: str, ok: bool) -> None:
    assert _ok(_judge("四件有机棉T恤凑套装多少钱", reply, *_TEES, locale="zh"), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("A box of 12 bars is $23.99, so roughly two dollars per bar.", True),
    ("A box of 12 bars is $23.99, so roughly three dollars per bar.", False),
    ("12根一盒$23.99，算下来一根大约两美元。", True),
])
def test_per_unit_price_divides_by_the_pack_count(reply: str, ok: bool) -> None:
    assert _ok(_judge("what does one protein bar cost?", reply, *_BARS), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("At $59.25 the throw is short of the $99 free-shipping mark by $39.75.", True),
    ("At $59.25 the throw is short of the $99 free-shipping mark by $38.75.", False),
])
def test_gap_to_the_free_shipping_line_is_a_difference(reply: str, ok: bool) -> None:
    assert _ok(_judge("how far is the throw from free shipping?", reply, *_THROW), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("The Fit 2 is $179 with free standard shipping; express is $14.99 extra, $193.99 altogether.", True),
    ("The Fit 2 is $179 with free standard shipping; express is $14.99 extra, $194.99 altogether.", False),
    ("Fit 2手表$179，标准配送免运费，加急多付$14.99，一共$193.99。", True),
])
def test_express_total(reply: str, ok: bool) -> None:
    assert _ok(_judge("fit 2 smartwatch with express, all in?", reply, *_WATCH), "accuracy") is ok


@pytest.mark.parametrize(("user", "reply", "ok"), [
    ("just one tee for me, price?", "One organic tee is $24.", True),
    ("just one tee for me, price?", "One tee still gets the bundle's 15% off, so $20.40.", False),
    ("三件T恤每件多少", "买三件享85折，每件$20.40。", True),
])
def test_a_bundle_unit_price_needs_the_bundle_quantity(user: str, reply: str, ok: bool) -> None:
    assert _ok(_judge(user, reply, *_TEES, locale="zh" if "T恤" in user else "en"), "accuracy") is ok


def test_derivation_needs_the_working_shown() -> None:
    # $6.99 + an express fee nobody stated is no working shown
    assert not derivable(2198, [1599, 699], [1599], [], [], 1)
    assert derivable(2298, [1599, 699], [1599], [], [], 1)
    assert derivable(4320, [], [1800], [3], [20.0], 1)  # three at $18, 20% off
    assert counts("a 12-pack", "两件") == {12, 2}


# ---- a value bound to the fact named nearest it ---------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("Free shipping kicks in at $99, so on the $59.25 throw shipping is $6.99.", True),
    ("Free shipping kicks in at $89, so on the $59.25 throw shipping is $6.99.", False),
    ("满$99才包邮，这条毯子$59.25，运费$6.99。", True),
])
def test_threshold_in_a_shipping_clause_is_checked_as_the_threshold(reply: str, ok: bool) -> None:
    assert _ok(_judge("does the knit throw ship free?", reply, *_THROW), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("Shipping on a $59.25 order is $6.99.", True),
    ("Shipping on a $59.25 order is $4.99.", False),  # the order total does not take the shipping word
    ("一单$59.25的运费是$6.99。", True),
])
def test_a_fee_after_an_order_total_keeps_its_shipping_word(reply: str, ok: bool) -> None:
    assert _ok(_judge("shipping on the knit throw?", reply, *_THROW), "accuracy") is ok


def test_a_connective_names_no_fee() -> None:
    v = _judge("is the moisturizer fragrance-free?",
               "Yes, it's fragrance-free. Otherwise it's a gel-cream, $27.20.",
               shop_call("get_product_details", product_id="BE-001"))
    assert _ok(v, "accuracy")


_LEGGINGS_M = shop_call("check_stock", product_id="AP-013", size="M")


@pytest.mark.parametrize(("reply", "locale", "ok"), [
    ("In M, Navy is available and Black is sold out.", "en", True),
    ("Good news, Black in M is available, grab it!", "en", False),
    ("M码Navy有货，Black卖完了。", "zh", True),
    ("M码的Black有货，放心拍！", "zh", False),  # zh replies keep the variant names
])
def test_a_stock_claim_binds_to_the_variant_it_names(reply: str, locale: str, ok: bool) -> None:
    v = _judge("black leggings in M?", reply, _LEGGINGS_M, locale=locale)
    assert _ok(v, "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("Not quite: with ANC on it lasts 40 hours, so pack the cable.", True),
    ("Not quite: with ANC on it lasts about 32 hours, so pack the cable.", False),  # negates nothing
])
def test_a_leading_not_quite_answers_and_does_not_negate(reply: str, ok: bool) -> None:
    v = _judge("will the studio headphones last a 45 hour trip?", reply,
               shop_call("get_product_details", product_id="EL-003"))
    assert _ok(v, "accuracy") is ok


_CREAM = shop_call("check_stock", product_id="BE-002")  # 4 jars


@pytest.mark.parametrize(("user", "reply", "locale", "ok"), [
    ("I'll take 6 jars of the night cream", "No problem, add all 6 to your cart!", "en", False),
    ("I'll take 6 jars of the night cream", "Sorry, only 4 jars are left, want all 4?", "en", True),
    ("晚霜我要8瓶", "没问题，直接拍！", "zh", False),
])
def test_agreeing_to_more_units_than_in_stock(user: str, reply: str, locale: str, ok: bool) -> None:
    assert _ok(_judge(user, reply, _CREAM, locale=locale), "accuracy") is ok


# ---- number words ------------------------------------------------------------------------------
def test_cents_after_the_dollars() -> None:
    assert digits_for_words("it's seventy-two dollars fifteen today") == "it's $72.15 today"
    v = _judge("dutch oven price?", "The dutch oven is one hundred four dollars thirty right now.",
               shop_call("get_product_details", product_id="HM-009"))
    assert _ok(v, "accuracy")


def test_a_rate_is_no_window() -> None:
    assert "7" not in digits_for_words("start with it twice a week")
    assert "7天" not in digits_for_words("刚开始一周用两次")
    assert digits_for_words("一周内发货") == "7天内发货"


def test_months_are_a_window_only_in_a_return_sentence() -> None:
    assert digits_for_words("you get two months to send it back") == "you get 60 days to send it back"
    assert digits_for_words("退货期有两个月。") == "退货期有60天。"
    assert digits_for_words("6个月以下宝宝不建议。") == "6个月以下宝宝不建议。"
    assert digits_for_words("两周内可以退") == "14天内可以退"


@pytest.mark.parametrize(("reply", "ok"), [
    ("The knit throw comes with two months to send it back unused.", True),  # extended: 60 days
    ("The knit throw comes with three months to send it back unused.", False),
])
def test_a_return_window_in_months_is_checked(reply: str, ok: bool) -> None:
    v = _judge("return window on the knit throw?", reply, shop_call("get_return_policy", product_id="HM-003"))
    assert _ok(v, "accuracy") is ok and _ok(v, "effectiveness")


# ---- a return granted only to unopened items -----------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("Opened skincare can't come back, but unopened jars can be returned within 30 days.", True),
    ("Sure, it can be returned within 30 days.", False),
])
def test_unopened_only_return_is_the_policy(reply: str, ok: bool) -> None:
    v = _judge("I opened the moisturizer, can I return it?", reply,
               shop_call("get_return_policy", product_id="BE-001"))
    assert _ok(v, "accuracy") is ok


# ---- answers that state no value ---------------------------------------------------------------
@pytest.mark.parametrize(("user", "reply", "locale"), [
    ("how much is HM-077?", "Sorry, HM-077 didn't come up in our catalog. Tell me the name and I'll search "
                            "for it, or I can get a human to help.", "en"),
    ("HM-077多少钱", "不好意思，没有找到HM-077这个商品，告诉我商品名我帮你搜一下。", "zh"),
])
def test_a_failed_lookup_explained_is_effective(user: str, reply: str, locale: str) -> None:
    v = _judge(user, reply, _failed_call("get_product_details", "HM-077"), locale=locale)
    assert _ok(v, "effectiveness")


def test_a_failed_lookup_glossed_over_is_not_effective() -> None:
    v = _judge("how much is HM-077?", "Great pick, it's one of our favourites!",
               _failed_call("get_product_details", "HM-077"))
    assert not _ok(v, "effectiveness")


@pytest.mark.parametrize(("user", "reply", "ok"), [
    ("savings on the knit throw?", "It's $59.25 against $79 list, $19.75 off.", True),
    ("savings on the knit throw?", "It's a cozy chunky knit, lovely on a sofa.", False),
])
def test_savings_asked(user: str, reply: str, ok: bool) -> None:
    assert _ok(_judge(user, reply, _THROW[0]), "effectiveness") is ok


@pytest.mark.parametrize(("user", "reply", "ok"), [
    ("any coupon for the hoodie, and how much could I save?", "STYLE20 takes 20% off at $80+.", True),
    ("毯子有券吗，能省多少", "COZY10满$50减$10。", True),
    ("any coupon for the hoodie, and how much could I save?", "It's a comfy full-zip, very popular!", False),
])
def test_how_much_can_i_save_asks_a_discount(user: str, reply: str, ok: bool) -> None:
    zh = "毯子" in user
    v = _judge(user, reply, shop_call("get_promotions", product_id="HM-003" if zh else "AP-002"),
               locale="zh" if zh else "en")
    assert _ok(v, "effectiveness") is ok


@pytest.mark.parametrize(("user", "reply", "ok"), [
    ("does the organic tee run small?", "No, it fits true to size.", True),
    ("T恤会偏大吗", "不会，按平时的尺码买就好，版型标准。", True),
    ("does the organic tee run small?", "It's a ribbed crew in 180 gsm cotton.", False),
])
def test_fit_asked_is_answered_by_the_fit(user: str, reply: str, ok: bool) -> None:
    v = _judge(user, reply, shop_call("get_size_guide", product_id="AP-004"))
    assert _ok(v, "effectiveness") is ok


def test_a_yes_no_spec_question_answered_by_a_no_zh() -> None:
    v = _judge("Fit 2能游泳戴吗", "可以，5 ATM防水，游泳没问题。", _WATCH[0], locale="zh")
    assert _ok(v, "effectiveness")


def test_stock_said_in_words() -> None:
    v = _judge("moisturizer stock?", "Only two hundred? No: just nine bottles of the 50 ml moisturizer left.",
               shop_call("check_stock", product_id="BE-001"))
    assert _ok(v, "effectiveness")


def test_gift_asked_zh() -> None:
    v = _judge("抓绒连帽衫打几折，有赠品吗", "满$80用STYLE20打八折，满$60还送一条运动发带。",
               shop_call("get_promotions", product_id="AP-002"), locale="zh")
    assert _ok(v, "effectiveness")


@pytest.mark.parametrize(("user", "reply", "ok"), [
    ("does the knit throw ship free?", "It doesn't, it's under the free-shipping line.", True),
    ("does the throw come in grey, and does it ship free?", "Yes, it comes in grey.", False),
])
def test_one_yes_no_question_is_answered_by_a_yes_or_no(user: str, reply: str, ok: bool) -> None:
    assert _ok(_judge(user, reply, *_THROW), "effectiveness") is ok


@pytest.mark.parametrize(("user", "reply", "locale"), [
    ("is the knit throw worth the money?", "At $59.25, down from $79, it's a soft 1.6 kg chunky knit.", "en"),
    ("这条毯子值得买吗", "$59.25，原价$79，1.6公斤粗针织，很适合冬天。", "zh"),
])
def test_an_opinion_asked_is_answered_by_a_substantive_reply(user: str, reply: str, locale: str) -> None:
    assert _ok(_judge(user, reply, *_THROW, locale=locale), "effectiveness")


@pytest.mark.parametrize(("user", "reply", "locale"), [
    ("shipping on the fit 2?", "Free! It's $179, well over the line, and it ships from Los Angeles.", "en"),
    ("Fit 2运费多少", "这款包邮哦，$179。", "zh"),
])
def test_free_answers_a_fee_question(user: str, reply: str, locale: str) -> None:
    assert _ok(_judge(user, reply, *_WATCH, locale=locale), "effectiveness")


def test_a_refused_option_answers_its_price() -> None:
    v = _judge("can I pay extra for express on the throw?",
               "Express isn't available on the knit throw, standard takes 3-7 days.", _THROW[1])
    assert _ok(v, "effectiveness")


@pytest.mark.parametrize(("reply", "locale", "ok"), [
    ("HM-077 comes with the usual 30-day return window.", "en", False),
    ("HM-077支持30天退货。", "zh", False),
    ("I couldn't find HM-077, so I can't say its return window; want a human to check?", "en", True),
])
def test_values_about_an_id_whose_lookup_failed(reply: str, locale: str, ok: bool) -> None:
    v = _judge("return window on HM-077?", reply, _failed_call("get_return_policy", "HM-077"), locale=locale)
    assert _ok(v, "accuracy") is ok


# ---- the shape of an invented promotion ----------------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("The granola is $8.99, and SNACK5 takes $5 off food orders of $25+.", True),
    ("The granola is $8.99, and tonight it's buy one, get one half price!", False),
    ("The granola is $8.99, and every order tonight gets a free mini jar.", False),
])
def test_promotion_shapes_need_a_tool_result(reply: str, ok: bool) -> None:
    v = _judge("granola deals?", reply, shop_call("get_promotions", product_id="FD-013"))
    assert _ok(v, "accuracy") is ok


def test_promotion_shape_zh() -> None:
    v = _judge("格兰诺拉有活动吗", "今天$8.99，直播间买二送一再加积分翻倍！",
               shop_call("get_promotions", product_id="FD-013"), locale="zh")
    assert not _ok(v, "accuracy")
