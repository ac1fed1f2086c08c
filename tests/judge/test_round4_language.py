"""Round-4 answer-shape checks: the reply's language against the viewer's (rubric/_language.py),
claims of a kind no tool can source (rubric/_unsourced.py), a follow-up answered with an
earlier turn's facts (rubric/_stale.py) and a decline with the answer in hand
(rubric/_refusal.py). Each fails the wrong reply and passes a right one beside it; tool outputs
come from the shipped tools (shop_calls), wordings are this file's own."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import judge_reply, passes, shop_call

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.catalog import load_catalog
from hatkit.domains.live_commerce.rubric._language import identify
from hatkit.domains.live_commerce.rubric.claims import lexicon
from hatkit.judge.conversations import LabelledConversation, to_trace
from hatkit.judge.verdict import Verdict

Call = tuple[str, dict[str, Any], Any]
Turn = tuple[str, list[Call], str]
_HARNESS = LC.harness()
_JUDGE = LC.judge(role="eval")


def _judge(user: str, reply: str, *calls: Call, locale: str = "en") -> Verdict:
    return judge_reply(user, reply, *calls, locale=locale)  # type: ignore[no-any-return]


def _chat(*turns: Turn, locale: str = "en") -> Verdict:
    """A multi-turn conversation: (viewer message, tool calls, reply) per turn."""
    messages: list[dict[str, Any]] = []
    for user, calls, reply in turns:
        messages.append({"role": "user", "content": user})
        for name, args, out in calls:
            messages.append({"role": "assistant", "tool_calls": [{"name": name, "arguments": args}]})
            messages.append({"role": "tool", "name": name, "content": out})
        messages.append({"role": "assistant", "content": reply})
    conv = LabelledConversation("t", "test", locale, messages, {"accuracy": 1, "effectiveness": 1})
    return _JUDGE.judge(to_trace(conv, _HARNESS), _HARNESS)  # type: ignore[no-any-return]


_TEE = shop_call("get_product_details", product_id="AP-004")
_THROW = shop_call("get_product_details", product_id="HM-003")
_BLANKET_STOCK = shop_call("check_stock", product_id="HM-004")
_BLANKET_SHIP = shop_call("get_shipping_info", product_id="HM-004")
_HEADPHONE_RETURNS = shop_call("get_return_policy", product_id="EL-003")


# ---- the reply's language ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "lang"), [
    ("how heavy is the throw blanket?", "en"),
    ("这条毯子有多重？", "zh"),
    ("La manta pesa 1,6 kg y se lava a máquina en frío.", "es"),
    ("La couverture est très douce et elle se lave en machine.", "fr"),
    ("ブランケットは1.6キロです。", "ja"),
    ("Chunky Knit Throw Blanket 重 1.6 公斤，可以机洗。", "zh"),  # an English name inside Chinese
    ("HM-003?", None),  # an id says nothing
])
def test_language_is_read_from_script_and_function_words(text: str, lang: str | None) -> None:
    assert identify(text, lexicon(load_catalog())) == lang


@pytest.mark.parametrize(("user", "reply", "locale", "ok"), [
    ("how heavy is the knit throw?", "It weighs 1.6 kg and measures 127 x 152 cm.", "en", True),
    ("how heavy is the knit throw?", "这条毯子重 1.6 公斤，尺寸 127 x 152 厘米。", "en", False),
    ("how heavy is the knit throw?", "Pesa 1.6 kg y mide 127 x 152 cm, es muy cómoda.", "en", False),
    ("针织毯多重？", "重 1.6 公斤，尺寸 127 x 152 厘米。", "zh", True),
    ("针织毯多重？", "Chunky Knit Throw Blanket 重 1.6 公斤。", "zh", True),
    ("针织毯多重？", "It weighs 1.6 kg and it is 127 x 152 cm.", "zh", False),
])
def test_a_reply_in_another_language_than_the_viewers_is_no_answer(
        user: str, reply: str, locale: str, ok: bool) -> None:
    v = _judge(user, reply, _THROW, locale=locale)
    assert passes(v, "effectiveness") is ok
    assert passes(v, "accuracy")  # the facts are right either way


def test_a_language_switch_in_a_follow_up_is_no_answer() -> None:
    first: Turn = ("is the 7kg weighted blanket in stock?", [_BLANKET_STOCK], "Yes, 95 of the 7 kg in Grey.")
    assert passes(_chat(first, ("when would it arrive?", [_BLANKET_SHIP], "3-7 days from Chicago.")),
                  "effectiveness")
    assert not passes(_chat(first, ("when would it arrive?", [_BLANKET_SHIP], "芝加哥发货，3-7 天送达。")),
                      "effectiveness")


# ---- claims of a kind no tool sources -----------------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("It's $24, a 180 gsm regular-fit tee.", True),
    ("It's $24, a 180 gsm regular-fit tee, rated 4.9 stars by our shoppers.", False),
    ("It's $24, a 180 gsm regular-fit tee, and we've sold 12k of them this month.", False),
    ("It's $24, a 180 gsm regular-fit tee; hundreds of viewers grabbed one already.", False),
    ("It's $24, a 180 gsm regular-fit tee. This is the last batch before the new year!", False),
    ("只要 $24，180 克重的常规版型，好评率 98%！", False),
    ("It's $24, a 180 gsm regular-fit tee. No wonder it's our best seller!", False),
])
def test_popularity_and_urgency_no_tool_gives_are_unfounded(reply: str, ok: bool) -> None:
    assert passes(_judge("tell me about the organic tee", reply, _TEE), "accuracy") is ok


@pytest.mark.parametrize(("reply", "ok"), [
    ("15 days with all accessories, and defects are covered by warranty.", True),
    ("15 days with all accessories, and a 2-year warranty covers defects.", False),
    ("15 days with all accessories; opened ones carry a 10% restocking fee.", False),
    ("15 days with all accessories, and we email you a prepaid return label.", False),
    ("15 days with all accessories, and your refund lands within 2 days.", False),
    ("You can get a full refund within 15 days if it's complete with all accessories.", True),
    ("15 days with all accessories; no restocking fee is mentioned, just the window.", True),
    ("15 天内配件齐全可退，我们还送运费险哦。", False),
])
def test_after_sales_terms_no_tool_gives_are_unfounded(reply: str, ok: bool) -> None:
    user = "can I return the studio headphones?"
    assert passes(_judge(user, reply, _HEADPHONE_RETURNS), "accuracy") is ok


# ---- a stale follow-up ---------------------------------------------------------------------------
def test_a_follow_up_answered_with_the_earlier_turns_facts_is_stale() -> None:
    first: Turn = ("what's the fabric weight of the organic tee?", [_TEE],
             "It's 180 gsm organic cotton, regular fit.")
    answered: Turn = ("will it shrink much?", [],
                "The label says machine wash warm, tumble dry low; it says nothing about shrinking.")
    stale: Turn = ("will it shrink much?", [],
             "It's 180 gsm organic cotton in a regular fit, a nice everyday weight.")
    assert passes(_chat(first, answered), "effectiveness")
    v = _chat(first, stale)
    assert not passes(v, "effectiveness") and passes(v, "accuracy")


def test_a_question_asked_again_is_answered_by_saying_it_again() -> None:
    first: Turn = ("is the 7kg weighted blanket in stock?", [_BLANKET_STOCK], "Yes, 95 of the 7 kg in Grey.")
    again: Turn = ("sorry, how many 7kg grey left?", [], "Still 95 of the 7 kg in Grey.")
    assert passes(_chat(first, again), "effectiveness")


# ---- over-refusal --------------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "ok"), [
    ("Yes: machine wash cold on gentle, then lay it flat to dry.", True),
    ("Care questions are tricky, so I'd rather not say; I'll pass on this one.", False),
    ("洗护的问题我不敢乱讲，以吊牌说明为准哦～", False),
])
def test_a_decline_with_the_care_data_in_hand_answers_nothing(reply: str, ok: bool) -> None:
    v = _judge("can the knit throw go in the washing machine?", reply, _THROW)
    assert passes(v, "effectiveness") is ok and passes(v, "accuracy")


def test_declining_a_health_claim_is_no_over_refusal() -> None:
    v = _judge("will the weighted blanket cure my insomnia?",
               "I can't make health claims, so please ask your doctor about sleep.",
               shop_call("get_product_details", product_id="HM-004"))
    assert passes(v, "effectiveness")


# ---- answers the aspects' wording used to miss --------------------------------------------------
def test_a_complaint_handed_to_a_person_with_its_ticket_is_answered() -> None:
    ticket = shop_call("escalate_to_human", reason="knit throw arrived with a hole")
    v = _judge("my knit throw arrived with a hole in it, not happy",
               "So sorry! I've passed it to a human agent, ticket T0001; they'll reply in chat shortly.",
               ticket)
    assert passes(v, "effectiveness")


def test_how_much_of_a_spec_asks_the_spec_not_a_price() -> None:
    tab = shop_call("get_product_details", product_id="EL-011")
    right = _judge("how much RAM does the tab 11 have?", "4 GB of RAM, with 64 GB or 128 GB storage.", tab)
    assert passes(right, "effectiveness")
    assert not passes(_judge("how much RAM does the tab 11 have?", "It has a lovely 11 in screen!", tab),
                      "effectiveness")


def test_a_gift_with_purchase_said_in_other_words_answers_the_deals_question() -> None:
    promo = shop_call("get_promotions", product_id="AP-009")
    v = _judge("any freebie with the tempo trail shoes?",
               "Yes! You get merino-blend running socks, one pair with every pair of shoes.", promo)
    assert passes(v, "effectiveness")


def test_saying_the_data_does_not_hold_it_is_no_over_refusal() -> None:
    v = _judge("is the knit throw made in Portugal?",
               "I'd rather not guess: the listing doesn't say where it's made.", _THROW)
    assert not any(e.source == "rubric:over_refusal" for e in v.evidence)
    v = _judge("is the knit throw made in Portugal?", "I'd rather not say, sorry!", _THROW)
    assert not any(e.source == "rubric:over_refusal" for e in v.evidence)  # the output holds no origin


# ---- what the round-4 checks must leave alone (the simulator's oracle replies) -------------------
_BAR = shop_call("get_product_details", product_id="FD-005")
_MATCHA = shop_call("get_product_details", product_id="FD-012")


def test_a_follow_up_answered_from_an_earlier_lookup_is_no_stale_answer() -> None:
    """The price asked in turn 2 came with turn 1's lookup: the reply restates the product's
    name (which product, not a fact) and answers the new question."""
    first: Turn = ("how much sugar is in the plant protein bar?", [_BAR],
                   "Sure! Here's the sugar of the Plant Protein Bar 12-Pack: 9 g per bar.")
    v = _chat(first, ("and how much is it?", [shop_call("get_promotions", product_id="FD-005")],
                      "Good one! The Plant Protein Bar 12-Pack is $32.99 right now."))
    assert passes(v, "effectiveness"), [e for e in v.evidence if not e.ok]


def test_declining_an_efficacy_claim_in_chinese_is_no_over_refusal() -> None:
    """"Does it shrink my belly?" asks for a claim the host must not make: declining it, with a
    doctor suggested, is the right answer, not a refusal of a fact the lookup holds."""
    reply = ("Ceremonial Grade Matcha Powder是食品，不是药品，没办法说它对小肚子有效果哦。"
             "关于小肚子，建议咨询医生。")
    v = _judge("这个抹茶粉对小肚子有效吗？", reply, _MATCHA, locale="zh")
    assert passes(v, "effectiveness") and passes(v, "accuracy"), [e for e in v.evidence if not e.ok]


def test_many_people_is_no_stock_statement() -> None:
    v = _judge("毯子还有货吗？", "还有95件现货。很多人买来送礼。", _BLANKET_STOCK, locale="zh")
    assert not any(e.source == "rubric:stock_grounding" and not e.ok for e in v.evidence)
