"""Round-5 checks: a yes/no attribute said the wrong way round (rubric/_polarity.py), a
comparison verdict that its own quoted values contradict (_verdict.py) and a reply that scolds
or mocks the viewer (_tone.py). Each case passes a right reply and fails the wrong one; tool
outputs come from the shipped tools (shop_calls), the wordings are this file's own."""

from __future__ import annotations

from typing import Any

import pytest
from shop_calls import judge_reply, passes, shop_call

from hatkit.judge.verdict import Verdict

Call = tuple[str, dict[str, Any], Any]


def _details(*pids: str) -> tuple[Call, ...]:
    return tuple(shop_call("get_product_details", product_id=p) for p in pids)


def _source(v: Verdict, source: str) -> list[str]:
    return [f"{e.claim} | {e.expected}" for e in v.evidence if not e.ok and e.source == source]


ACCURACY = [
    # a feature the data states, denied; a feature the data denies, affirmed
    ("en", "can the pulse case charge on a pad?", _details("EL-001"),
     "Yes, the Pulse ANC case supports wireless charging, and you get 8 h in the buds.",
     "Sadly the Pulse ANC case has no wireless charging option, so keep a cable handy.",
     "rubric:attribute_polarity"),
    ("en", "will the dutch oven work on my induction hob?", _details("HM-009"),
     "It will: gas, electric and induction are all fine, and it's oven safe to 260 C.",
     "Heads up, it won't work with induction, only gas and electric. Oven safe to 260 C.",
     "rubric:attribute_polarity"),
    ("en", "does the skin tint protect from the sun?", _details("BE-008"),
     "No, its SPF is listed as none, so wear sunscreen underneath.",
     "Good news, it comes with SPF built in, plus a dewy finish.",
     "rubric:attribute_polarity"),
    ("zh", "Fit 2能自己定位跑步路线吗", _details("EL-006"),
     "可以，Fit 2内置GPS，开GPS续航30小时。", "Fit 2没有GPS，跑步要带手机。",
     "rubric:attribute_polarity"),
    ("zh", "粉底有防晒效果吗", _details("BE-008"),
     "没有防晒哦，SPF一栏是无，出门记得涂防晒霜。", "有的，这款自带防晒，水光妆效。",
     "rubric:attribute_polarity"),
    # a verdict its own values contradict
    ("en", "which power bank is easier to carry, 10K or 20K?", _details("EL-004", "EL-005"),
     "The 10K is 198 g and the 20K is 420 g, so the 10K is the lighter one.",
     "The 10K is 198 g and the 20K is 420 g, so the 20K is the lighter one.",
     "rubric:comparison_verdict"),
    ("en", "which air fryer gets hotter?", _details("HM-001", "HM-002"),
     "The Crispo tops out at 200 C and the DuoZone at 240 C, so the DuoZone goes higher.",
     "The Crispo tops out at 200 C and the DuoZone at 240 C, so the Crispo goes higher.",
     "rubric:comparison_verdict"),
    ("zh", "两个充电宝哪个更轻？", _details("EL-004", "EL-005"),
     "10K重198克，20K重420克，10K更轻。", "10K重198克，20K重420克，20K更轻一些。",
     "rubric:comparison_verdict"),
]


@pytest.mark.parametrize(("locale", "user", "calls", "right", "wrong", "source"), ACCURACY,
                         ids=[f"{c[5].split(':')[1]}-{c[0]}{i}" for i, c in enumerate(ACCURACY)])
def test_the_right_reply_passes_and_the_flipped_one_fails(locale: str, user: str, calls: tuple[Call, ...],
                                                          right: str, wrong: str, source: str) -> None:
    good = judge_reply(user, right, *calls, locale=locale)
    bad = judge_reply(user, wrong, *calls, locale=locale)
    assert passes(good, "accuracy"), [e for e in good.evidence if not e.ok]
    assert not passes(bad, "accuracy")
    assert _source(bad, source), [e for e in bad.evidence if not e.ok]
    assert passes(bad, "effectiveness"), "a wrong yes/no or verdict still answers the question"


def test_a_true_negative_is_not_a_flip() -> None:
    """The Band Go has no GPS: saying so is right, though the Fit 2 beside it has one."""
    v = judge_reply("does the band go or the fit 2 have gps?",
                    "The Fit 2 has GPS built in, but there's no GPS on the Band Go.",
                    *_details("EL-006", "EL-007"))
    assert not _source(v, "rubric:attribute_polarity"), v.evidence
    v = judge_reply("is the sunscreen waterproof?",
                    "It's not fully waterproof: water resistant for 40 minutes.", *_details("BE-003"))
    assert not _source(v, "rubric:attribute_polarity"), v.evidence


TONE = [
    ("en", "how much is the nova phone? missed it", _details("EL-008"),
     "No worries, it's a busy chat! The Nova 5G is $449, down from $499.",
     "I literally just said this. It's $449, down from $499. Pay attention."),
    ("en", "is the crispo big enough for two?", _details("HM-001"),
     "Yes, the Crispo is 5.5 L and fits a whole chicken up to 1.8 kg, plenty for two.",
     "It's an air fryer, not rocket science. 5.5 L, fits a whole chicken up to 1.8 kg. Obviously."),
    ("zh", "手机多少钱？刚没看到", _details("EL-008"),
     "没关系，弹幕太快啦～Nova 5G现在$449，原价$499。",
     "都说第三遍了🙄 Nova 5G现在$449，原价$499。"),
    ("zh", "没钱了，手机现在多少钱", _details("EL-008"),
     "理解～Nova 5G现在$449，原价$499。",
     "没钱还逛直播间？Nova 5G现在$449，原价$499。"),
]


@pytest.mark.parametrize(("locale", "user", "calls", "warm", "rude"), TONE,
                         ids=[f"tone-{c[0]}{i}" for i, c in enumerate(TONE)])
def test_a_reply_that_scolds_the_viewer_is_not_effective(locale: str, user: str, calls: tuple[Call, ...],
                                                         warm: str, rude: str) -> None:
    good = judge_reply(user, warm, *calls, locale=locale)
    bad = judge_reply(user, rude, *calls, locale=locale)
    assert passes(good, "effectiveness"), [e for e in good.evidence if not e.ok]
    assert not passes(bad, "effectiveness"), [e for e in bad.evidence if not e.ok]
    assert passes(bad, "accuracy"), "the facts are right; only the tone is off"
