"""Numbers in words are read as digits where a unit says what they count."""

from __future__ import annotations

import pytest

from hatkit.judge.numbers import digits_for_words, zh_value


@pytest.mark.parametrize(("text", "want"), [
    ("Sixty days: it's an extended-return item", "60 days: it's an extended-return item"),
    ("Eight dollars and forty-nine cents!", "$8.49!"),
    ("Ninety-nine bucks, down from a hundred and twenty-nine dollars",
     "99 bucks, down from 129 dollars"),
    ("ships in two to six days", "ships in 2 to 6 days"),
    ("a two-day window", "a 2-day window"),
    ("no one knows, just one question", "no one knows, just one question"),
    ("还剩三件", "还剩3件"),
    ("现在二十三块二，满$40送", "现在23.2元，满$40送"),
    ("八块四毛九", "8.49元"),
    ("一到两天送达", "1到2天送达"),
    ("两三天到", "2-3天到"),
    ("八五折", "8.5折"),
    ("一般第一次买", "一般第一次买"),
    ("退货期六十天", "退货期60天"),
])
def test_counted_number_words_become_digits(text: str, want: str) -> None:
    assert digits_for_words(text) == want


def test_chinese_numerals() -> None:
    assert [zh_value(x) for x in ("二十三", "一百二十九", "两", "十五", "一二八", "三万五千")] == [
        23, 129, 2, 15, 128, 35000]
    assert zh_value("好") is None


def test_just_one_left_counts_the_stock_not_the_model_number() -> None:
    assert digits_for_words("Just one 128 GB Tab 11 left, in Storm Grey!") == (
        "Just 1 128 GB Tab 11 left, in Storm Grey!")


@pytest.mark.parametrize(("text", "want"), [
    ("it's twenty-nine twenty right now", "it's $29.20 right now"),
    ("a flat six ninety-nine", "a flat $6.99"),
    ("99 bucks, down from one twenty-nine", "99 bucks, down from $129"),
    ("twenty nine days", "29 days"),
    ("three weeks to send it back", "21 days to send it back"),
    ("phones get a full month", "phones get 30 days"),
    ("送达要一周左右", "送达要7天左右"),
])
def test_colloquial_prices_and_spans_in_days(text: str, want: str) -> None:
    assert digits_for_words(text) == want
